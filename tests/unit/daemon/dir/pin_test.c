/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/pin_test.c: TTL pins in the directory
 * (daemon/dir/pinver.c, lru.c, node.c): a pinned version is off the LRU and
 * not evictable, so pool pressure evicts around it; the pool cap refuses
 * with -ENOSPC and evicts no pin; what may be pinned (-EISDIR, -EBUSY,
 * -EINVAL, -ENOENT, -ESTALE); 0 unpins and the version rejoins the LRU;
 * the pin belongs to the version (a rename keeps it, a replace or unlink
 * ends it); a pin that ran out is found lazily and its version is the next
 * to go. dir_check() runs after each step (the pin flag agrees with the
 * table, pinned bytes are not counted evictable).
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

#include "fixture.h"

#define FILE_BLKS	4

static void open_pins(struct fx *f, uint64_t cap_blocks, uint32_t max_s)
{
	struct dir_opts lim = { .pin_max_bytes = cap_blocks * BLK, .pin_max_seconds = max_s };

	fx_open_limits(f, 16, DIR_EVICT_LRU, 0, &lim);
}

static uint64_t ino_of(struct fx *f, const char *name)
{
	struct dir_attr at;

	assert_int_equal(lookup(f, NULL, ROOT, name, &at), 0);
	return at.ino;
}

static void put(struct fx *f, const char *name)
{
	put_sized(f, f->s1, ROOT, name, FILE_BLKS * BLK);
}

static void test_pressure_evicts_around_a_pin(void **state)
{
	struct fx f;
	struct dir_stats st;
	uint32_t left = 0;
	char name[16];
	int i;

	open_pins(&f, 8, 100);
	put(&f, "a");
	put(&f, "b");
	assert_int_equal(dir_pin(f.d, ino_of(&f, "a"), 50, 0, &left), 0);
	assert_int_equal(left, 50);
	st = stats(&f);
	assert_true(st.pins == 1 && st.pinned_bytes == FILE_BLKS * BLK);
	assert_true(st.evictable == FILE_BLKS * BLK);	/* b only */
	assert_int_equal(dir_check(f.d), 0);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		put(&f, name);
	}
	assert_int_equal(lookup(&f, NULL, ROOT, "a", NULL), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "b", NULL), -ENOENT);
	assert_true(stats(&f).evictions >= 1);
	assert_int_equal(dir_pin_left(f.d, ino_of(&f, "a"), &left), 0);
	assert_true(left >= 49 && left <= 50);
	fx_close(&f);
}

static void test_cap_refuses_and_keeps_the_other_pin(void **state)
{
	struct fx f;
	uint32_t left;

	open_pins(&f, 6, 0);
	put(&f, "a");
	put(&f, "b");
	assert_int_equal(dir_pin(f.d, ino_of(&f, "a"), 30, 0, &left), 0);
	assert_int_equal(dir_pin(f.d, ino_of(&f, "b"), 30, 0, &left), -ENOSPC);
	assert_int_equal(dir_pin_left(f.d, ino_of(&f, "b"), &left), 0);
	assert_int_equal(left, 0);
	assert_int_equal(dir_pin_left(f.d, ino_of(&f, "a"), &left), 0);
	assert_int_equal(left, 30);
	assert_int_equal(stats(&f).pin_refused, 1);
	/* unpinning makes room; the unpinned version is evictable again */
	assert_int_equal(dir_pin(f.d, ino_of(&f, "a"), 0, 0, &left), 0);
	assert_int_equal(left, 0);
	assert_true(stats(&f).evictable == 2 * FILE_BLKS * BLK);
	assert_int_equal(dir_pin(f.d, ino_of(&f, "b"), 30, 0, NULL), 0);
	/* unpinning what has no pin is fine */
	assert_int_equal(dir_pin(f.d, ino_of(&f, "a"), 0, 0, NULL), 0);
	assert_int_equal(dir_check(f.d), 0);
	fx_close(&f);
}

