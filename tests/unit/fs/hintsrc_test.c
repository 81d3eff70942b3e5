// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/hintsrc_test.c: where the mount's explicit hints come from
 * (fs/hintsrc.c), against the fake libmaru with maru_hint recorded
 * (hintrec.c): text written to .maru/hints becomes one hint per line, in
 * order, each path resolved from the root one component at a time (blank
 * lines skipped); a bad line or a path that does not resolve fails the
 * whole write and queues nothing, not even its good lines; user.maru.hint
 * on a file hints that file under "x<ino>", on a directory every file in
 * it, read_end and promote with no ranges, and an unknown version fails.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
	if (hintq_new(&m, &m.hq) || hintq_start(m.hq))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	hintq_free(m.hq);
	m.hq = NULL;
	fake_unmount(&m);
	return 0;
}

static size_t sent(void)
{
	hintq_drain(m.hq, 5000);
	return hintrec_get(got, HINTREC_MAX);
}

static int write_text(const char *text)
{
	return hints_write_text(&m, text, strlen(text));
}

static void test_lines_in_order(void **state)
{
	uint64_t a = fake_publish(FUSE_ROOT_ID, "a", "1");
	uint64_t d = fake_publish(FUSE_ROOT_ID, "d", "");
	uint64_t b = fake_publish(d, "b", "22");

	assert_int_equal(write_text("read r1 a d/b\n\n   \npromote r1\nwrite w a\nread_end r1"),
			 0);
	assert_int_equal(sent(), 4);
	assert_int_equal(got[0].action, MARU_HINT_READ);
	assert_string_equal(got[0].req, "r1");
	assert_int_equal(got[0].n, 2);
	assert_int_equal(got[0].ino[0], a);
	assert_int_equal(got[0].ino[1], b);
	assert_int_equal(got[1].action, MARU_HINT_PROMOTE);
	assert_int_equal(got[1].n, 0);
	assert_int_equal(got[2].action, MARU_HINT_WRITE);
	assert_string_equal(got[2].req, "w");
	assert_int_equal(got[2].ino[0], a);
	assert_int_equal(got[3].action, MARU_HINT_READ_END);
	assert_string_equal(got[3].req, "r1");
}

static void test_bad_line_queues_nothing(void **state)
{
	static char longpath[400];
	struct hint_counters c;

	fake_publish(FUSE_ROOT_ID, "a", "1");
	assert_int_equal(write_text("read r1 a\nbogus r2 a\n"), -EINVAL);
	assert_int_equal(write_text("read r1 a\nread r2 missing\n"), -EINVAL);
	assert_int_equal(write_text("read r1 a/missing\n"), -EINVAL);
	memset(longpath, 'n', sizeof(longpath) - 1);
	memcpy(longpath, "read r3 ", 8);
	assert_int_equal(write_text(longpath), -EINVAL);
	assert_int_equal(sent(), 0);
	hintq_counters(m.hq, &c);
	assert_int_equal(c.queued, 0);
	/* the text is copied, not parsed in place: a const buffer is fine */
	assert_int_equal(hints_write_text(&m, "read r4 a\nrest", 9), 0);
	assert_int_equal(sent(), 1);
	assert_string_equal(got[0].req, "r4");
}

static void test_xattr_file_and_dir(void **state)
{
	uint64_t a = fake_publish(FUSE_ROOT_ID, "a", "1");
	uint64_t b = fake_publish(FUSE_ROOT_ID, "b", "2");
	char want[32];

	assert_int_equal(hints_xattr(&m, a, MARU_HINT_READ), 0);
	assert_int_equal(hints_xattr(&m, FUSE_ROOT_ID, MARU_HINT_READ), 0);
	assert_int_equal(hints_xattr(&m, a, MARU_HINT_READ_END), 0);
	assert_int_equal(hints_xattr(&m, FUSE_ROOT_ID, MARU_HINT_PROMOTE), 0);
	assert_int_equal(hints_xattr(&m, 9999, MARU_HINT_READ), -ENOENT);
	assert_int_equal(sent(), 4);
	snprintf(want, sizeof(want), "x%llu", (unsigned long long)a);
	assert_string_equal(got[0].req, want);
	assert_int_equal(got[0].n, 1);
	assert_int_equal(got[0].ino[0], a);
	assert_int_equal(got[1].action, MARU_HINT_READ);
	assert_string_equal(got[1].req, "x1");
	assert_int_equal(got[1].n, 2);
	assert_int_equal(got[1].ino[0], a);
	assert_int_equal(got[1].ino[1], b);
	assert_int_equal(got[2].action, MARU_HINT_READ_END);
	assert_int_equal(got[2].n, 0);
	assert_int_equal(got[3].action, MARU_HINT_PROMOTE);
	assert_int_equal(got[3].n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lines_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_line_queues_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xattr_file_and_dir, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/hintsrc", tests, NULL, NULL);
}
