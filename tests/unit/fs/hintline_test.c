// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/hintline_test.c: one line of .maru/hints (fs/hintline.c)
 * on its own: each verb's action and whether it takes paths; words split
 * on blanks and tabs, NUL-terminated in place so the paths point into the
 * line; a request id of exactly 63 bytes and exactly HINT_LINE_MAX_PATHS
 * paths are accepted, one more of either refused; paths must be relative,
 * without empty, "." or ".." components; a refused line says why and a
 * parse resets what an earlier one left in the result.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hints.h"

static char buf[1 << 16];
static struct hint_line l;

static int parse(const char *text, const char **why)
{
	snprintf(buf, sizeof(buf), "%s", text);
	return hint_line_parse(buf, &l, why);
}

static void test_verbs(void **state)
{
	const char *why;

	assert_int_equal(parse("write\t\ttok  x/y.bin\t", &why), 0);
	assert_int_equal(l.action, MARU_HINT_WRITE);
	assert_string_equal(l.req, "tok");
	assert_int_equal(l.npaths, 1);
	assert_string_equal(l.path[0], "x/y.bin");
	/* in place: the path points into the line */
	assert_true(l.path[0] >= buf && l.path[0] < buf + sizeof(buf));
	assert_int_equal(parse("promote p9", &why), 0);
	assert_int_equal(l.action, MARU_HINT_PROMOTE);
	assert_string_equal(l.req, "p9");
	assert_int_equal(l.npaths, 0);	/* reset from the line before */
	assert_int_equal(parse("promote p9 a", &why), -EINVAL);
	assert_non_null(strstr(why, "no paths"));
	assert_int_equal(parse("write tok", &why), -EINVAL);
	assert_non_null(strstr(why, "at least one path"));
	assert_int_equal(parse("", &why), -EINVAL);
	assert_non_null(strstr(why, "expected"));
	assert_int_equal(parse(" \t ", &why), -EINVAL);
	assert_int_equal(parse("READ r a", &why), -EINVAL);	/* verbs are lower case */
	assert_int_equal(parse("reads r a", &why), -EINVAL);
}

/* pin SECONDS PATH...: a TTL pin line, seconds in place of the request id */
static void test_pin_line(void **state)
{
	const char *why;

	assert_int_equal(parse("pin 600 a.bin d/b.bin", &why), 0);
	assert_int_equal(l.action, HINT_LINE_PIN);
	assert_int_equal(l.seconds, 600);
	assert_int_equal(l.npaths, 2);
	assert_string_equal(l.path[1], "d/b.bin");
	assert_int_equal(parse("pin 0 a", &why), 0);	/* unpin */
	assert_int_equal(l.seconds, 0);
	assert_int_equal(parse("pin 4294967295 a", &why), 0);
	assert_true(l.seconds == UINT32_MAX);
	assert_int_equal(parse("pin 4294967296 a", &why), -EINVAL);
	assert_non_null(strstr(why, "whole seconds"));
	assert_int_equal(parse("pin 1.5 a", &why), -EINVAL);
	assert_int_equal(parse("pin -1 a", &why), -EINVAL);
	assert_int_equal(parse("pin ten a", &why), -EINVAL);
	assert_int_equal(parse("pin 60", &why), -EINVAL);
	assert_non_null(strstr(why, "at least one path"));
	assert_int_equal(parse("pin 60 ../x", &why), -EINVAL);
	assert_int_equal(parse("pin", &why), -EINVAL);
}

static void test_request_id_length(void **state)
{
	char line[128], id[65];
	const char *why;

	memset(id, 'q', 63);
	id[63] = '\0';
	snprintf(line, sizeof(line), "read %s f", id);
	assert_int_equal(parse(line, &why), 0);
	assert_int_equal(strlen(l.req), 63);
	memset(id, 'q', 64);
	id[64] = '\0';
	snprintf(line, sizeof(line), "read %s f", id);
	assert_int_equal(parse(line, &why), -EINVAL);
}

static void test_paths(void **state)
{
	static const char *const bad[] = { "/a", "a//b", "./a", "a/.", "a/../b", "..", "." };
	static const char *const good[] = { "a", "a/b/c", ".hidden", "a/..b", "a/b.", "a/" };
	char line[64];
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "read r %s", bad[i]);
		assert_int_equal(parse(line, &why), -EINVAL);
		assert_non_null(strstr(why, "relative"));
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(line, sizeof(line), "read r %s", good[i]);
		assert_int_equal(parse(line, &why), 0);
		assert_string_equal(l.path[0], good[i]);
	}
}

static void test_path_count(void **state)
{
	size_t at = (size_t)snprintf(buf, sizeof(buf), "read r");
	const char *why;
	int i;

	for (i = 0; i < HINT_LINE_MAX_PATHS; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, " p%d", i % 10);
	assert_int_equal(hint_line_parse(buf, &l, &why), 0);
	assert_int_equal(l.npaths, HINT_LINE_MAX_PATHS);
	assert_string_equal(l.path[HINT_LINE_MAX_PATHS - 1], "p5");
	at = (size_t)snprintf(buf, sizeof(buf), "read r");
	for (i = 0; i <= HINT_LINE_MAX_PATHS; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, " p");
	assert_int_equal(hint_line_parse(buf, &l, &why), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verbs),
		cmocka_unit_test(test_pin_line),
		cmocka_unit_test(test_request_id_length),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_path_count),
	};

	return cmocka_run_group_tests_name("fs/hintline", tests, NULL, NULL);
}
