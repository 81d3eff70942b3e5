/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/stats.c: what a client reports about the pool and itself: statfs
 * (marud's numbers), and the Prometheus text of maru_stats_text(), which is
 * marud's STATS text followed by this client's own counters (bytes and
 * transfers per data path, requests, reconnects, timeouts, sessions),
 * gauges (data path in use, connected, generation) and the lines each data
 * path writes of its own (its dp_ops stats: rdma's WRs, errors, QPs).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp/datapath.h"
#include "frame.h"
#include "session.h"
#include "transport.h"

int maru_statfs(struct maru_client *c, struct maru_statfs *out)
{
	struct req r = { .op = OP_STATFS };
	const struct proto_statfs *p;
	int rc;

	if (!c || !out)
		return -EINVAL;
	rc = transport_call(c, &r);
	if (rc)
		return rc;
	p = r.rep;
	out->statfs_size = sizeof(*out);
	out->capacity = p->capacity;
	out->free = p->free;
	out->evictable = p->evictable;
	out->used = p->used;
	out->pending = p->pending;
	out->orphaned = p->orphaned;
	out->names = p->names;
	out->dirs = p->dirs;
	out->block = p->block;
	frame_req_done(&r);
	return 0;
}

/* ---- stats text ---- */

struct text {
	char *buf;
	size_t len, cap;
	int err;
};

static void text_put(struct text *t, const char *p, size_t n)
{
	if (t->err)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = (t->len + n + 1) * 2;
		char *nb = realloc(t->buf, cap);

		if (!nb) {
			t->err = -ENOMEM;
			return;
		}
		t->buf = nb;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static void LOG_PRINTF(2, 3) text_printf(struct text *t, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		text_put(t, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void stats_dp(struct text *t, struct maru_client *c, const char *metric,
		     int bytes)
{
	static const enum maru_data_path paths[] = { MARU_DATA_SHM, MARU_DATA_RDMA, MARU_DATA_TCP };
	size_t i;

	text_printf(t, "# HELP %s %s moved by this client per data path and direction.\n"
		    "# TYPE %s counter\n", metric, bytes ? "Bytes" : "Transfers", metric);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct dp_counters *d = &c->st.dp[paths[i]];

		text_printf(t, "%s{path=\"%s\",dir=\"read\"} %llu\n", metric, session_dp_name(paths[i]),
			    (unsigned long long)(bytes ? d->rd_bytes : d->rd_ops));
		text_printf(t, "%s{path=\"%s\",dir=\"write\"} %llu\n", metric, session_dp_name(paths[i]),
			    (unsigned long long)(bytes ? d->wr_bytes : d->wr_ops));
	}
}

static void stats_counter(struct text *t, const char *metric, const char *help, uint64_t v)
{
	text_printf(t, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", metric, help, metric,
		    metric, (unsigned long long)v);
}

/* Each data path's own lines, through its table (today rdma's only). */
static void stats_paths(struct text *t, struct maru_client *c)
{
	static const enum maru_data_path paths[] = { MARU_DATA_SHM, MARU_DATA_RDMA, MARU_DATA_TCP };
	const struct dp_ops *dp;
	char buf[2048];
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		dp = dp_of(paths[i]);
		if (dp->stats)
			text_put(t, buf, dp->stats(c, buf, sizeof(buf)));
	}
}

static void stats_client(struct text *t, struct maru_client *c)
{
	enum maru_data_path cur;
	uint64_t gen;
	int down;

	pthread_mutex_lock(&c->lock);
	down = c->down;
	gen = c->s.generation;
	pthread_mutex_unlock(&c->lock);
	cur = session_dp_kind(c);
	stats_dp(t, c, "maru_client_bytes_total", 1);
	stats_dp(t, c, "maru_client_ops_total", 0);
	stats_counter(t, "maru_client_requests_total", "Requests sent to marud.", c->st.requests);
	stats_counter(t, "maru_client_spin_replies_total",
		      "Replies that came while the caller polled for them (opts.spin_us).",
		      c->st.spin_replies);
	stats_counter(t, "maru_client_spin_misses_total",
		      "Polls for a reply that ran out of time (opts.spin_us).", c->st.spin_misses);
	stats_counter(t, "maru_client_reconnects_total", "Sockets reopened after an outage.",
		      c->st.reconnects);
	stats_counter(t, "maru_client_timeouts_total", "Calls that gave up with ETIMEDOUT.",
		      c->st.timeouts);
	stats_counter(t, "maru_client_sessions_total", "New sessions after the first (restart or expiry).",
		      c->st.new_sessions);
	text_printf(t, "# HELP maru_client_data_path Data path in use (1 for the active one).\n"
		    "# TYPE maru_client_data_path gauge\n");
	text_printf(t, "maru_client_data_path{path=\"shm\"} %d\n", cur == MARU_DATA_SHM);
	text_printf(t, "maru_client_data_path{path=\"rdma\"} %d\n", cur == MARU_DATA_RDMA);
	text_printf(t, "maru_client_data_path{path=\"tcp\"} %d\n", cur == MARU_DATA_TCP);
	stats_paths(t, c);
	text_printf(t, "# HELP maru_client_connected 1 while marud answers, 0 during an outage.\n"
		    "# TYPE maru_client_connected gauge\nmaru_client_connected %d\n", !down);
	text_printf(t, "# HELP maru_client_generation Pool generation of the current session.\n"
		    "# TYPE maru_client_generation gauge\nmaru_client_generation %llu\n",
		    (unsigned long long)gen);
}

ssize_t maru_stats_text(struct maru_client *c, char *buf, size_t len)
{
	struct req r = { .op = OP_STATS };
	struct text t = { 0 };
	ssize_t n;
	int rc;

	if (!c || (!buf && len))
		return -EINVAL;
	rc = transport_call(c, &r);
	if (rc)
		return rc;
	text_put(&t, r.rep ? r.rep : "", r.rlen);
	frame_req_done(&r);
	if (t.len && t.buf[t.len - 1] != '\n')
		text_put(&t, "\n", 1);
	stats_client(&t, c);
	if (t.err) {
		free(t.buf);
		return t.err;
	}
	if (len) {
		size_t k = t.len < len - 1 ? t.len : len - 1;

		memcpy(buf, t.buf, k);
		buf[k] = '\0';
	}
	n = (ssize_t)t.len;
	free(t.buf);
	return n;
}
