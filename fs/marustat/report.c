/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/report.c: what each marustat column is made of. A column
 * names the families it can come from in order of preference (a mount's
 * text has marufs's, libmaru's and marud's; marud's endpoint only marud's),
 * so one table serves both sources. Counters that went down (a restart)
 * count from zero, as PromQL's rate() does.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "report.h"

struct pick {
	const char *name, *key, *val;
};

#define ALTS 3

struct col {
	const char *head;
	struct pick alt[ALTS];
};

/* Operations per kind: the mount's FUSE requests, else marud's requests. */
static const struct col op_cols[] = {
	{ "lookup", { { "marufs_fuse_ops_total", "op", "lookup" },
		      { "marud_ops_total", "op", "LOOKUP" } } },
	{ "open", { { "marufs_fuse_ops_total", "op", "open" },
		    { "marud_ops_total", "op", "OPEN" } } },
	{ "create", { { "marufs_fuse_ops_total", "op", "create" },
		      { "marud_ops_total", "op", "CREATE" } } },
	{ "read", { { "marufs_fuse_ops_total", "op", "read" },
		    { "marud_ops_total", "op", "READ" } } },
	{ "write", { { "marufs_fuse_ops_total", "op", "write" },
		     { "marud_ops_total", "op", "WRITE" } } },
	{ "pub", { { "marufs_publishes_total" }, { "marud_publishes_total" } } },
};

/* Bytes per data path, both directions: the client's own count, else
 * (tcp) what marud moved over its sockets. */
static const struct col mb_cols[] = {
	{ "shm_MB", { { "maru_client_bytes_total", "path", "shm" } } },
	{ "tcp_MB", { { "maru_client_bytes_total", "path", "tcp" },
		      { "marud_bytes_read_total" } } },
	{ "rdma_MB", { { "maru_client_bytes_total", "path", "rdma" } } },
};

/* Hits and misses: the mount's lookups, else marud's lookups, exists()
 * and opens (a name not found is a miss). */
static const struct pick hits[] = { { "marufs_lookups_total", "result", "positive" },
				    { "marud_cache_requests_total", "result", "hit" } };
static const struct pick misses[] = { { "marufs_lookups_total", "result", "negative" },
				      { "marud_cache_requests_total", "result", "miss" } };

/* Latency histograms, the first present is shown: a mount's FUSE
 * requests, else marud's requests (all ops together). */
static const char *const latency[] = {
	"marufs_fuse_request_duration_seconds",
	"marud_request_duration_seconds",
};

int report_known(const struct expo *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (!strncmp(e->s[i].name, "marud_", 6) || !strncmp(e->s[i].name, "marufs_", 7) ||
		    !strncmp(e->s[i].name, "maru_client_", 12))
			return 1;
	return 0;
}

static double value(const struct expo *e, const struct pick *p)
{
	return expo_sum(e, p->name, p->key, p->val);
}

/* How much p grew from then to now (now when then is NULL or a reset). */
static double delta(const struct expo *then, const struct expo *now, const struct pick *p)
{
	double a, b = value(now, p);

	if (!then || isnan(b))
		return b;
	a = value(then, p);
	return isnan(a) || b < a ? b : b - a;
}

/* The first alternative now has; NULL if none. */
static const struct pick *chosen(const struct expo *now, const struct col *c)
{
	size_t i;

	for (i = 0; i < ALTS && c->alt[i].name; i++)
		if (expo_has(now, c->alt[i].name))
			return &c->alt[i];
	return NULL;
}

static void put_num(FILE *out, int width, double v, int decimals)
{
	if (isnan(v))
		fprintf(out, " %*s", width, "-");
	else
		fprintf(out, " %*.*f", width, decimals, v);
}

static void put_latency(FILE *out, double s)
{
	if (isnan(s))
		fprintf(out, " %7s", "-");
	else if (s < 1e-3)
		fprintf(out, " %5.0fus", s * 1e6);
	else if (s < 1)
		fprintf(out, " %5.1fms", s * 1e3);
	else
		fprintf(out, " %6.2fs", s);
}

/* The tcp column from marud alone is read + written bytes. */
static double col_bytes(const struct expo *then, const struct expo *now, const struct pick *p)
{
	static const struct pick wr = { "marud_bytes_written_total" };
	double v = delta(then, now, p);

	if (!strcmp(p->name, "marud_bytes_read_total"))
		v += delta(then, now, &wr);
	return v;
}

static double hit_pct(const struct expo *then, const struct expo *now)
{
	size_t i = expo_has(now, hits[0].name) ? 0 : 1;
	double h = delta(then, now, &hits[i]), m = delta(then, now, &misses[i]);

	if (isnan(h) || isnan(m) || h + m == 0)
		return NAN;
	return 100 * h / (h + m);
}

static double occupancy(const struct expo *now)
{
	double cap = expo_sum(now, "marud_pool_capacity_bytes", NULL, NULL);
	double free = expo_sum(now, "marud_pool_free_bytes", NULL, NULL);

	return cap > 0 ? 100 * (cap - free) / cap : NAN;
}

static void put_quantiles(FILE *out, const struct expo *then, const struct expo *now)
{
	struct buckets a = { 0 }, b;
	size_t i;

	for (i = 0; i < sizeof(latency) / sizeof(latency[0]); i++) {
		if (expo_buckets(now, latency[i], &b))
			continue;
		if (then)
			expo_buckets(then, latency[i], &a);
		put_latency(out, expo_quantile(&a, &b, 0.5));
		put_latency(out, expo_quantile(&a, &b, 0.99));
		return;
	}
	put_latency(out, NAN);
	put_latency(out, NAN);
}

void report_header(FILE *out)
{
	size_t i;

	fprintf(out, "%-8s", "time");
	for (i = 0; i < sizeof(op_cols) / sizeof(op_cols[0]); i++)
		fprintf(out, " %8s", op_cols[i].head);
	for (i = 0; i < sizeof(mb_cols) / sizeof(mb_cols[0]); i++)
		fprintf(out, " %8s", mb_cols[i].head);
	fprintf(out, " %5s %8s %5s %7s %7s\n", "hit%", "evict", "occ%", "p50", "p99");
}

void report_line(FILE *out, const struct expo *then, const struct expo *now, double secs)
{
	static const struct pick ev = { "marud_evictions_total" };
	double per = then && secs > 0 ? 1 / secs : 1;
	const struct pick *p;
	char stamp[16];
	time_t t = time(NULL);
	struct tm tm;
	size_t i;

	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&t, &tm));
	fprintf(out, "%-8s", stamp);
	for (i = 0; i < sizeof(op_cols) / sizeof(op_cols[0]); i++) {
		p = chosen(now, &op_cols[i]);
		put_num(out, 8, p ? delta(then, now, p) * per : NAN, then ? 1 : 0);
	}
	for (i = 0; i < sizeof(mb_cols) / sizeof(mb_cols[0]); i++) {
		p = chosen(now, &mb_cols[i]);
		put_num(out, 8, p ? col_bytes(then, now, p) * per / 1e6 : NAN, 2);
	}
	put_num(out, 5, hit_pct(then, now), 1);
	put_num(out, 8, delta(then, now, &ev) * per, then ? 1 : 0);
	put_num(out, 5, occupancy(now), 1);
	put_quantiles(out, then, now);
	fputc('\n', out);
}
