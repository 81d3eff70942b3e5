// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/lookup_hints_test.c: hints from lookups (fs/lookup_hints.c)
 * with maru_hint recorded (hintrec.c) behind a real hint queue: the first
 * lookups of names in one directory become one read hint of their files
 * (a name looked up again within the window is not repeated; another
 * directory is another batch and request id); the first open of one of
 * its files promotes the batch once; once every file was opened and
 * released the batch ends with read_end, and a released name hints
 * again; lh off (NULL) does nothing; freeing ends the open batches.
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

#include "fake.h"
#include "hintrec.h"
#include "hints.h"

static struct mfs m;
static struct hintrec got[HINTREC_MAX];

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	hintrec_reset(0);
	if (hintq_new(&m, &m.hq) || hintq_start(m.hq) || lookup_hints_new(&m, &m.lh))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	lookup_hints_free(m.lh);
	m.lh = NULL;
	hintq_free(m.hq);
	m.hq = NULL;
	fake_unmount(&m);
	return 0;
}

/* Wait until at least want hints were sent (at most 5 s); how many. */
static size_t sent(size_t want)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	size_t n = 0;
	int i;

	for (i = 0; i < 1000; i++) {
		hintq_drain(m.hq, 100);
		n = hintrec_get(got, HINTREC_MAX);
		if (n >= want)
			break;
		nanosleep(&ts, NULL);
	}
	return n;
}

/*
 * Two names of directory 1 and one of directory 7, the first repeated:
 * 1 when they went out as the two batches expected. Batches gather for
 * a few ms, so a test thread preempted that long between two lookups
 * sees them split: the caller starts over then.
 */
static int two_batches(void)
{
	lookup_hints_seen(&m, 1, "a", 101);
	lookup_hints_seen(&m, 1, "b", 102);
	lookup_hints_seen(&m, 1, "a", 101);	/* within the window: once */
	lookup_hints_seen(&m, 7, "z", 701);	/* another directory */
	if (sent(2) != 2 || (got[0].n != 2 && got[1].n != 2))
		return 0;
	if (got[0].ino[0] == 701) {	/* the two batches, in either order */
		struct hintrec t = got[0];

		got[0] = got[1];
		got[1] = t;
	}
	return 1;
}

static void test_batch_lifecycle(void **state)
{
	struct hint_counters c0, c;
	int tries;

	for (tries = 0; tries < 5; tries++) {
		hintq_counters(m.hq, &c0);
		if (two_batches())
			break;
		lookup_hints_free(m.lh);
		hintq_drain(m.hq, 1000);
		hintrec_reset(0);
		assert_int_equal(lookup_hints_new(&m, &m.lh), 0);
	}
	assert_true(tries < 5);
	assert_int_equal(got[0].action, MARU_HINT_READ);
	assert_int_equal(got[0].n, 2);
	assert_int_equal(got[0].ino[0], 101);
	assert_int_equal(got[0].ino[1], 102);
	assert_int_equal(got[1].n, 1);
	assert_int_equal(got[1].ino[0], 701);
	assert_string_not_equal(got[0].req, got[1].req);
	assert_int_equal(got[0].req[0], 'L');
	hintq_counters(m.hq, &c);
	assert_int_equal(c.lookup_hints - c0.lookup_hints, 3);
	assert_int_equal(c.lookup_batches - c0.lookup_batches, 2);

	hintrec_reset(0);
	lookup_hints_opened(&m, 101);
	lookup_hints_opened(&m, 102);		/* promoted already */
	lookup_hints_opened(&m, 999);		/* in no batch */
	assert_int_equal(sent(1), 1);
	assert_int_equal(got[0].action, MARU_HINT_PROMOTE);
	lookup_hints_released(&m, 101);
	assert_int_equal(sent(1), 1);		/* 102 still open */
	lookup_hints_released(&m, 102);
	assert_int_equal(sent(2), 2);
	assert_int_equal(got[1].action, MARU_HINT_READ_END);
	assert_int_equal(got[1].n, 0);
	/* a loaded file's name hints again, in a new batch */
	lookup_hints_seen(&m, 1, "a", 101);
	assert_int_equal(sent(3), 3);
	assert_int_equal(got[2].action, MARU_HINT_READ);
	assert_int_equal(got[2].ino[0], 101);
	hintq_counters(m.hq, &c);
	assert_int_equal(c.lookup_batches - c0.lookup_batches, 3);
}

static void test_free_ends_open_batches(void **state)
{
	lookup_hints_seen(&m, 1, "a", 101);
	assert_int_equal(sent(1), 1);
	lookup_hints_free(m.lh);
	m.lh = NULL;
	assert_int_equal(sent(2), 2);
	assert_int_equal(got[1].action, MARU_HINT_READ_END);
	assert_string_equal(got[1].req, got[0].req);
	/* off: the calls do nothing */
	lookup_hints_seen(&m, 1, "b", 102);
	lookup_hints_opened(&m, 101);
	lookup_hints_released(&m, 101);
	hintq_drain(m.hq, 100);
	assert_int_equal(hintrec_get(got, HINTREC_MAX), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_batch_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_ends_open_batches, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/lookup_hints", tests, NULL, NULL);
}
