// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/refusals_test.c: the refusal log (daemon/refusals.c),
 * its lines read back from the real log sink (stderr, pointed at a file
 * for the test): a thousand refusals from one source make two lines, the
 * first at once and one count line at the end of the window, one per
 * window while they go on, a first line again after a quiet window; sources and
 * reasons are counted apart; more sources than the table holds fold into
 * "other sources" without losing a count.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "log.h"
#include "refusals.h"

struct cap {
	char path[64];
	int saved;
};

/* stderr into a temp file until cap_end(). */
static void cap_begin(struct cap *c)
{
	int fd;

	snprintf(c->path, sizeof(c->path), "/tmp/marud-refusals-XXXXXX");
	fd = mkstemp(c->path);
	assert_true(fd >= 0);
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	assert_true(c->saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

/* Restore stderr; the captured text (caller frees). */
static char *cap_end(struct cap *c)
{
	FILE *fp;
	char *buf = calloc(1, 1 << 16);
	size_t n;

	assert_non_null(buf);
	assert_int_equal(dup2(c->saved, STDERR_FILENO), STDERR_FILENO);
	close(c->saved);
	fp = fopen(c->path, "r");
	assert_non_null(fp);
	n = fread(buf, 1, (1 << 16) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	unlink(c->path);
	return buf;
}

static unsigned int lines(const char *s)
{
	unsigned int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_flood_is_two_lines(void **state)
{
	struct refusals r;
	struct cap c;
	char *out;
	int i;

	assert_int_equal(refusals_init(&r, 10000), 0);
	cap_begin(&c);
	for (i = 0; i < 983; i++)
		refusals_note(&r, "10.0.0.3", "handshake limit");
	refusals_flush(&r, mono_ms(), 0);	/* the window has not ended: nothing */
	refusals_flush(&r, mono_ms() + 10000, 0);
	out = cap_end(&c);
	assert_int_equal(lines(out), 2);
	assert_non_null(strstr(out, "refused a connection from 10.0.0.3: handshake limit"));
	assert_non_null(strstr(out, "refused 983 connections from 10.0.0.3 in the last 10 s: "
				    "handshake limit\n"));
	assert_int_equal(refusals_total(&r), 983);
	free(out);
	refusals_destroy(&r);
}

/* A flood that goes on: one count line per window; after a quiet one, a first line again. */
static void test_windows_follow(void **state)
{
	struct refusals r;
	struct cap c;
	char *out;
	int i;

	assert_int_equal(refusals_init(&r, 100), 0);
	cap_begin(&c);
	for (i = 0; i < 10; i++)
		refusals_note(&r, "10.0.0.3", "handshake limit");
	sleep_ms(120);
	refusals_flush(&r, mono_ms(), 0);
	for (i = 0; i < 5; i++)
		refusals_note(&r, "10.0.0.3", "handshake limit");
	sleep_ms(120);
	refusals_flush(&r, mono_ms(), 0);
	sleep_ms(120);
	refusals_flush(&r, mono_ms(), 0);	/* a window without any: freed, no line */
	refusals_note(&r, "10.0.0.3", "handshake limit");
	out = cap_end(&c);
	assert_int_equal(lines(out), 4);
	assert_non_null(strstr(out, "refused 10 connections from 10.0.0.3 in the last 1 s"));
	assert_non_null(strstr(out, "refused 5 connections from 10.0.0.3 in the last 1 s"));
	assert_non_null(strstr(strstr(out, "refused 5 connections"),
			       "refused a connection from 10.0.0.3"));
	free(out);
	refusals_destroy(&r);
}

/* A flush with a time taken before a window opened leaves it open. */
static void test_flush_before_window(void **state)
{
	struct refusals r;
	struct cap c;
	uint64_t before = mono_ms();
	char *out;

	assert_int_equal(refusals_init(&r, 10000), 0);
	cap_begin(&c);
	sleep_ms(5);
	refusals_note(&r, "10.0.0.3", "handshake limit");
	refusals_flush(&r, before, 0);
	refusals_note(&r, "10.0.0.3", "handshake limit");	/* counted, no line */
	out = cap_end(&c);
	assert_int_equal(lines(out), 1);
	free(out);
	refusals_destroy(&r);
}

static void test_sources_and_reasons_apart(void **state)
{
	static const char *const why_a = "per source", *const why_b = "deadline";
	struct refusals r;
	struct cap c;
	char *out;
	int i;

	assert_int_equal(refusals_init(&r, 10000), 0);
	cap_begin(&c);
	for (i = 0; i < 5; i++) {
		refusals_note(&r, "10.0.0.3", why_a);
		refusals_note(&r, "10.0.0.4", why_a);
		refusals_note(&r, "10.0.0.3", why_b);
	}
	refusals_note(&r, "10.0.0.5", why_b);	/* one alone: its first line only */
	refusals_flush(&r, 0, 1);
	out = cap_end(&c);
	assert_int_equal(lines(out), 4 + 3);
	assert_non_null(strstr(out, "refused 5 connections from 10.0.0.3 in the last 10 s: per source"));
	assert_non_null(strstr(out, "refused 5 connections from 10.0.0.4 in the last 10 s: per source"));
	assert_non_null(strstr(out, "refused 5 connections from 10.0.0.3 in the last 10 s: deadline"));
	assert_null(strstr(out, "connections from 10.0.0.5"));
	free(out);
	refusals_destroy(&r);
}

static void test_many_sources_fold(void **state)
{
	struct refusals r;
	struct cap c;
	char src[32], *out, *p;
	unsigned long long other = 0;
	int i;

	assert_int_equal(refusals_init(&r, 10000), 0);
	cap_begin(&c);
	for (i = 0; i < 200; i++) {
		snprintf(src, sizeof(src), "10.1.%d.%d", i / 250, i % 250);
		refusals_note(&r, src, "handshake limit");
	}
	refusals_flush(&r, 0, 1);
	out = cap_end(&c);
	/* 31 sources of their own, then one slot for the other 169 */
	assert_int_equal(lines(out), REFUSALS_SLOTS - 1 + 2);
	p = strstr(out, "connections from other sources");
	assert_non_null(p);
	while (p > out && p[-1] != '\n')
		p--;
	p = strstr(p, ": refused ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, ": refused %llu", &other), 1);
	assert_int_equal(other, 200 - (REFUSALS_SLOTS - 1));
	assert_int_equal(refusals_total(&r), 200);
	free(out);
	refusals_destroy(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_is_two_lines),
		cmocka_unit_test(test_windows_follow),
		cmocka_unit_test(test_flush_before_window),
		cmocka_unit_test(test_sources_and_reasons_apart),
		cmocka_unit_test(test_many_sources_fold),
	};

	log_init("refusals_test", 1, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
