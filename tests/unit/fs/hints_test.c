// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/hints_test.c: the mount's hints without marud: the
 * .maru/hints line parser (fs/hintline.c), what it accepts and why it
 * refuses, and the queue's limits (fs/hints.c): at most HINTQ_MAX
 * droppable hints wait, the oldest goes first and is counted, read_end is
 * never dropped.
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

static int parse(const char *text, struct hint_line *l, const char **why)
{
	static char buf[1 << 16];

	snprintf(buf, sizeof(buf), "%s", text);
	return hint_line_parse(buf, l, why);
}

static void test_lines(void **state)
{
	struct hint_line l;
	const char *why;

	assert_int_equal(parse("read r17 ns/a.bin ns/b.bin", &l, &why), 0);
	assert_int_equal(l.action, MARU_HINT_READ);
	assert_string_equal(l.req, "r17");
	assert_int_equal(l.npaths, 2);
	assert_string_equal(l.path[1], "ns/b.bin");
	assert_int_equal(parse("  read_end\tr17 ", &l, &why), 0);
	assert_int_equal(l.action, MARU_HINT_READ_END);
	assert_int_equal(l.npaths, 0);
	assert_int_equal(parse("promote r17", &l, &why), 0);
	assert_int_equal(parse("write tok a", &l, &why), 0);
	assert_int_equal(l.action, MARU_HINT_WRITE);
}

static void test_bad_lines(void **state)
{
	static char many[5000 * 3 + 16];
	struct hint_line l;
	const char *why;
	size_t at;
	int i;

	assert_int_equal(parse("fetch r1 a", &l, &why), -EINVAL);
	assert_non_null(strstr(why, "expected read"));
	assert_int_equal(parse("read", &l, &why), -EINVAL);
	assert_non_null(strstr(why, "request id"));
	assert_int_equal(parse("read r1", &l, &why), -EINVAL);
	assert_non_null(strstr(why, "at least one path"));
	assert_int_equal(parse("read_end r1 a", &l, &why), -EINVAL);
	assert_int_equal(parse("read r1 /abs", &l, &why), -EINVAL);
	assert_int_equal(parse("read r1 a/../b", &l, &why), -EINVAL);
	assert_int_equal(parse("read r1 a//b", &l, &why), -EINVAL);
	assert_int_equal(parse("read r1234567890123456789012345678901234567890123456789012345678901234 a",
			       &l, &why), -EINVAL);
	assert_non_null(strstr(why, "63"));
	at = (size_t)snprintf(many, sizeof(many), "read r1");
	for (i = 0; i < HINT_LINE_MAX_PATHS + 1; i++)
		at += (size_t)snprintf(many + at, sizeof(many) - at, " a");
	assert_int_equal(parse(many, &l, &why), -EINVAL);
	assert_non_null(strstr(why, "4096"));
}

static void test_queue_limits(void **state)
{
	struct maru_hint_range r = { 5, 0, 0 };
	struct hint_counters c;
	struct hintq *q;
	char req[16];
	int i;

	/* no sender: everything waits */
	assert_int_equal(hintq_new(NULL, &q), 0);
	assert_int_equal(hintq_push(q, MARU_HINT_READ_END, "first", NULL, 0), 0);
	for (i = 0; i < HINTQ_MAX + 10; i++) {
		snprintf(req, sizeof(req), "r%d", i);
		assert_int_equal(hintq_push(q, MARU_HINT_READ, req, &r, 1), 0);
	}
	for (i = 0; i < 20; i++)
		assert_int_equal(hintq_push(q, MARU_HINT_READ_END, "end", NULL, 0), 0);
	hintq_counters(q, &c);
	assert_int_equal(c.queued, 1 + HINTQ_MAX + 10 + 20);
	assert_int_equal(c.dropped, 10);	/* the 10 oldest reads, no read_end */
	hintq_free(q);
	assert_int_equal(hintq_push(NULL, MARU_HINT_READ, "x", &r, 1), -ENOTCONN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_queue_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
