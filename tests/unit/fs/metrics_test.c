/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/metrics_test.c: fs/metrics.c, the Prometheus text of
 * marufs's counters: every family with HELP and TYPE, labelled series, the
 * gauges read from the mount's tables, a buffer grown from a tiny start.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"
#include "inode.h"
#include "metrics.h"

static void test_text(void **state)
{
	struct counters c;
	struct metrics_gauges g = { 3, 1, 0, 9 };
	size_t cap = 8, pos = 0;
	char *buf = malloc(cap);

	assert_non_null(buf);
	memset(&c, 0, sizeof(c));
	c.ops[OP_READ] = 5;
	c.publishes = 2;
	c.hints[HINT_PROMOTE] = 4;
	c.lookup_neg = 6;
	assert_int_equal(metrics_append(&c, &g, &buf, &cap, &pos), 0);
	assert_int_equal(strlen(buf), pos);
	assert_true(cap > 8);
	assert_non_null(strstr(buf, "# TYPE marufs_fuse_ops_total counter\n"));
	assert_non_null(strstr(buf, "marufs_fuse_ops_total{op=\"read\"} 5\n"));
	assert_non_null(strstr(buf, "marufs_fuse_ops_total{op=\"ioctl\"} 0\n"));
	assert_non_null(strstr(buf, "marufs_lookups_total{result=\"negative\"} 6\n"));
	assert_non_null(strstr(buf, "marufs_hints_total{hint=\"promote\"} 4\n"));
	assert_non_null(strstr(buf, "# HELP marufs_publishes_total Versions published by"));
	assert_non_null(strstr(buf, "\nmarufs_publishes_total 2\n"));
	assert_non_null(strstr(buf, "# TYPE marufs_inodes gauge\nmarufs_inodes 3\n"));
	assert_non_null(strstr(buf, "\nmarufs_cached_entries 9\n"));
	free(buf);
}

static void test_appends_after_existing_text(void **state)
{
	struct metrics_gauges g = { 0 };
	struct counters c = { 0 };
	size_t cap = 64, pos;
	char *buf = malloc(cap);

	assert_non_null(buf);
	memcpy(buf, "marud_up 1\n", sizeof("marud_up 1\n"));
	pos = strlen(buf);
	assert_int_equal(metrics_append(&c, &g, &buf, &cap, &pos), 0);
	assert_int_equal(strncmp(buf, "marud_up 1\n# HELP marufs_fuse_ops_total", 39), 0);
	free(buf);
}

static void test_gauges(void **state)
{
	struct metrics_gauges g;
	struct mfs m;

	fake_reset();
	fake_mount(&m);
	itab_remember(m.tab, 10, 1, "a");
	itab_remember(m.tab, 11, 1, "b");
	metrics_gauges(&m, &g);
	assert_int_equal(g.inodes, 2);
	assert_int_equal(g.pendings, 0);
	assert_int_equal(g.pins, 0);
	assert_int_equal(g.dentries, 0);
	fake_unmount(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_appends_after_existing_text),
		cmocka_unit_test(test_gauges),
	};

	return cmocka_run_group_tests_name("fs/metrics", tests, NULL, NULL);
}