static void test_what_may_be_pinned(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t pend, d, old;

	open_pins(&f, 8, 0);
	d = do_mkdir(&f, ROOT, "d");
	assert_int_equal(dir_pin(f.d, d, 5, 0, NULL), -EISDIR);
	assert_int_equal(dir_pin(f.d, 999999, 5, 0, NULL), -ENOENT);
	pend = do_create(&f, f.s1, ROOT, "w", 0, BLK);
	assert_int_equal(dir_pin(f.d, pend, 5, 0, NULL), -EBUSY);
	assert_int_equal(dir_abandon(f.d, f.s1, pend), 0);
	assert_int_equal(dir_symlink(f.d, f.s1, ROOT, "l", 1, "x", 1, 0, 0, &at), 0);
	assert_int_equal(dir_pin(f.d, at.ino, 5, 0, NULL), -EINVAL);
	/* replaced while leased: orphaned, no longer pinnable */
	put(&f, "a");
	old = ino_of(&f, "a");
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "a", 1, 0, &at), 0);
	put(&f, "a");
	assert_int_equal(dir_pin(f.d, old, 5, 0, NULL), -ESTALE);
	assert_int_equal(dir_release(f.d, f.s2, old), 0);
	fx_close(&f);
}

static void test_pin_belongs_to_the_version(void **state)
{
	struct fx f;
	uint32_t left;
	uint64_t a;

	open_pins(&f, 8, 0);
	put(&f, "a");
	a = ino_of(&f, "a");
	assert_int_equal(dir_pin(f.d, a, 40, 0, NULL), 0);
	assert_int_equal(dir_rename(f.d, f.s1, ROOT, "a", 1, ROOT, "b", 1, 0), 0);
	assert_int_equal(dir_pin_left(f.d, ino_of(&f, "b"), &left), 0);
	assert_int_equal(left, 40);
	assert_int_equal(dir_check(f.d), 0);
	/* a new version under the name: unpinned, and the old pin is gone */
	put(&f, "b");
	assert_true(ino_of(&f, "b") != a);
	assert_int_equal(dir_pin_left(f.d, ino_of(&f, "b"), &left), 0);
	assert_int_equal(left, 0);
	assert_true(stats(&f).pins == 0 && stats(&f).pinned_bytes == 0);
	/* unlink ends a pin too */
	assert_int_equal(dir_pin(f.d, ino_of(&f, "b"), 40, 0, NULL), 0);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "b", 1), 0);
	assert_true(stats(&f).pins == 0);
	assert_int_equal(dir_check(f.d), 0);
	fx_close(&f);
}

static void test_expiry_is_lazy_and_first_in_line(void **state)
{
	struct timespec nap = { 1, 100 * 1000 * 1000 };
	struct fx f;
	struct dir_stats st;
	uint32_t left;
	char name[16];
	int i;

	open_pins(&f, 8, 0);
	put(&f, "a");
	put(&f, "b");
	assert_int_equal(dir_pin(f.d, ino_of(&f, "a"), 1, 0, NULL), 0);
	nanosleep(&nap, NULL);
	/* nothing ran at the deadline; stats, a pin call or eviction find it */
	assert_int_equal(dir_pin_left(f.d, ino_of(&f, "a"), &left), 0);
	assert_int_equal(left, 0);
	st = stats(&f);
	assert_true(st.pins == 0 && st.pin_expired == 1);
	assert_true(st.evictable == 2 * FILE_BLKS * BLK);
	assert_int_equal(dir_check(f.d), 0);
	/* a was older in pin than b in LRU age, but it rejoined at the head */
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		put(&f, name);
	}
	put(&f, "c");	/* 16 blocks: the fifth file evicts one */
	assert_int_equal(lookup(&f, NULL, ROOT, "a", NULL), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "b", NULL), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure_evicts_around_a_pin),
		cmocka_unit_test(test_cap_refuses_and_keeps_the_other_pin),
		cmocka_unit_test(test_what_may_be_pinned),
		cmocka_unit_test(test_pin_belongs_to_the_version),
		cmocka_unit_test(test_expiry_is_lazy_and_first_in_line),
	};

	return cmocka_run_group_tests_name("dir_pin", tests, NULL, NULL);
}
