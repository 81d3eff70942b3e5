/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/marustat/expo_test.c: fs/marustat/expo.c: the Prometheus
 * text parser (comments skipped, quoted label values with escapes and
 * braces, +Inf and timestamps, a broken line refusing the whole text),
 * sums by label, histogram buckets summed over their other labels, and
 * quantiles interpolated as PromQL's histogram_quantile() does.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "expo.h"

static int parse(struct expo *e, const char *text)
{
	return expo_parse(e, strdup(text));
}

static void test_samples_and_sums(void **state)
{
	struct expo e;

	assert_int_equal(parse(&e,
		"# HELP marud_ops_total Requests.\n"
		"# TYPE marud_ops_total counter\n"
		"marud_ops_total{pool=\"/p\",op=\"LOOKUP\"} 7\n"
		"marud_ops_total{pool=\"/p\",op=\"OPEN\"} 3 1700000000000\n"
		"odd{v=\"a \\\"}\\\" b\",op=\"LOOKUP\"} 1\n"
		"\n"
		"marud_pool_capacity_bytes 2.68435456e+08\n"
		"inf_gauge +Inf\n"), 0);
	assert_int_equal(e.n, 5);
	assert_true(expo_has(&e, "marud_ops_total"));
	assert_false(expo_has(&e, "marud_ops"));
	assert_true(expo_sum(&e, "marud_ops_total", NULL, NULL) == 10);
	assert_true(expo_sum(&e, "marud_ops_total", "op", "LOOKUP") == 7);
	assert_true(expo_sum(&e, "marud_ops_total", "op", "OPEN") == 3);
	assert_true(isnan(expo_sum(&e, "marud_ops_total", "op", "LOOK")));
	assert_true(isnan(expo_sum(&e, "marud_ops_total", "pool", "/q")));
	/* a value holding '"' and '}' does not end the label set early */
	assert_true(expo_sum(&e, "odd", "op", "LOOKUP") == 1);
	assert_true(expo_sum(&e, "marud_pool_capacity_bytes", NULL, NULL) == 268435456);
	assert_true(isinf(expo_sum(&e, "inf_gauge", NULL, NULL)));
	assert_true(isnan(expo_sum(&e, "absent", NULL, NULL)));
	expo_free(&e);
}

static void test_broken_text(void **state)
{
	struct expo e;

	assert_int_equal(parse(&e, "a 1\nb\n"), -EBADMSG);
	expo_free(&e);
	assert_int_equal(parse(&e, "a{x=\"1\" 1\n"), -EBADMSG);
	expo_free(&e);
	assert_int_equal(parse(&e, "a 1x\n"), -EBADMSG);
	expo_free(&e);
	assert_int_equal(parse(&e, "{x=\"1\"} 1\n"), -EBADMSG);
	expo_free(&e);
	assert_int_equal(parse(&e, ""), 0);
	assert_int_equal(e.n, 0);
	expo_free(&e);
}

/* Two ops of one histogram: buckets summed by le, in order. */
static const char hist[] =
	"h_bucket{op=\"a\",le=\"0.1\"} 0\n"
	"h_bucket{op=\"a\",le=\"1\"} 60\n"
	"h_bucket{op=\"a\",le=\"+Inf\"} 60\n"
	"h_bucket{op=\"b\",le=\"1\"} 40\n"
	"h_bucket{op=\"b\",le=\"0.1\"} 0\n"
	"h_bucket{op=\"b\",le=\"+Inf\"} 40\n"
	"h_sum{op=\"a\"} 30\n";

static void test_buckets(void **state)
{
	struct buckets b;
	struct expo e;

	assert_int_equal(parse(&e, hist), 0);
	assert_int_equal(expo_buckets(&e, "h", &b), 0);
	assert_int_equal(b.n, 3);
	assert_true(b.le[0] == 0.1 && b.le[1] == 1 && isinf(b.le[2]));
	assert_true(b.count[0] == 0 && b.count[1] == 100 && b.count[2] == 100);
	assert_int_equal(expo_buckets(&e, "nothing", &b), -ENOENT);
	expo_free(&e);
	/* without +Inf it is no histogram */
	assert_int_equal(parse(&e, "g_bucket{le=\"1\"} 3\n"), 0);
	assert_int_equal(expo_buckets(&e, "g", &b), -ENOENT);
	expo_free(&e);
}

static void test_quantiles(void **state)
{
	struct buckets none = { 0 }, then, now;
	struct expo e;

	assert_int_equal(parse(&e, hist), 0);
	assert_int_equal(expo_buckets(&e, "h", &now), 0);
	/* PromQL: 0.1 + (1 - 0.1) * 99/100 */
	assert_float_equal(expo_quantile(&none, &now, 0.99), 0.991, 1e-9);
	assert_float_equal(expo_quantile(&none, &now, 0.5), 0.55, 1e-9);
	/* nothing observed between two equal sets */
	assert_true(isnan(expo_quantile(&now, &now, 0.5)));
	expo_free(&e);
	/* only what came between then and now counts; past the last bound,
	 * the last bound */
	assert_int_equal(parse(&e, "h_bucket{le=\"0.001\"} 10\nh_bucket{le=\"0.01\"} 10\n"
			 "h_bucket{le=\"+Inf\"} 10\n"), 0);
	assert_int_equal(expo_buckets(&e, "h", &then), 0);
	expo_free(&e);
	assert_int_equal(parse(&e, "h_bucket{le=\"0.001\"} 10\nh_bucket{le=\"0.01\"} 10\n"
			 "h_bucket{le=\"+Inf\"} 14\n"), 0);
	assert_int_equal(expo_buckets(&e, "h", &now), 0);
	assert_float_equal(expo_quantile(&then, &now, 0.5), 0.01, 1e-12);
	assert_float_equal(expo_quantile(&none, &now, 0.5), 0.0005 + 0.0005 * 4 / 10, 1e-12);
	expo_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples_and_sums),
		cmocka_unit_test(test_broken_text),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_quantiles),
	};

	return cmocka_run_group_tests_name("fs/marustat/expo", tests, NULL, NULL);
}
