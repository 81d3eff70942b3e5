/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/parse_test.c: size and number parsing at their edges
 * (common/parse.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "maru/libmaru.h"
#include "superblock.h"
#include "addr.h"
#include "clock.h"
#include "hash.h"
#include "parse.h"

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 12345;

	if (parse_size(s, &v) != 0)
		fail_msg("parse_size(\"%s\") failed", s);
	if (v != want)
		fail_msg("parse_size(\"%s\") = %llu, want %llu", s,
			 (unsigned long long)v, (unsigned long long)want);
}

static void size_bad(const char *s, int want)
{
	uint64_t v = 12345;
	int rc = parse_size(s, &v);

	if (rc != want)
		fail_msg("parse_size(\"%s\") = %d, want %d", s ? s : "(null)", rc, want);
	assert_int_equal(v, 12345);	/* untouched on error */
}

static void test_parse_size(void **state)
{
	(void)state;
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("4096B", 4096);
	size_ok("64K", 64ull << 10);
	size_ok("64k", 64ull << 10);
	size_ok("64KiB", 64ull << 10);
	size_ok("64kib", 64ull << 10);
	size_ok("64KB", 64ull << 10);
	size_ok("64M", 64ull << 20);
	size_ok("2G", 2ull << 30);
	size_ok("2gb", 2ull << 30);
	size_ok("1T", 1ull << 40);
	size_ok("1TiB", 1ull << 40);
	size_ok("3P", 3ull << 50);
	size_ok("15E", 15ull << 60);
	size_ok("16777215T", 16777215ull << 40);
	size_ok("18446744073709551615", UINT64_MAX);
	size_bad("16E", -ERANGE);
	size_bad("16777216T", -ERANGE);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("99999999999999999999999K", -ERANGE);
	size_bad(NULL, -EINVAL);
	size_bad("", -EINVAL);
	size_bad("K", -EINVAL);
	size_bad("B", -EINVAL);
	size_bad("64X", -EINVAL);
	size_bad("64 K", -EINVAL);
	size_bad(" 64", -EINVAL);
	size_bad("64 ", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad("64Ki", -EINVAL);
	size_bad("64iB", -EINVAL);
	size_bad("64KBB", -EINVAL);
	size_bad("64KK", -EINVAL);
	size_bad("1.5G", -EINVAL);
	size_bad("0x10", -EINVAL);
}

static void u64_bad(const char *s, int want)
{
	uint64_t v = 7;

	if (parse_u64(s, &v) != want)
		fail_msg("parse_u64(\"%s\") != %d", s ? s : "(null)", want);
	assert_int_equal(v, 7);
}

static void test_parse_u64(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_u64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("007", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	u64_bad("18446744073709551616", -ERANGE);
	u64_bad("99999999999999999999999999", -ERANGE);
	u64_bad(NULL, -EINVAL);
	u64_bad("", -EINVAL);
	u64_bad("-1", -EINVAL);
	u64_bad("+1", -EINVAL);
	u64_bad(" 1", -EINVAL);
	u64_bad("1 ", -EINVAL);
	u64_bad("0x10", -EINVAL);
	u64_bad("12a", -EINVAL);
	u64_bad("1K", -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_u64),
	};

	return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
