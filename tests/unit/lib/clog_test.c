/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/clog_test.c: one libmaru log line (lib/clog.c) on a
 * client made by hand: priority filtering against log_priority (0 meaning
 * the default, LOG_INFO), ": strerror" for an errno of either sign, errno
 * left alone, long lines cut at the line buffer without overrun, and with
 * no log_fn only warnings and worse reaching stderr as "libmaru: msg\n"
 * (stderr is a pipe here, dup2'd over fd 2 for the call).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "clog.h"

#define LINE_MAX_SEEN	1023	/* CLOG_LINE_MAX - 1 */

struct seen {
	int n, prio;
	char last[4096];
};

static void seen_cb(void *arg, int priority, const char *msg)
{
	struct seen *s = arg;

	s->n++;
	s->prio = priority;
	snprintf(s->last, sizeof(s->last), "%s", msg);
}

static struct maru_client *client_with(struct seen *s, int prio)
{
	struct maru_client *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->opts.log_fn = s ? seen_cb : NULL;
	c->opts.log_arg = s;
	c->opts.log_priority = prio;
	return c;
}

static void test_priority_filter(void **state)
{
	struct seen s = { 0 };
	struct maru_client *c = client_with(&s, LOG_WARNING);

	(void)state;
	clog_info(c, "not this %d", 1);
	clog_debug(c, "nor this");
	assert_int_equal(s.n, 0);
	clog_warnx(c, "this %s", "one");
	assert_int_equal(s.n, 1);
	assert_int_equal(s.prio, LOG_WARNING);
	assert_string_equal(s.last, "this one");
	clog_msg(c, LOG_ERR, 0, "worse");
	assert_int_equal(s.n, 2);
	assert_int_equal(s.prio, LOG_ERR);
	c->opts.log_priority = LOG_DEBUG;
	clog_debug(c, "now debug");
	assert_int_equal(s.n, 3);
	assert_int_equal(s.prio, LOG_DEBUG);
	free(c);
}

/* 0: never initialised (zeroed opts); means LOG_INFO, not LOG_EMERG. */
static void test_zero_priority_is_info(void **state)
{
	struct seen s = { 0 };
	struct maru_client *c = client_with(&s, 0);

	(void)state;
	clog_info(c, "info arrives");
	assert_int_equal(s.n, 1);
	assert_string_equal(s.last, "info arrives");
	clog_debug(c, "debug does not");
	assert_int_equal(s.n, 1);
	clog_warnx(c, "warning arrives");
	assert_int_equal(s.n, 2);
	free(c);
}

static void test_errno_suffix(void **state)
{
	struct seen s = { 0 };
	struct maru_client *c = client_with(&s, LOG_INFO);

	(void)state;
	errno = EXDEV;
	clog_warn(c, -ENOENT, "key file %s", "/k");
	assert_string_equal(s.last, "key file /k: No such file or directory");
	assert_int_equal(errno, EXDEV);
	clog_warn(c, ECONNREFUSED, "marud");
	assert_string_equal(s.last, "marud: Connection refused");
	assert_int_equal(errno, EXDEV);
	free(c);
}

static void test_long_lines(void **state)
{
	struct seen s = { 0 };
	struct maru_client *c = client_with(&s, LOG_INFO);
	char *big = malloc(5001);

	(void)state;
	assert_non_null(big);
	memset(big, 'x', 5000);
	big[5000] = '\0';
	clog_warnx(c, "%s", big);
	assert_int_equal(strlen(s.last), LINE_MAX_SEEN);
	assert_int_equal(strspn(s.last, "x"), LINE_MAX_SEEN);
	/* no room left for the errno text: still one bounded line */
	clog_warn(c, -EIO, "%s", big);
	assert_int_equal(strlen(s.last), LINE_MAX_SEEN);
	/* the suffix itself cut at the end */
	big[1015] = '\0';
	clog_warn(c, -ENOENT, "%s", big);
	assert_int_equal(strlen(s.last), LINE_MAX_SEEN);
	assert_memory_equal(s.last + 1015, ": No suc", 8);
	free(big);
	free(c);
}

/* Run fn(c) with stderr redirected; what it wrote in out (NUL-ended). */
static size_t capture_stderr(void (*fn)(struct maru_client *), struct maru_client *c,
			     char *out, size_t cap)
{
	int p[2], saved;
	ssize_t k;
	size_t n = 0;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	fn(c);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	close(p[1]);
	while (n + 1 < cap && (k = read(p[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(p[0]);
	return n;
}

static void log_three(struct maru_client *c)
{
	clog_info(c, "info never goes to stderr");
	clog_debug(c, "nor debug");
	clog_warn(c, -EACCES, "refused %d", 7);
	clog_msg(c, LOG_ERR, 0, "second line");
}

static void log_big(struct maru_client *c)
{
	char big[3000];

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	clog_warnx(c, "%s", big);
}

static void test_stderr_default(void **state)
{
	struct maru_client *c = client_with(NULL, LOG_DEBUG);
	char out[4096];
	size_t n;

	(void)state;
	n = capture_stderr(log_three, c, out, sizeof(out));
	assert_string_equal(out, "libmaru: refused 7: Permission denied\n"
				 "libmaru: second line\n");
	/* one bounded line: prefix, 1023 bytes, newline */
	n = capture_stderr(log_big, c, out, sizeof(out));
	assert_int_equal(n, strlen("libmaru: ") + LINE_MAX_SEEN + 1);
	assert_memory_equal(out, "libmaru: yyy", 12);
	assert_int_equal(out[n - 1], '\n');
	/* log_priority still filters: LOG_ERR keeps warnings out */
	c->opts.log_priority = LOG_ERR;
	n = capture_stderr(log_three, c, out, sizeof(out));
	assert_string_equal(out, "libmaru: second line\n");
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_priority_filter),
		cmocka_unit_test(test_zero_priority_is_info),
		cmocka_unit_test(test_errno_suffix),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_stderr_default),
	};

	return cmocka_run_group_tests_name("clog", tests, NULL, NULL);
}
