/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/lcache_test.c: fs/lcache.c, the leases of small files
 * closed lately: a kept lease is handed to one open of its inode, never one
 * of another pool epoch, a pending version or a file over the size limit is
 * closed at once, the byte budget drops the oldest first, a newer lease of
 * an inode replaces the older, and drop, drop_all and a NULL cache close
 * what they are given.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fake.h"
#include "lcache.h"

static struct lcache *lc;

static int setup(void **state)
{
	fake_reset();
	assert_int_equal(lcache_new(&lc), 0);
	lcache_set_budget(lc, 1 << 30);
	return 0;
}

static int teardown(void **state)
{
	lcache_free(lc);
	lc = NULL;
	assert_int_equal(fk.files_open, 0);
	return 0;
}

static void test_put_take(void **state)
{
	uint64_t ino = fake_publish(1, "a", "abcd");
	struct maru_file *f = fake_lease(ino);

	lcache_put(lc, ino, 7, f);
	assert_int_equal(lcache_count(lc), 1);
	assert_int_equal(fk.closes, 0);
	assert_ptr_equal(lcache_take(lc, ino, 7), f);
	assert_null(lcache_take(lc, ino, 7));	/* one open takes it */
	assert_int_equal(lcache_count(lc), 0);
	maru_file_close(f);
}

static void test_other_epoch(void **state)
{
	uint64_t ino = fake_publish(1, "a", "abcd");

	lcache_put(lc, ino, 1, fake_lease(ino));
	assert_null(lcache_take(lc, ino, 2));	/* a new pool generation */
	assert_int_equal(fk.closes, 1);
	assert_null(lcache_take(lc, ino, 1));
}

static void test_not_kept(void **state)
{
	uint64_t big = fake_publish(1, "big", "x"), ino;
	struct maru_file *p;

	fake_ver(big)->size = 1 << 20;	/* over the small-file limit */
	lcache_put(lc, big, 1, fake_lease(big));
	assert_int_equal(fk.closes, 1);
	/* a pending version is nobody's lease */
	assert_int_equal(maru_file_create(NULL, 1, "new", 0644, 0, 0, 0, 0, &p), 0);
	ino = maru_file_ino(p);
	lcache_put(lc, ino, 1, p);
	assert_int_equal(fk.closes, 2);
	assert_int_equal(lcache_count(lc), 0);
	/* no cache: closed at once */
	ino = fake_publish(1, "c", "c");
	lcache_put(NULL, ino, 1, fake_lease(ino));
	assert_int_equal(fk.closes, 3);
	assert_null(lcache_take(NULL, ino, 1));
}

static void test_budget_oldest_first(void **state)
{
	uint64_t a = fake_publish(1, "a", "x"), b = fake_publish(1, "b", "x");
	uint64_t c = fake_publish(1, "c", "x");
	struct maru_file *f;

	fake_ver(a)->size = fake_ver(b)->size = fake_ver(c)->size = 4096;
	lcache_set_budget(lc, 32 * 8192);	/* 8192 bytes kept at most */
	lcache_put(lc, a, 1, fake_lease(a));
	lcache_put(lc, b, 1, fake_lease(b));
	lcache_put(lc, c, 1, fake_lease(c));
	assert_int_equal(lcache_count(lc), 2);
	assert_int_equal(fk.closes, 1);
	assert_null(lcache_take(lc, a, 1));	/* the oldest went */
	f = lcache_take(lc, c, 1);
	assert_non_null(f);
	maru_file_close(f);
}

static void test_replace_drop(void **state)
{
	uint64_t a = fake_publish(1, "a", "x"), b = fake_publish(1, "b", "y");
	struct maru_file *f1 = fake_lease(a), *f2 = fake_lease(a);

	lcache_put(lc, a, 1, f1);
	lcache_put(lc, a, 1, f2);	/* the newer replaces the older */
	assert_int_equal(fk.closes, 1);
	assert_int_equal(lcache_count(lc), 1);
	lcache_drop(lc, a);
	assert_int_equal(fk.closes, 2);
	lcache_drop(lc, a);		/* nothing kept: nothing closed */
	assert_int_equal(fk.closes, 2);
	lcache_put(lc, a, 1, fake_lease(a));
	lcache_put(lc, b, 1, fake_lease(b));
	lcache_expire(lc);		/* not old yet */
	assert_int_equal(lcache_count(lc), 2);
	lcache_drop_all(lc);
	assert_int_equal(lcache_count(lc), 0);
	assert_int_equal(fk.closes, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_take, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_oldest_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace_drop, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
