/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/hist_test.c: the latency histograms (hist.c) and
 * their Prometheus lines (prom.c): an observation lands in the first
 * bucket whose bound holds it (bounds inclusive, past 10 s in +Inf), the
 * text is cumulative with _sum in seconds and _count = +Inf, labels go
 * before le, ages use their own bounds, threads on different stripes lose
 * no count, the switch turns observation off; prom_relabel() puts labels
 * first in every sample line and leaves comments alone; prom_label_text()
 * escapes and bounds; and what the writer makes passes promtool where it
 * is installed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hist.h"
#include "prom.h"

static struct hist *new_hist(void)
{
	struct hist *h = aligned_alloc(64, sizeof(*h));

	assert_non_null(h);
	memset(h, 0, sizeof(*h));
	return h;
}

static uint64_t bucket(const struct hist *h, unsigned int b)
{
	uint64_t c[HIST_BOUNDS + 1], sum;

	hist_read(h, c, &sum);
	return c[b];
}

static void test_buckets(void **state)
{
	struct hist *h = new_hist();
	uint64_t c[HIST_BOUNDS + 1], sum;

	assert_true(hist_empty(h));
	hist_observe(h, 0);		/* le 1e-06 */
	hist_observe(h, 1000);		/* exactly 1 us: le 1e-06 too */
	hist_observe(h, 1001);		/* le 2.5e-06 */
	hist_observe(h, 999999);	/* le 0.001 (index 9) */
	hist_observe(h, 10000000000ull);	/* 10 s: the last bound */
	hist_observe(h, 10000000001ull);	/* +Inf */
	assert_false(hist_empty(h));
	assert_int_equal(bucket(h, 0), 2);
	assert_int_equal(bucket(h, 1), 1);
	assert_int_equal(bucket(h, 9), 1);
	assert_int_equal(bucket(h, HIST_BOUNDS - 1), 1);
	assert_int_equal(bucket(h, HIST_BOUNDS), 1);
	hist_read(h, c, &sum);
	assert_int_equal(sum, 0 + 1000 + 1001 + 999999 + 10000000000ull + 10000000001ull);
	free(h);
}

static void test_text(void **state)
{
	struct hist *h = new_hist();
	struct prom p = PROM_INIT;
	unsigned int lines = 0;
	char *l;

	hist_observe(h, 1500);		/* 1.5 us */
	hist_observe(h, 30000);		/* 30 us */
	hist_observe(h, 20000000000ull);	/* 20 s */
	prom_head(&p, "x_seconds", "histogram", "Times.");
	hist_put_label(&p, "x_seconds", "op", "re\"ad", h);
	hist_put(&p, "y_seconds", NULL, h);
	assert_int_equal(p.err, 0);
	assert_non_null(strstr(p.buf, "# TYPE x_seconds histogram\n"
				      "x_seconds_bucket{op=\"re\\\"ad\",le=\"1e-06\"} 0\n"
				      "x_seconds_bucket{op=\"re\\\"ad\",le=\"2.5e-06\"} 1\n"));
	assert_non_null(strstr(p.buf, "x_seconds_bucket{op=\"re\\\"ad\",le=\"5e-05\"} 2\n"));
	assert_non_null(strstr(p.buf, "x_seconds_bucket{op=\"re\\\"ad\",le=\"10\"} 2\n"
				      "x_seconds_bucket{op=\"re\\\"ad\",le=\"+Inf\"} 3\n"
				      "x_seconds_sum{op=\"re\\\"ad\"} 20.0000315\n"
				      "x_seconds_count{op=\"re\\\"ad\"} 3\n"));
	assert_non_null(strstr(p.buf, "y_seconds_bucket{le=\"+Inf\"} 3\n"
				      "y_seconds_sum 20.0000315\ny_seconds_count 3\n"));
	/* 22 bounds and +Inf */
	for (l = p.buf; (l = strstr(l, "x_seconds_bucket{")); l++)
		lines++;
	assert_int_equal(lines, HIST_BOUNDS + 1);
	prom_fini(&p);
	free(h);
}

static void test_ages(void **state)
{
	struct hist *h = new_hist();
	struct prom p = PROM_INIT;

	hist_observe_age(h, 500000);			/* 0.5 ms: le 0.001 */
	hist_observe_age(h, 90ull * 1000000000);	/* 90 s: le 300 */
	hist_observe_age(h, 30ull * 86400 * 1000000000);	/* 30 days: +Inf */
	hist_put_age(&p, "age_seconds", NULL, h);
	assert_non_null(strstr(p.buf, "age_seconds_bucket{le=\"0.001\"} 1\n"));
	assert_non_null(strstr(p.buf, "age_seconds_bucket{le=\"60\"} 1\n"
				      "age_seconds_bucket{le=\"300\"} 2\n"));
	assert_non_null(strstr(p.buf, "age_seconds_bucket{le=\"604800\"} 2\n"
				      "age_seconds_bucket{le=\"+Inf\"} 3\n"));
	assert_null(strstr(p.buf, "le=\"1e-06\""));
	prom_fini(&p);
	free(h);
}

