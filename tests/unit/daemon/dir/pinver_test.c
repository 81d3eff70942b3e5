/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/pinver_test.c: the directory's side of TTL pins
 * (daemon/dir/pinver.c) over the dir tests' fixture (a real directory on
 * a malloc'd pool, no journal). pin_test.c covers eviction around pins and
 * what may be pinned; this covers the rest of what pinver.c promises: a
 * new pin is a new deadline (longer or shorter), dir_pin_left's answers,
 * the per-tenant caps and byte counts, and the JR_PIN replay (a deadline
 * carried as wall-clock time, one already past applying as nothing, the
 * caps of this start applying, 0 unpinning). fx_close() runs dir_check(),
 * which checks each version's pin flag against the table and the LRU.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "dir_priv.h"
#include "fixture.h"
#include "journal.h"
#include "persist.h"

#define FILE_BLKS	2
#define TENANT_T	77	/* a tenant is its root's id; any id will do here */
#define TENANT_U	78

static void open_pins(struct fx *f, uint32_t max_s)
{
	struct dir_opts lim = { .pin_max_bytes = 12 * BLK, .pin_max_seconds = max_s };

	fx_open_limits(f, 16, DIR_EVICT_LRU, 0, &lim);
}

static uint64_t put(struct fx *f, const char *name)
{
	struct dir_attr at;

	put_sized(f, f->s1, ROOT, name, FILE_BLKS * BLK);
	assert_int_equal(lookup(f, NULL, ROOT, name, &at), 0);
	return at.ino;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t left_of(struct fx *f, uint64_t ino)
{
	uint32_t left = 12345;

	assert_int_equal(dir_pin_left(f->d, ino, &left), 0);
	return left;
}

/* A pin again is a new deadline, shorter as well as longer; 0 unpins. */
static void test_new_deadline(void **state)
{
	struct fx f;
	uint32_t left = 0;
	uint64_t a, d;

	(void)state;
	open_pins(&f, 0);
	a = put(&f, "a");
	assert_int_equal(left_of(&f, a), 0);	/* never pinned */
	assert_int_equal(dir_pin(f.d, a, 100, 0, &left), 0);
	assert_int_equal(left, 100);
	assert_int_equal(dir_pin(f.d, a, 10, 0, &left), 0);
	assert_int_equal(left, 10);
	assert_true(left_of(&f, a) >= 9 && left_of(&f, a) <= 10);
	assert_int_equal(dir_pin(f.d, a, 500, 0, NULL), 0);	/* left may be NULL */
	assert_true(left_of(&f, a) >= 499);
	assert_int_equal(stats(&f).pins, 1);
	assert_int_equal(stats(&f).pinned_bytes, FILE_BLKS * BLK);
	left = 7;
	assert_int_equal(dir_pin(f.d, a, 0, 0, &left), 0);
	assert_int_equal(left, 0);
	assert_int_equal(left_of(&f, a), 0);
	assert_int_equal(stats(&f).pins, 0);
	/* dir_pin_left: a directory, an id that does not exist */
	d = do_mkdir(&f, ROOT, "d");
	assert_int_equal(dir_pin_left(f.d, d, &left), -EISDIR);
	assert_int_equal(dir_pin_left(f.d, 999999, &left), -ENOENT);
	fx_close(&f);
}

/* pin-max-seconds clamps the seconds asked. */
static void test_clamped(void **state)
{
	struct fx f;
	uint32_t left = 0;
	uint64_t a;

	(void)state;
	open_pins(&f, 30);
	a = put(&f, "a");
	assert_int_equal(dir_pin(f.d, a, 3600, 0, &left), 0);
	assert_int_equal(left, 30);
	fx_close(&f);
}

/* A tenant's cap refuses its pins over it, not another tenant's. */
static void test_tenant_cap(void **state)
{
	struct fx f;
	uint64_t a, b, c;

	(void)state;
	open_pins(&f, 0);
	a = put(&f, "a");
	b = put(&f, "b");
	c = put(&f, "c");
	assert_int_equal(dir_pin_tenant_cap(f.d, TENANT_T, FILE_BLKS * BLK), 0);
	assert_int_equal(dir_pin(f.d, a, 60, TENANT_T, NULL), 0);
	assert_int_equal(dir_pin_tenant_bytes(f.d, TENANT_T), FILE_BLKS * BLK);
	assert_int_equal(dir_pin(f.d, b, 60, TENANT_T, NULL), -ENOSPC);
	assert_int_equal(left_of(&f, b), 0);
	assert_int_equal(stats(&f).pin_refused, 1);
	assert_int_equal(dir_pin(f.d, c, 60, TENANT_U, NULL), 0);	/* no cap */
	assert_int_equal(dir_pin_tenant_bytes(f.d, TENANT_U), FILE_BLKS * BLK);
	assert_int_equal(dir_pin_tenant_bytes(f.d, TENANT_T), FILE_BLKS * BLK);
	/* unpinned: the tenant's bytes go back; a cap of 0 lifts it */
	assert_int_equal(dir_pin(f.d, a, 0, 0, NULL), 0);
	assert_int_equal(dir_pin_tenant_bytes(f.d, TENANT_T), 0);
	assert_int_equal(dir_pin_tenant_cap(f.d, TENANT_T, 0), 0);
	assert_int_equal(dir_pin(f.d, a, 60, TENANT_T, NULL), 0);
	assert_int_equal(dir_pin(f.d, b, 60, TENANT_T, NULL), 0);
	assert_int_equal(dir_pin_tenant_bytes(f.d, TENANT_T), 2 * FILE_BLKS * BLK);
	fx_close(&f);
}

static int replay(struct fx *f, uint64_t id, uint64_t until, uint64_t tenant)
{
	struct persist_item it;
	int rc;

	memset(&it, 0, sizeof(it));
	it.type = JR_PIN;
	it.id = id;
	it.until = until;
	it.tenant = tenant;
	pthread_mutex_lock(&f->d->lock);
	rc = dir_pin_replay(f->d, &it);
	pthread_mutex_unlock(&f->d->lock);
	return rc;
}

/* JR_PIN replayed: the wall-clock deadline, never extended by a restart. */
static void test_replay(void **state)
{
	struct fx f;
	uint64_t a, b, pend, now = wall_ns();
	uint32_t left;

	(void)state;
	open_pins(&f, 0);
	a = put(&f, "a");
	b = put(&f, "b");
	assert_int_equal(replay(&f, a, now + 60 * 1000000000ull, TENANT_T), 0);
	left = left_of(&f, a);
	assert_true(left >= 59 && left <= 60);
	assert_int_equal(dir_pin_tenant_bytes(f.d, TENANT_T), FILE_BLKS * BLK);
	assert_int_equal(stats(&f).evictable, FILE_BLKS * BLK);	/* b only: a off the LRU */
	assert_int_equal(dir_check(f.d), 0);
	/* until 0: unpinned, back on the LRU */
	assert_int_equal(replay(&f, a, 0, 0), 0);
	assert_int_equal(left_of(&f, a), 0);
	assert_int_equal(stats(&f).evictable, 2 * FILE_BLKS * BLK);
	/* a deadline already past: nothing */
	assert_int_equal(replay(&f, b, now - 1000000000ull, 0), 0);
	assert_int_equal(left_of(&f, b), 0);
	assert_int_equal(stats(&f).pins, 0);
	/* this start's caps: a pin over the tenant's cap does not come back */
	assert_int_equal(dir_pin_tenant_cap(f.d, TENANT_T, BLK), 0);
	assert_int_equal(replay(&f, b, now + 60 * 1000000000ull, TENANT_T), -ENOSPC);
	assert_int_equal(left_of(&f, b), 0);
	/* what may not be pinned, as dir_pin says */
	assert_int_equal(replay(&f, 999999, now + 1000000000ull, 0), -ENOENT);
	assert_int_equal(replay(&f, ROOT, now + 1000000000ull, 0), -EISDIR);
	pend = do_create(&f, f.s1, ROOT, "w", 0, BLK);
	assert_int_equal(replay(&f, pend, now + 1000000000ull, 0), -EBUSY);
	assert_int_equal(dir_abandon(f.d, f.s1, pend), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_deadline),
		cmocka_unit_test(test_clamped),
		cmocka_unit_test(test_tenant_cap),
		cmocka_unit_test(test_replay),
	};

	return cmocka_run_group_tests_name("dir_pinver", tests, NULL, NULL);
}
