// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/ext/tier/cache_test.c: the tier's DRAM cache
 * (daemon/ext/tier/cache.c) over a real pool file: units cover the
 * mapping; residency is what mincore() says (none after the pages were
 * dropped, the loaded pages after a load, a load past the end clipped);
 * making room evicts the least recently used unit nobody holds, never a
 * held or loading one, and answers -EBUSY when only those are left; the
 * budget sweep measures real residency and evicts down to the budget with
 * the pages really gone (clean ones, written back first), counting a stall
 * when everything resident is held.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tfix.h"

static struct tfix f;
static struct tier t;
static pthread_mutexattr_t errcheck;

/* A failed assertion leaves t.lock held: teardown lets it go (EPERM when
 * this thread does not hold it). */
static void let_go(void)
{
	pthread_mutex_unlock(&t.lock);
}

static int setup(void **state)
{
	pthread_mutexattr_init(&errcheck);
	pthread_mutexattr_settype(&errcheck, PTHREAD_MUTEX_ERRORCHECK);
	if (tf_open(&f))
		return -1;
	memset(&t, 0, sizeof(t));
	pthread_mutex_init(&t.lock, &errcheck);
	pthread_cond_init(&t.work, NULL);
	pthread_cond_init(&t.done, NULL);
	t.r = f.r;
	t.budget = 2 * TIER_UNIT;
	return tier_cache_init(&t);
}

static int teardown(void **state)
{
	let_go();
	tier_cache_free(&t);
	assert_null(t.u);
	pthread_cond_destroy(&t.done);
	pthread_cond_destroy(&t.work);
	pthread_mutex_destroy(&t.lock);
	tf_close(&f);
	return 0;
}

/* Real bytes in every unit, on disk, none of them cached. */
static void fill_file(void)
{
	static uint8_t buf[1 << 16];
	uint64_t off;

	memset(buf, 0xa5, sizeof(buf));
	for (off = 0; off < TF_SIZE; off += sizeof(buf))
		assert_int_equal(pwrite(f.fd, buf, sizeof(buf), (off_t)off), (ssize_t)sizeof(buf));
	tf_drop(&f);
}

static void test_resident_and_load(void **state)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	assert_int_equal(t.nunits, TF_UNITS);
	fill_file();
	/* no read-around: only what is loaded becomes resident */
	assert_int_equal(madvise(f.base, TF_SIZE, MADV_RANDOM), 0);
	assert_int_equal(tier_resident(&t, 0, TF_SIZE), 0);
	assert_int_equal(tier_load(&t, TIER_UNIT + 10, 3 * pg, 0), 0);
	assert_true(tier_resident(&t, TIER_UNIT, TIER_UNIT) >= 3 * pg);
	assert_true(tf_resident(&f, TIER_UNIT, 3 * pg) == 3 * pg);
	assert_int_equal(tier_resident(&t, 3 * TIER_UNIT, TIER_UNIT), 0);
	/* clipped at the end of the mapping; nothing to do past it */
	assert_int_equal(tier_load(&t, TF_SIZE - pg, 1 << 20, 1), 0);
	assert_int_equal(tf_resident(&f, TF_SIZE - pg, pg), pg);
	assert_int_equal(tier_load(&t, TF_SIZE + pg, pg, 0), 0);
	assert_int_equal(tier_resident(&t, TF_SIZE - pg, 1 << 20), pg);
}

static void unit(uint32_t i, uint32_t bytes, uint64_t used, uint32_t holds, uint8_t st)
{
	t.u[i] = (struct unit){ .state = st, .bytes = bytes, .used = used, .holds = holds };
	t.resident += bytes;
}

static void test_make_room(void **state)
{
	pthread_mutex_lock(&t.lock);
	unit(0, TIER_UNIT, 5, 0, U_WARM);
	unit(1, TIER_UNIT, 1, 0, U_WARM);	/* least recently used */
	unit(2, TIER_UNIT, 0, 1, U_WARM);	/* held */
	unit(3, TIER_UNIT, 0, 0, U_LOADING);	/* being loaded */
	t.budget = 3 * TIER_UNIT;
	assert_int_equal(tier_make_room(&t, 0), 0);
	assert_int_equal(t.u[1].bytes, 0);
	assert_int_equal(t.u[1].state, U_COLD);
	assert_int_equal(t.u[0].bytes, TIER_UNIT);
	assert_int_equal(t.resident, 3 * TIER_UNIT);
	assert_int_equal(t.evicted_bytes, TIER_UNIT);
	assert_int_equal(tier_make_room(&t, TIER_UNIT), 0);	/* unit 0 goes */
	assert_int_equal(t.u[0].bytes, 0);
	assert_int_equal(t.resident, 2 * TIER_UNIT);
	/* only the held and the loading unit are left */
	assert_int_equal(tier_make_room(&t, 2 * TIER_UNIT), -EBUSY);
	assert_int_equal(t.u[2].bytes, TIER_UNIT);
	assert_int_equal(t.u[3].bytes, TIER_UNIT);
	assert_int_equal(tier_make_room(&t, TIER_UNIT), 0);	/* fits */
	pthread_mutex_unlock(&t.lock);
}

static void test_hold_budget(void **state)
{
	uint32_t i;

	fill_file();
	assert_int_equal(tier_load(&t, 0, TF_SIZE, 0), 0);
	assert_int_equal(tf_resident(&f, 0, TF_SIZE), TF_SIZE);
	pthread_mutex_lock(&t.lock);
	for (i = 0; i < TF_UNITS; i++)
		t.u[i].used = i + 1;	/* unit 0 is the coldest */
	tier_hold_budget(&t);
	assert_true(t.resident <= t.budget);
	assert_int_equal(t.evicted_bytes, 2 * TIER_UNIT);
	assert_int_equal(t.u[0].bytes, 0);
	assert_int_equal(t.u[1].bytes, 0);
	assert_int_equal(t.u[3].bytes, TIER_UNIT);
	assert_int_equal(t.stalls, 0);
	pthread_mutex_unlock(&t.lock);
	/* the pages are really gone */
	assert_int_equal(tf_resident(&f, 0, 2 * TIER_UNIT), 0);
	assert_int_equal(tf_resident(&f, 2 * TIER_UNIT, 2 * TIER_UNIT), 2 * TIER_UNIT);
	/* everything resident held, over a smaller budget: a stall, no eviction */
	pthread_mutex_lock(&t.lock);
	t.u[2].holds = t.u[3].holds = 1;
	t.budget = TIER_UNIT;
	tier_hold_budget(&t);
	assert_int_equal(t.stalls, 1);
	assert_int_equal(t.evicted_bytes, 2 * TIER_UNIT);
	pthread_mutex_unlock(&t.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_resident_and_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_make_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_budget, setup, teardown),
	};

	return cmocka_run_group_tests_name("tier/cache", tests, NULL, NULL);
}
