/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/attr_test.c: the shared translations of lib/attr.c: which
 * names attr_name_check() lets reach the wire (and the length it reports), and
 * every field of a proto_attr carried into a maru_attr, times split into
 * seconds and nanoseconds, and a caller's struct maru_setattr taken as far
 * as its sa_size says (0: all of it), the rest zero.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "attr.h"

static void test_name_check(void **state)
{
	char longest[PROTO_NAME_MAX + 2];
	size_t n = 0;

	(void)state;
	assert_int_equal(attr_name_check("chunk-0001", &n), 0);
	assert_int_equal(n, 10);
	assert_int_equal(attr_name_check("...", &n), 0);
	assert_int_equal(n, 3);
	memset(longest, 'a', sizeof(longest));
	longest[PROTO_NAME_MAX] = '\0';
	assert_int_equal(attr_name_check(longest, &n), 0);
	assert_int_equal(n, PROTO_NAME_MAX);
	longest[PROTO_NAME_MAX] = 'a';
	longest[PROTO_NAME_MAX + 1] = '\0';
	n = 7;
	assert_int_equal(attr_name_check(longest, &n), -ENAMETOOLONG);
	assert_int_equal(n, 7);		/* untouched on failure */
	assert_int_equal(attr_name_check(NULL, &n), -EINVAL);
	assert_int_equal(attr_name_check("", &n), -EINVAL);
	assert_int_equal(attr_name_check(".", &n), -EINVAL);
	assert_int_equal(attr_name_check("..", &n), -EINVAL);
	assert_int_equal(attr_name_check("a/b", &n), -EINVAL);
	assert_int_equal(attr_name_check("/", &n), -EINVAL);
}

static void test_attr_from_proto(void **state)
{
	struct proto_attr p = {
		.ino = 11, .parent = 1, .size = 4096, .reserved = 8192,
		.atime_ns = 1500000000ULL * 1000000000ULL + 1,
		.mtime_ns = 2000000123ULL, .ctime_ns = 999999999ULL,
		.xxh3 = 0xfeedULL, .mode = S_IFREG | 0640, .uid = 5, .gid = 6,
		.nlink = 1, .state = MARU_STATE_PUBLISHED, .leases = 3,
		.nextents = 9,
	};
	struct maru_attr a;

	(void)state;
	memset(&a, 0xff, sizeof(a));
	attr_from_proto(&p, &a);
	assert_int_equal(a.ino, 11);
	assert_int_equal(a.parent, 1);
	assert_int_equal(a.size, 4096);
	assert_int_equal(a.reserved, 8192);
	assert_int_equal(a.mode, S_IFREG | 0640);
	assert_int_equal(a.uid, 5);
	assert_int_equal(a.gid, 6);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(a.state, MARU_STATE_PUBLISHED);
	assert_int_equal(a.leases, 3);
	assert_int_equal(a.xxh3, 0xfeed);
	assert_int_equal(a.atime.tv_sec, 1500000000);
	assert_int_equal(a.atime.tv_nsec, 1);
	assert_int_equal(a.mtime.tv_sec, 2);
	assert_int_equal(a.mtime.tv_nsec, 123);
	assert_int_equal(a.ctime.tv_sec, 0);
	assert_int_equal(a.ctime.tv_nsec, 999999999);
}

static void test_setattr_in(void **state)
{
	struct maru_setattr in = { .mask = MARU_SET_MODE | MARU_SET_MTIME, .mode = 0600,
				   .uid = 5, .gid = 6, .mtime = { 9, 10 } };
	struct maru_setattr out;

	(void)state;
	/* 0: this header's layout, all of it */
	memset(&out, 0xee, sizeof(out));
	assert_int_equal(attr_setattr_in(&in, &out), 0);
	assert_int_equal(out.sa_size, sizeof(out));
	assert_int_equal(out.mask, in.mask);
	assert_int_equal(out.mode, 0600);
	assert_int_equal(out.gid, 6);
	assert_int_equal(out.mtime.tv_nsec, 10);
	/* a caller whose struct ends after gid: the times it lacks are zero */
	in.sa_size = offsetof(struct maru_setattr, atime);
	memset(&out, 0xee, sizeof(out));
	assert_int_equal(attr_setattr_in(&in, &out), 0);
	assert_int_equal(out.gid, 6);
	assert_int_equal(out.mtime.tv_sec, 0);
	assert_int_equal(out.mtime.tv_nsec, 0);
	/* a larger, newer struct: what this library knows */
	in.sa_size = sizeof(in) + 64;
	assert_int_equal(attr_setattr_in(&in, &out), 0);
	assert_int_equal(out.mtime.tv_sec, 9);
	/* too small to hold the mask */
	in.sa_size = offsetof(struct maru_setattr, mask);
	assert_int_equal(attr_setattr_in(&in, &out), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_check),
		cmocka_unit_test(test_attr_from_proto),
		cmocka_unit_test(test_setattr_in),
	};

	return cmocka_run_group_tests_name("attr", tests, NULL, NULL);
}
