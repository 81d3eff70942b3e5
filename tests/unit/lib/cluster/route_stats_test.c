/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_stats_test.c: lib/cluster/route_stats.c:
 * statfs sums the pools (directories counted once, the largest block), a
 * pool out of reach left out; the Prometheus text is each pool's samples
 * with pool="UUID" put first in their labels (a sample with no labels,
 * with empty braces, with labels), HELP and TYPE once (the first pool's),
 * then the router's own counters; a short buffer gets a terminated prefix
 * and the full length.
 * Real: route*.c, members.c over loopback. Faked: etcd (fake_etcd.c) and
 * the pools (route_fixture.c's route_ops on in-memory trees).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "route_fixture.h"
#include "route_priv.h"

#define TEXT	"# HELP x_total Things.\n# TYPE x_total counter\nx_total 5\n" \
		"y{a=\"b\"} 6\nz{} 7\n"

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

static void test_statfs_sums(void **state)
{
	struct maru_statfs s;
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 0);
	assert_int_equal(route_statfs(f.c, &s), 0);
	assert_int_equal(s.capacity, 6000);
	assert_int_equal(s.free, 600);
	assert_int_equal(s.used, 60);
	assert_int_equal(s.names, 6);
	assert_int_equal(s.dirs, 4);
	assert_int_equal(s.block, 3 * 4096);
	rf_teardown(&f);
}

static void test_statfs_pool_away(void **state)
{
	struct maru_statfs s;
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 2u);
	assert_int_equal(route_statfs(f.c, &s), 0);
	assert_int_equal(s.capacity, 1000 + 3000);
	assert_int_equal(s.names, 1 + 3);
	rf_teardown(&f);
}

static void test_text_labelled(void **state)
{
	char buf[4096], want[256];
	struct rf f;
	ssize_t n;
	int i;

	(void)state;
	rf_setup(&f, 2, 0);
	for (i = 0; i < 2; i++)
		snprintf(f.pool[i].stats, sizeof(f.pool[i].stats), "%s", TEXT);
	n = route_stats_text(f.c, buf, sizeof(buf));
	assert_true(n > 0 && (size_t)n == strlen(buf));
	for (i = 0; i < 2; i++) {
		snprintf(want, sizeof(want), "\nx_total{pool=\"%s\"} 5\n", f.pool[i].uuid);
		assert_non_null(strstr(buf, want));
		snprintf(want, sizeof(want), "\ny{pool=\"%s\",a=\"b\"} 6\n", f.pool[i].uuid);
		assert_non_null(strstr(buf, want));
		snprintf(want, sizeof(want), "\nz{pool=\"%s\"} 7\n", f.pool[i].uuid);
		assert_non_null(strstr(buf, want));
	}
	assert_int_equal(count(buf, "# HELP x_total"), 1);
	assert_int_equal(count(buf, "# TYPE x_total"), 1);
	assert_int_equal(count(buf, "x_total 5"), 0);
	assert_non_null(strstr(buf, "maru_cluster_renames_total{kind=\"local\"} 0\n"));
	assert_non_null(strstr(buf, "maru_cluster_previous_hits_total 0\n"));
	rf_teardown(&f);
}

static void test_text_short_buffer(void **state)
{
	char full[4096], buf[20];
	struct rf f;
	ssize_t n;

	(void)state;
	rf_setup(&f, 2, 0);
	snprintf(f.pool[0].stats, sizeof(f.pool[0].stats), "%s", TEXT);
	n = route_stats_text(f.c, NULL, 0);
	assert_true(n > 0);
	assert_int_equal(route_stats_text(f.c, full, sizeof(full)), n);
	memset(buf, 'Q', sizeof(buf));
	assert_int_equal(route_stats_text(f.c, buf, sizeof(buf)), n);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_memory_equal(buf, full, sizeof(buf) - 1);
	rf_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statfs_sums),
		cmocka_unit_test(test_statfs_pool_away),
		cmocka_unit_test(test_text_labelled),
		cmocka_unit_test(test_text_short_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
