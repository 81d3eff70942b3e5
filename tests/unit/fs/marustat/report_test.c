/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/marustat/report_test.c: fs/marustat/report.c, marustat's
 * columns, over texts parsed by the real expo.c; the line is printed into
 * memory and read back column by column (the time column is the clock's
 * and only checked for its form). Cases: which texts are known, the
 * header, totals of one text, rates between two and a counter reset
 * counted from zero, a mount's families preferred to marud's and marud's
 * used alone (tcp bytes read + written), hit%, occupancy and the latency
 * quantiles in us, ms and s, "-" for a column no family gives.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "expo.h"
#include "report.h"

enum { C_TIME, C_LOOKUP, C_OPEN, C_CREATE, C_READ, C_WRITE, C_PUB, C_SHM, C_TCP, C_RDMA,
       C_HIT, C_EVICT, C_OCC, C_P50, C_P99, C_N };

struct line {
	char buf[1024];
	char *col[C_N + 1];
	int n;
};

static void parse(struct expo *e, const char *text)
{
	assert_int_equal(expo_parse(e, strdup(text)), 0);
}

/* One report_line, split into its columns. */
static void line(struct line *l, const struct expo *then, const struct expo *now, double secs)
{
	FILE *f = fmemopen(l->buf, sizeof(l->buf), "w");
	char *save = NULL, *tok;

	assert_non_null(f);
	report_line(f, then, now, secs);
	fclose(f);
	assert_non_null(strchr(l->buf, '\n'));
	l->n = 0;
	for (tok = strtok_r(l->buf, " \n", &save); tok && l->n <= C_N;
	     tok = strtok_r(NULL, " \n", &save))
		l->col[l->n++] = tok;
	assert_int_equal(l->n, C_N);
	/* HH:MM:SS */
	assert_int_equal(strlen(l->col[C_TIME]), 8);
	assert_true(l->col[C_TIME][2] == ':' && l->col[C_TIME][5] == ':');
}

static void test_known(void **state)
{
	struct expo e;

	(void)state;
	parse(&e, "node_cpu_seconds_total 1\nprocess_open_fds 3\n");
	assert_false(report_known(&e));
	expo_free(&e);
	parse(&e, "");
	assert_false(report_known(&e));
	expo_free(&e);
	parse(&e, "node_x 1\nmarud_up 1\n");
	assert_true(report_known(&e));
	expo_free(&e);
	parse(&e, "marufs_publishes_total 0\n");
	assert_true(report_known(&e));
	expo_free(&e);
	parse(&e, "maru_client_bytes_total{path=\"tcp\"} 0\n");
	assert_true(report_known(&e));
	expo_free(&e);
	parse(&e, "marudx 1\nmaru_other 2\n");	/* prefixes, not look-alikes */
	assert_false(report_known(&e));
	expo_free(&e);
}

static void test_header(void **state)
{
	static const char *const want[C_N] = { "time", "lookup", "open", "create", "read",
		"write", "pub", "shm_MB", "tcp_MB", "rdma_MB", "hit%", "evict", "occ%", "p50",
		"p99" };
	char buf[512], *save = NULL, *tok;
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	int i = 0;

	(void)state;
	report_header(f);
	fclose(f);
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		assert_true(i < C_N);
		assert_string_equal(tok, want[i++]);
	}
	assert_int_equal(i, C_N);
}

#define MOUNT_TEXT(lookups, pubs) \
	"marufs_fuse_ops_total{op=\"lookup\"} " #lookups "\n" \
	"marufs_fuse_ops_total{op=\"open\"} 5\n" \
	"marufs_fuse_ops_total{op=\"read\"} 9\n" \
	"marufs_publishes_total " #pubs "\n" \
	"marud_ops_total{op=\"LOOKUP\"} 1000\n" \
	"maru_client_bytes_total{path=\"shm\",dir=\"read\"} 1500000\n" \
	"maru_client_bytes_total{path=\"shm\",dir=\"write\"} 500000\n" \
	"maru_client_bytes_total{path=\"tcp\",dir=\"read\"} 0\n" \
	"marud_bytes_read_total 777777777\n" \
	"marufs_lookups_total{result=\"positive\"} 3\n" \
	"marufs_lookups_total{result=\"negative\"} 1\n" \
	"marud_cache_requests_total{result=\"hit\"} 1\n" \
	"marud_cache_requests_total{result=\"miss\"} 99\n" \
	"marud_pool_capacity_bytes 1000\n" \
	"marud_pool_free_bytes 250\n" \
	"marufs_fuse_request_duration_seconds_bucket{op=\"read\",le=\"0.001\"} 10\n" \
	"marufs_fuse_request_duration_seconds_bucket{op=\"read\",le=\"+Inf\"} 10\n" \
	"marud_request_duration_seconds_bucket{le=\"4\"} 10\n" \
	"marud_request_duration_seconds_bucket{le=\"+Inf\"} 10\n"

