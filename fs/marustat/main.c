/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/main.c: marustat [-p POOL|MOUNT] [-k KEYFILE] [INTERVAL [COUNT]], the
 * iostat of a marufs pool: the arguments, the fetch-parse loop on a fixed
 * clock (absolute deadlines, so lines do not drift), one line per
 * interval. Without INTERVAL, one line of totals since the counters
 * started. Exit 0, 1 on a source error, 2 on a usage error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "expo.h"
#include "report.h"
#include "source.h"

#define HEADER_EVERY 20

static void usage(FILE *out)
{
	fprintf(out, "usage: marustat [-p POOL|MOUNT] [-k KEYFILE] [INTERVAL [COUNT]]\n"
		"  -p MOUNT        a marufs mount (its .maru/stats)\n"
		"  -p POOL         maru://HOST[:PORT] or maru+unix:///PATH: marud's STATS\n"
		"  -k KEYFILE      the pool's key file (for -p POOL)\n"
		"  -p ADDR:PORT    a /metrics endpoint (marud --metrics-listen, marufs -o metrics=)\n"
		"  -p http://HOST[:PORT][/PATH]\n"
		"  INTERVAL        seconds between lines (rates); none: one line of totals\n"
		"  COUNT           lines to print (default: until interrupted)\n");
}

static int fetch(const struct source *s, struct expo *e)
{
	char err[SOURCE_ERR_LEN], *text;
	int rc = source_fetch(s, &text, err);

	if (rc) {
		fprintf(stderr, "marustat: %s\n", err);
		return rc;
	}
	rc = expo_parse(e, text);
	if (rc) {
		fprintf(stderr, "marustat: %s: not Prometheus text\n", s->name);
		expo_free(e);
		return rc;
	}
	if (!report_known(e)) {
		fprintf(stderr, "marustat: %s: no marud or marufs metrics in it\n", s->name);
		expo_free(e);
		return -ENODATA;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	struct timespec ts = { .tv_sec = (time_t)t };

	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int loop(const struct source *s, double interval, long count)
{
	struct expo then, now;
	double t0, t1, next;
	long i;

	if (fetch(s, &then))
		return 1;
	t0 = now_s();
	next = t0;
	for (i = 0; count < 0 || i < count; i++) {
		next += interval;
		sleep_until(next);
		if (fetch(s, &now)) {
			expo_free(&then);
			return 1;
		}
		t1 = now_s();
		if (i % HEADER_EVERY == 0)
			report_header(stdout);
		report_line(stdout, &then, &now, t1 - t0);
		expo_free(&then);
		then = now;
		t0 = t1;
	}
	expo_free(&then);
	return 0;
}

static int parse_args(int argc, char **argv, const char **src, const char **key,
		      double *interval, long *count)
{
	char *end;
	int c;

	while ((c = getopt(argc, argv, "p:k:h")) != -1) {
		switch (c) {
		case 'p':
			*src = optarg;
			break;
		case 'k':
			*key = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (argc - optind > 2)
		return -EINVAL;
	if (optind < argc) {
		errno = 0;
		*interval = strtod(argv[optind], &end);
		if (errno || *end || !(*interval > 0) || *interval > 86400) {
			fprintf(stderr, "marustat: bad interval '%s' (seconds, > 0)\n", argv[optind]);
			return -EINVAL;
		}
	}
	if (optind + 1 < argc) {
		errno = 0;
		*count = strtol(argv[optind + 1], &end, 10);
		if (errno || *end || *count <= 0) {
			fprintf(stderr, "marustat: bad count '%s' (a number > 0)\n", argv[optind + 1]);
			return -EINVAL;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[SOURCE_ERR_LEN];
	const char *src = NULL, *key = NULL;
	double interval = 0;
	long count = -1;
	struct source s;
	struct expo e;
	int rc;

	if (parse_args(argc, argv, &src, &key, &interval, &count)) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (source_open(src, key, &s, err)) {
		fprintf(stderr, "marustat: %s\n", err);
		source_close(&s);
		return 1;
	}
	if (interval > 0) {
		rc = loop(&s, interval, count);
	} else {
		rc = fetch(&s, &e) ? 1 : 0;
		if (!rc) {
			report_header(stdout);
			report_line(stdout, NULL, &e, 0);
			expo_free(&e);
		}
	}
	source_close(&s);
	return rc;
}