#define THREADS 8
#define PER_THREAD 100000

static void *observer(void *arg)
{
	unsigned int i;

	for (i = 0; i < PER_THREAD; i++)
		hist_observe(arg, 2000);
	return NULL;
}

static void test_threads(void **state)
{
	struct hist *h = new_hist();
	pthread_t th[THREADS];
	uint64_t c[HIST_BOUNDS + 1], sum;
	unsigned int i, used = 0;

	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, observer, h), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	hist_read(h, c, &sum);
	assert_int_equal(c[1], THREADS * PER_THREAD);
	assert_int_equal(sum, 2000ull * THREADS * PER_THREAD);
	for (i = 0; i < HIST_STRIPES; i++)
		used += h->s[i].n[1] != 0;
	assert_true(used > 1);	/* the threads spread over the stripes */
	free(h);
}

static void test_switch(void **state)
{
	struct hist *h = new_hist();
	uint64_t t0;

	hist_enable(1);
	assert_true(hist_on());
	t0 = hist_start();
	assert_true(t0 != 0);
	hist_done(h, t0);
	assert_int_equal(hist_empty(h), 0);
	memset(h, 0, sizeof(*h));
	hist_enable(0);
	assert_false(hist_on());
	assert_int_equal(hist_start(), 0);
	hist_done(h, hist_start());
	assert_true(hist_empty(h));
	hist_enable(1);
	free(h);
}

/* A timed span is measured right, whichever clock hist.c picked (rdtsc
 * scaled, or CLOCK_MONOTONIC): a 3 ms sleep lands between 2.5 and 100 ms. */
static void test_span(void **state)
{
	struct hist *h = new_hist();
	uint64_t c[HIST_BOUNDS + 1], sum, t0;
	unsigned int b, at = HIST_BOUNDS + 1;

	hist_enable(1);
	t0 = hist_start();
	usleep(3000);
	hist_done(h, t0);
	hist_read(h, c, &sum);
	for (b = 0; b <= HIST_BOUNDS; b++)
		if (c[b])
			at = b;
	assert_true(at >= 11 && at <= 15);	/* le 5 ms .. le 100 ms */
	assert_true(sum >= 2900000 && sum < 100000000);
	free(h);
}

static void test_relabel(void **state)
{
	static const char text[] =
		"# HELP a_total A.\n# TYPE a_total counter\na_total 1\n"
		"b{op=\"x\"} 2\nc{} 3\n\nd_bucket{le=\"+Inf\"} 4";
	struct prom p = PROM_INIT;

	prom_relabel(&p, text, sizeof(text) - 1, "pool=\"/dev/shm/p\"");
	assert_string_equal(p.buf,
			    "# HELP a_total A.\n# TYPE a_total counter\n"
			    "a_total{pool=\"/dev/shm/p\"} 1\n"
			    "b{pool=\"/dev/shm/p\",op=\"x\"} 2\n"
			    "c{pool=\"/dev/shm/p\"} 3\n\n"
			    "d_bucket{pool=\"/dev/shm/p\",le=\"+Inf\"} 4\n");
	prom_reset(&p);
	prom_relabel(&p, "a 1\n", 4, NULL);
	assert_string_equal(p.buf, "a 1\n");
	prom_fini(&p);
}

static void test_label_text(void **state)
{
	char b[32];

	assert_int_equal(prom_label_text(b, sizeof(b), "pool", "a\"b\\c\nd"), 0);
	assert_string_equal(b, "pool=\"a\\\"b\\\\c\\nd\"");
	assert_int_equal(prom_label_text(b, 12, "pool", "abcdef"), -ENAMETOOLONG);
	assert_int_equal(prom_label_text(b, 14, "pool", "abcdef"), 0);
	assert_string_equal(b, "pool=\"abcdef\"");
}

/* Where promtool is installed, the writer's histograms pass its lint. */
static void test_promtool(void **state)
{
	struct hist *h = new_hist();
	struct prom p = PROM_INIT, r = PROM_INIT;
	char cmd[128];
	FILE *f;

	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		print_message("promtool not installed: lint not run\n");
		free(h);
		return;
	}
	hist_observe(h, 123456);
	prom_head(&p, "t_request_duration_seconds", "histogram", "Times.");
	hist_put_label(&p, "t_request_duration_seconds", "op", "LOOKUP", h);
	prom_head(&p, "t_age_seconds", "histogram", "Ages.");
	hist_put_age(&p, "t_age_seconds", NULL, h);
	prom_relabel(&r, p.buf, p.len, "pool=\"/dev/shm/x\"");
	snprintf(cmd, sizeof(cmd), "promtool check metrics");
	f = popen(cmd, "w");
	assert_non_null(f);
	fwrite(r.buf, 1, r.len, f);
	assert_int_equal(pclose(f), 0);
	prom_fini(&p);
	prom_fini(&r);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_ages),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_switch),
		cmocka_unit_test(test_span),
		cmocka_unit_test(test_relabel),
		cmocka_unit_test(test_label_text),
		cmocka_unit_test(test_promtool),
	};

	return cmocka_run_group_tests_name("hist", tests, NULL, NULL);
}