/* One text: totals since start; the mount's own families come first. */
static void test_totals(void **state)
{
	struct line l;
	struct expo e;

	(void)state;
	parse(&e, MOUNT_TEXT(7, 2));
	line(&l, NULL, &e, 0);
	assert_string_equal(l.col[C_LOOKUP], "7");	/* marufs's, not marud's 1000 */
	assert_string_equal(l.col[C_OPEN], "5");
	assert_string_equal(l.col[C_CREATE], "-");	/* no create sample */
	assert_string_equal(l.col[C_READ], "9");
	assert_string_equal(l.col[C_WRITE], "-");
	assert_string_equal(l.col[C_PUB], "2");
	assert_string_equal(l.col[C_SHM], "2.00");	/* both directions */
	assert_string_equal(l.col[C_TCP], "0.00");	/* the client's count, not marud's */
	assert_string_equal(l.col[C_RDMA], "-");
	assert_string_equal(l.col[C_HIT], "75.0");	/* the mount's lookups */
	assert_string_equal(l.col[C_EVICT], "-");
	assert_string_equal(l.col[C_OCC], "75.0");
	assert_string_equal(l.col[C_P50], "500us");	/* the mount's histogram */
	assert_string_equal(l.col[C_P99], "990us");
	expo_free(&e);
}

/* Two texts: rates per second; a counter that went down counts from zero. */
static void test_rates_and_reset(void **state)
{
	struct expo a, b;
	struct line l;

	(void)state;
	parse(&a, MOUNT_TEXT(7, 2));
	parse(&b, MOUNT_TEXT(27, 1));	/* 20 lookups more; publishes reset */
	line(&l, &a, &b, 2.0);
	assert_string_equal(l.col[C_LOOKUP], "10.0");
	assert_string_equal(l.col[C_OPEN], "0.0");
	assert_string_equal(l.col[C_PUB], "0.5");	/* 1 since the reset, over 2 s */
	assert_string_equal(l.col[C_SHM], "0.00");
	assert_string_equal(l.col[C_HIT], "-");		/* no lookups between */
	assert_string_equal(l.col[C_OCC], "75.0");	/* a gauge: now's */
	assert_string_equal(l.col[C_P50], "-");		/* nothing observed between */
	expo_free(&a);
	expo_free(&b);
}

/* marud's endpoint alone: its requests, its bytes read + written, its cache. */
static void test_marud_alone(void **state)
{
	struct expo e;
	struct line l;

	(void)state;
	parse(&e, "marud_ops_total{op=\"LOOKUP\"} 40\n"
		  "marud_ops_total{op=\"LOOKUP\",loop=\"1\"} 2\n"
		  "marud_ops_total{op=\"CREATE\"} 4\n"
		  "marud_ops_total{op=\"WRITE\"} 6\n"
		  "marud_publishes_total 3\n"
		  "marud_bytes_read_total 1000000\n"
		  "marud_bytes_written_total 3000000\n"
		  "marud_cache_requests_total{result=\"hit\"} 1\n"
		  "marud_cache_requests_total{result=\"miss\"} 3\n"
		  "marud_evictions_total 12\n"
		  "marud_request_duration_seconds_bucket{op=\"READ\",le=\"0.1\"} 4\n"
		  "marud_request_duration_seconds_bucket{op=\"READ\",le=\"+Inf\"} 4\n"
		  "marud_request_duration_seconds_bucket{op=\"OPEN\",le=\"0.1\"} 6\n"
		  "marud_request_duration_seconds_bucket{op=\"OPEN\",le=\"+Inf\"} 6\n");
	line(&l, NULL, &e, 0);
	assert_string_equal(l.col[C_LOOKUP], "42");	/* summed over other labels */
	assert_string_equal(l.col[C_OPEN], "-");
	assert_string_equal(l.col[C_CREATE], "4");
	assert_string_equal(l.col[C_WRITE], "6");
	assert_string_equal(l.col[C_PUB], "3");
	assert_string_equal(l.col[C_SHM], "-");
	assert_string_equal(l.col[C_TCP], "4.00");	/* read + written */
	assert_string_equal(l.col[C_HIT], "25.0");
	assert_string_equal(l.col[C_EVICT], "12");
	assert_string_equal(l.col[C_OCC], "-");		/* no capacity given */
	assert_string_equal(l.col[C_P50], "50.0ms");
	assert_string_equal(l.col[C_P99], "99.0ms");
	expo_free(&e);
}

/* Seconds, and no histogram at all. */
static void test_latency_forms(void **state)
{
	struct expo e;
	struct line l;

	(void)state;
	parse(&e, "marud_request_duration_seconds_bucket{le=\"4\"} 10\n"
		  "marud_request_duration_seconds_bucket{le=\"+Inf\"} 10\n");
	line(&l, NULL, &e, 0);
	assert_string_equal(l.col[C_P50], "2.00s");
	assert_string_equal(l.col[C_P99], "3.96s");
	assert_string_equal(l.col[C_LOOKUP], "-");
	expo_free(&e);
	parse(&e, "marud_up 1\n");
	line(&l, NULL, &e, 0);
	assert_string_equal(l.col[C_P50], "-");
	assert_string_equal(l.col[C_P99], "-");
	expo_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_totals),
		cmocka_unit_test(test_rates_and_reset),
		cmocka_unit_test(test_marud_alone),
		cmocka_unit_test(test_latency_forms),
	};

	return cmocka_run_group_tests_name("fs/marustat/report", tests, NULL, NULL);
}
