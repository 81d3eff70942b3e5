/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/dattr_test.c: fs/dattr.c, the directory attributes marufs
 * answers GETATTR with: nothing kept or served while the event stream is
 * down; an answer kept only if its slot's generation did not move since
 * the request was sent, and never one older (by ctime) than what is kept;
 * a change drops it; entries expire after the mount's attr_timeout; files
 * are never kept; a table of NULL is empty.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "dattr.h"

static struct maru_attr dir(uint64_t ino, uint64_t size, long ctime)
{
	struct maru_attr a;

	memset(&a, 0, sizeof(a));
	a.ino = ino;
	a.size = size;
	a.mode = S_IFDIR | 0755;
	a.state = MARU_STATE_DIR;
	a.ctime.tv_sec = a.mtime.tv_sec = ctime;
	return a;
}

static void test_put_get(void **state)
{
	struct maru_attr a = dir(7, 3, 100), got;
	struct dattr *da;
	uint64_t g;

	(void)state;
	assert_int_equal(dattr_new(30, &da), 0);
	g = dattr_gen(da, 7);
	dattr_put(da, &a, g);
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);	/* stream down */
	dattr_stream(da, 1);
	dattr_put(da, &a, g);		/* the stream came up after g: refused */
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);
	g = dattr_gen(da, 7);
	dattr_put(da, &a, g);
	assert_int_equal(dattr_get(da, 7, &got), 0);
	assert_int_equal(got.size, 3);
	assert_int_equal(dattr_get(da, 8, &got), -ENOENT);
	/* newer replaces, older does not */
	a = dir(7, 4, 101);
	dattr_put(da, &a, g);
	a = dir(7, 2, 99);
	dattr_put(da, &a, g);
	assert_int_equal(dattr_get(da, 7, &got), 0);
	assert_int_equal(got.size, 4);
	/* a file's attributes are never kept */
	a = dir(9, 1, 1);
	a.state = MARU_STATE_PUBLISHED;
	a.mode = S_IFREG | 0644;
	dattr_put(da, &a, dattr_gen(da, 9));
	assert_int_equal(dattr_get(da, 9, &got), -ENOENT);
	dattr_free(da);
}

static void test_changed(void **state)
{
	struct maru_attr a = dir(7, 3, 100), got;
	struct dattr *da;
	uint64_t g;

	(void)state;
	assert_int_equal(dattr_new(30, &da), 0);
	dattr_stream(da, 1);
	g = dattr_gen(da, 7);
	dattr_put(da, &a, g);
	dattr_changed(da, 7);
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);
	/* an answer to a request sent before the change is refused */
	dattr_put(da, &a, g);
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);
	g = dattr_gen(da, 7);
	dattr_put(da, &a, g);
	assert_int_equal(dattr_get(da, 7, &got), 0);
	/* the stream went down: nothing kept, nothing stored */
	dattr_stream(da, 0);
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);
	dattr_put(da, &a, dattr_gen(da, 7));
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);
	dattr_free(da);
}

static void test_expiry_and_null(void **state)
{
	struct maru_attr a = dir(7, 3, 100), got;
	struct dattr *da;

	(void)state;
	assert_int_equal(dattr_new(0.05, &da), 0);
	dattr_stream(da, 1);
	dattr_put(da, &a, dattr_gen(da, 7));
	assert_int_equal(dattr_get(da, 7, &got), 0);
	usleep(80000);
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);
	dattr_free(da);
	/* attr_timeout 0: nothing is kept */
	assert_int_equal(dattr_new(0, &da), 0);
	dattr_stream(da, 1);
	dattr_put(da, &a, dattr_gen(da, 7));
	assert_int_equal(dattr_get(da, 7, &got), -ENOENT);
	dattr_free(da);
	/* no table: empty, and nothing breaks */
	dattr_put(NULL, &a, dattr_gen(NULL, 7));
	dattr_changed(NULL, 7);
	dattr_stream(NULL, 1);
	assert_int_equal(dattr_get(NULL, 7, &got), -ENOENT);
	dattr_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_changed),
		cmocka_unit_test(test_expiry_and_null),
	};

	return cmocka_run_group_tests_name("dattr", tests, NULL, NULL);
}
