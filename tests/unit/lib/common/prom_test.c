/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/prom_test.c: the Prometheus text writer
 * (lib/common/prom.c): the exact lines of a counter, a gauge, a labelled
 * family and a negative gauge; label values escaped; the buffer grows from
 * nothing and past a long HELP; an adopted buffer keeps its text; reset
 * keeps the memory; errors stick.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "prom.h"

static void test_lines(void **state)
{
	struct prom p = PROM_INIT;

	prom_counter(&p, "x_total", "Things done.", 18446744073709551615ull);
	prom_gauge(&p, "x_level", "How full.", 3);
	prom_head(&p, "x_ops_total", "counter", "Ops, by op.");
	prom_label(&p, "x_ops_total", "op", "read", 5);
	prom_sample(&p, "x_ops_total", "op=\"write\",dir=\"in\"", 0);
	prom_gauge_signed(&p, "x_delta", "Signed.", -2);
	prom_sample_signed(&p, "x_delta", "k=\"v\"", 7);
	assert_int_equal(p.err, 0);
	assert_string_equal(p.buf,
			    "# HELP x_total Things done.\n# TYPE x_total counter\n"
			    "x_total 18446744073709551615\n"
			    "# HELP x_level How full.\n# TYPE x_level gauge\nx_level 3\n"
			    "# HELP x_ops_total Ops, by op.\n# TYPE x_ops_total counter\n"
			    "x_ops_total{op=\"read\"} 5\n"
			    "x_ops_total{op=\"write\",dir=\"in\"} 0\n"
			    "# HELP x_delta Signed.\n# TYPE x_delta gauge\nx_delta -2\n"
			    "x_delta{k=\"v\"} 7\n");
	assert_int_equal(strlen(p.buf), p.len);
	prom_fini(&p);
	assert_null(p.buf);
	assert_int_equal(p.len, 0);
}

static void test_escape(void **state)
{
	struct prom p = PROM_INIT;

	prom_label(&p, "m", "path", "a\\b\"c\nd", 1);
	assert_string_equal(p.buf, "m{path=\"a\\\\b\\\"c\\nd\"} 1\n");
	prom_reset(&p);
	prom_label(&p, "m", "k", "", 2);
	assert_string_equal(p.buf, "m{k=\"\"} 2\n");
	prom_fini(&p);
}

/* Growth past any fixed line: a 10 KB HELP and 1000 samples. */
static void test_grows(void **state)
{
	struct prom p = PROM_INIT;
	char *help = malloc(10001);
	size_t cap;
	int i;

	assert_non_null(help);
	memset(help, 'h', 10000);
	help[10000] = '\0';
	prom_head(&p, "big", "gauge", help);
	for (i = 0; i < 1000; i++)
		prom_sample(&p, "big", "i=\"x\"", (uint64_t)i);
	assert_int_equal(p.err, 0);
	assert_true(p.cap > p.len);
	assert_int_equal(strlen(p.buf), p.len);
	assert_non_null(strstr(p.buf, "hhh\n# TYPE big gauge\nbig{i=\"x\"} 0\n"));
	assert_non_null(strstr(p.buf, "\nbig{i=\"x\"} 999\n"));
	cap = p.cap;
	prom_reset(&p);
	assert_int_equal(p.len, 0);
	assert_int_equal(p.cap, cap);
	assert_string_equal(p.buf, "");
	prom_fini(&p);
	free(help);
}

/* fs/metrics.c's use: text already in a small malloc()ed buffer goes on. */
static void test_adopt(void **state)
{
	struct prom p;
	char *buf = malloc(8);

	assert_non_null(buf);
	memcpy(buf, "up 1\n", 6);
	prom_adopt(&p, buf, 5, 8);
	prom_counter(&p, "n_total", "N.", 4);
	prom_raw(&p, "relayed 2\n", 10);
	assert_int_equal(p.err, 0);
	assert_true(p.cap > 8);
	assert_string_equal(p.buf, "up 1\n# HELP n_total N.\n# TYPE n_total counter\n"
			    "n_total 4\nrelayed 2\n");
	prom_fini(&p);
}

/* After an error nothing more is written and the error stays. */
static void test_error_sticks(void **state)
{
	struct prom p = PROM_INIT;

	prom_gauge(&p, "a", "A.", 1);
	p.err = -ENOMEM;
	prom_gauge(&p, "b", "B.", 2);
	prom_raw(&p, "c 3\n", 4);
	prom_label(&p, "d", "k", "v", 4);
	assert_int_equal(p.err, -ENOMEM);
	assert_string_equal(p.buf, "# HELP a A.\n# TYPE a gauge\na 1\n");
	prom_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_grows),
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_error_sticks),
	};

	return cmocka_run_group_tests_name("prom", tests, NULL, NULL);
}
