/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/stats.c: what a client reports about the pool and itself: statfs
 * (marud's numbers), a tenant's usage (maru_ns_usage), and the Prometheus text of maru_stats_text(), which is
 * marud's STATS text followed by this client's own counters (bytes and
 * transfers per data path, requests, reconnects, timeouts, sessions),
 * gauges (data path in use, connected, generation) and the lines each data
 * path writes of its own (its dp_ops stats: rdma's WRs, errors, QPs), all
 * through lib/common/prom, the tree's one Prometheus text writer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp/datapath.h"
#include "frame.h"
#include "prom.h"
#include "session.h"
#include "transport.h"
#include "route.h"

int maru_statfs(struct maru_client *c, struct maru_statfs *out)
{
	struct req r = { .op = OP_STATFS };
	const struct proto_statfs *p;
	int rc;

	if (!c || !out)
		return -EINVAL;
	if (c->route)
		return route_statfs(c, out);
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

int maru_ns_usage(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out)
{
	struct proto_ino_req q = { .ino = dir };
	struct req r = { .op = OP_NS_USAGE, .p1 = &q, .n1 = sizeof(q) };
	const struct proto_ns_usage *p;
	int rc;

	if (!c || !out)
		return -EINVAL;
	if (c->route)
		return route_ns_usage(c, dir, out);
	rc = transport_call(c, &r);
	if (rc)
		return rc;
	p = r.rep;
	memset(out, 0, sizeof(*out));
	out->usage_size = sizeof(*out);
	memcpy(out->tenant, p->tenant, sizeof(out->tenant) - 1);
	out->quota = p->quota;
	out->used = p->used;
	out->pending = p->pending;
	out->evictable = p->evictable;
	out->evictions = p->evictions;
	out->evicted_bytes = p->evicted_bytes;
	out->enospc = p->enospc;
	frame_req_done(&r);
	return 0;
}

/* ---- stats text ---- */

static const enum maru_data_path stat_paths[] = { MARU_DATA_SHM, MARU_DATA_RDMA, MARU_DATA_TCP };
#define N_STAT_PATHS (sizeof(stat_paths) / sizeof(stat_paths[0]))

static void stats_dp(struct prom *t, struct maru_client *c, const char *metric, int bytes)
{
	char labels[64];
	size_t i;

	prom_head(t, metric, "counter", bytes ?
		  "Bytes moved by this client per data path and direction." :
		  "Transfers moved by this client per data path and direction.");
	for (i = 0; i < N_STAT_PATHS; i++) {
		const struct dp_counters *d = &c->st.dp[stat_paths[i]];
		const char *name = session_dp_name(stat_paths[i]);

		snprintf(labels, sizeof(labels), "path=\"%s\",dir=\"read\"", name);
		prom_sample(t, metric, labels, bytes ? d->rd_bytes : d->rd_ops);
		snprintf(labels, sizeof(labels), "path=\"%s\",dir=\"write\"", name);
		prom_sample(t, metric, labels, bytes ? d->wr_bytes : d->wr_ops);
	}
}

/* Each data path's own lines, through its table (today rdma's only). */
static void stats_paths(struct prom *t, struct maru_client *c)
{
	const struct dp_ops *dp;
	size_t i;

	for (i = 0; i < N_STAT_PATHS; i++) {
		dp = dp_of(stat_paths[i]);
		if (dp->stats)
			dp->stats(c, t);
	}
}

/* The histograms: each request op from its first call, each path's transfers. */
static void stats_latency(struct prom *t, struct maru_client *c)
{
	static const char *const dirs[2] = { "read", "write" };
	char labels[64];
	unsigned int op;
	size_t i, w;

	prom_head(t, "maru_client_request_duration_seconds", "histogram",
		  "Round trip of a request to marud (retries included), by op.");
	for (op = 1; op < OP_MAX; op++)
		if (!hist_empty(&c->st.call_lat[op]))
			hist_put_label(t, "maru_client_request_duration_seconds", "op",
				       proto_op_name((uint16_t)op), &c->st.call_lat[op]);
	prom_head(t, "maru_client_transfer_duration_seconds", "histogram",
		  "Time of one transfer (one pread or pwrite) by data path and direction.");
	for (i = 0; i < N_STAT_PATHS; i++)
		for (w = 0; w < 2; w++) {
			snprintf(labels, sizeof(labels), "path=\"%s\",dir=\"%s\"",
				 session_dp_name(stat_paths[i]), dirs[w]);
			hist_put(t, "maru_client_transfer_duration_seconds", labels,
				 &c->st.dp_lat[stat_paths[i]][w]);
		}
}

static void stats_client(struct prom *t, struct maru_client *c)
{
	enum maru_data_path cur;
	uint64_t gen;
	size_t i;
	int down;

	pthread_mutex_lock(&c->lock);
	down = c->down;
	gen = c->s.generation;
	pthread_mutex_unlock(&c->lock);
	cur = session_dp_kind(c);
	stats_dp(t, c, "maru_client_bytes_total", 1);
	stats_dp(t, c, "maru_client_ops_total", 0);
	prom_counter(t, "maru_client_requests_total", "Requests sent to marud.", c->st.requests);
	prom_counter(t, "maru_client_spin_replies_total",
		     "Replies that came while the caller polled for them (opts.spin_us).",
		     c->st.spin_replies);
	prom_counter(t, "maru_client_spin_misses_total",
		     "Polls for a reply that ran out of time (opts.spin_us).", c->st.spin_misses);
	prom_counter(t, "maru_client_reconnects_total", "Sockets reopened after an outage.",
		     c->st.reconnects);
	prom_counter(t, "maru_client_timeouts_total", "Calls that gave up with ETIMEDOUT.",
		     c->st.timeouts);
	prom_counter(t, "maru_client_abandoned_total",
		     "Pending versions abandoned at publish because a write to them failed.",
		     c->st.poisoned);
	prom_counter(t, "maru_client_sessions_total",
		     "New sessions after the first (restart or expiry).", c->st.new_sessions);
	prom_head(t, "maru_client_data_path", "gauge", "Data path in use (1 for the active one).");
	for (i = 0; i < N_STAT_PATHS; i++)
		prom_label(t, "maru_client_data_path", "path", session_dp_name(stat_paths[i]),
			   cur == stat_paths[i]);
	stats_paths(t, c);
	prom_gauge(t, "maru_client_connected", "1 while marud answers, 0 during an outage.",
		   !down);
	prom_gauge(t, "maru_client_generation", "Pool generation of the current session.", gen);
	stats_latency(t, c);
}

/*
 * STATS while marud is out of reach waits this long at most: a scraper
 * asks every few seconds and wants the client's own figures
 * (maru_client_connected 0) rather than a wait of opts.timeout_ms.
 */
#define STATS_AWAY_MS	200

/* marud could not be reached (not: it answered with an error) */
static int unreachable(int rc)
{
	return rc == -ETIMEDOUT || rc == -ECONNREFUSED || rc == -EHOSTUNREACH ||
	       rc == -ENETUNREACH || rc == -ECONNRESET || rc == -ENOTCONN || rc == -EPIPE;
}

ssize_t maru_stats_text(struct maru_client *c, char *buf, size_t len)
{
	struct req r = { .op = OP_STATS };
	struct prom t = PROM_INIT;
	ssize_t n;
	int rc;

	if (!c || (!buf && len))
		return -EINVAL;
	if (c->route)
		return route_stats_text(c, buf, len);
	rc = transport_down(c) ? transport_call_within(c, &r, STATS_AWAY_MS) :
				 transport_call(c, &r);
	if (rc && !unreachable(rc))
		return rc;
	if (!rc)
		prom_raw(&t, r.rep ? r.rep : "", r.rlen);
	frame_req_done(&r);
	if (t.len && t.buf[t.len - 1] != '\n')
		prom_raw(&t, "\n", 1);
	stats_client(&t, c);
	if (t.err) {
		rc = t.err;
		prom_fini(&t);
		return rc;
	}
	if (len) {
		size_t k = t.len < len - 1 ? t.len : len - 1;

		memcpy(buf, t.buf, k);
		buf[k] = '\0';
	}
	n = (ssize_t)t.len;
	prom_fini(&t);
	return n;
}
