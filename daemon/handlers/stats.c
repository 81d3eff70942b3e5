// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/stats.c: the pool-wide reports: STATFS (the directory's
 * byte and name counts in wire form) and the Prometheus text exposition
 * (format 0.0.4) of STATS: pool accounting, directory counters, server
 * counters (the event loops' among them) and one request counter per served
 * op, written with the shared Prometheus writer (prom.h). No lock of its
 * own; the counters it reads are atomics.
 */
#include <stdatomic.h>
#include <stddef.h>

#include "ext.h"
#include "handlers.h"
#include "prom.h"
#include "rdma.h"
#include "server_priv.h"

HANDLER(hdl_statfs)
{
	struct dir_stats st;
	struct proto_statfs r;

	dir_stats(c->srv->dir, &st);
	r.capacity = st.capacity;
	r.free = st.free;
	r.evictable = st.evictable;
	r.used = st.used;
	r.pending = st.pending;
	r.orphaned = st.orphaned;
	r.names = st.names;
	r.dirs = st.dirs;
	r.versions = st.versions;
	r.block = st.block;
	return proto_buf_put(out, &r, sizeof(r));
}

struct metric {
	const char *name, *type, *help;
	uint64_t value;
};

static void put_metric(struct prom *p, const struct metric *m)
{
	prom_head(p, m->name, m->type, m->help);
	prom_sample(p, m->name, NULL, m->value);
}

/* What p holds goes to out; p is emptied for the next part. */
static int flush(struct prom *p, struct pbuf *out)
{
	int rc = p->err ? p->err : proto_buf_put(out, p->buf, p->len);

	prom_reset(p);
	return rc;
}

/* Requests of op, off the loops and on each of them. */
static uint64_t ops_of(struct server *srv, unsigned int op)
{
	uint64_t n = atomic_load(&srv->ops[op]);
	unsigned int i;

	for (i = 0; i < CONN_LOOPS_MAX; i++)
		n += atomic_load_explicit(&srv->loops[i].ops[op], memory_order_relaxed);
	return n;
}

static void put_ops(struct server *srv, const unsigned char served[OP_MAX], struct prom *p)
{
	unsigned int op;

	prom_head(p, "marud_ops_total", "counter", "Requests handled, by op.");
	for (op = 1; op < OP_MAX; op++)
		if (served[op])
			prom_label(p, "marud_ops_total", "op", proto_op_name((uint16_t)op),
				   ops_of(srv, op));
}

/* The event loops' passes and sends, summed over the loops. */
static void put_loops(struct server *srv, struct prom *p)
{
	struct metric m[] = {
		{ "marud_loop_passes_total", "counter",
		  "Event loop passes: an epoll_wait() that gave ready connections, "
		  "their requests run, their replies sent.", 0 },
		{ "marud_loop_sends_total", "counter",
		  "Reply sends by the event loops: one per connection per pass, "
		  "however many requests it answers.", 0 },
	};
	unsigned int i;

	for (i = 0; i < CONN_LOOPS_MAX; i++) {
		m[0].value += atomic_load_explicit(&srv->loops[i].passes, memory_order_relaxed);
		m[1].value += atomic_load_explicit(&srv->loops[i].sends, memory_order_relaxed);
	}
	put_metric(p, &m[0]);
	put_metric(p, &m[1]);
}

/* Hints and the region extension (handlers/hint.c, daemon/ext/). */
static void put_hints(struct server *srv, struct prom *p)
{
	struct ext_stats z = { 0 }, *e = srv->ext ? ext_stats(srv->ext) : &z;
	const struct metric m[] = {
		{ "marud_hints_refused_total", "counter",
		  "Hints refused: a range this connection may not read, or past its end.",
		  atomic_load(&srv->hints_refused) },
		{ "marud_hints_over_limit_total", "counter",
		  "Read hints refused: the connection had the most open hint requests.",
		  atomic_load(&srv->hints_over_limit) },
		{ "marud_hints_total", "counter", "Checked hints given to the extension.",
		  atomic_load(&e->hints) },
		{ "marud_hints_failed_total", "counter",
		  "Hints the extension failed (logged, ignored).", atomic_load(&e->failed) },
		{ "marud_hint_waits_total", "counter", "read_wait / write_wait calls.",
		  atomic_load(&e->waits) },
		{ "marud_retired_total", "counter", "Freed ranges told to the extension.",
		  atomic_load(&e->retired) },
		{ "marud_region_in_use", "gauge",
		  "0 while the extension keeps the pool out of use.",
		  (uint64_t)ext_region_ok(srv->ext) },
	};
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		put_metric(p, &m[i]);
}

/* Event subscribers' acknowledgements (subscribe.c). */
static void put_acks(struct server *srv, struct prom *p)
{
	const struct metric m[] = {
		{ "marud_ack_subscribers", "gauge",
		  "Event subscribers that acknowledge applied events and are waited on.",
		  atomic_load(&srv->nacking) },
		{ "marud_ack_timeouts_total", "counter",
		  "Changes whose wait for a subscriber's acknowledgement timed out.",
		  atomic_load(&srv->ack_timeouts) },
		{ "marud_ack_drops_total", "counter",
		  "Subscribers dropped from the set changes wait on (a missed deadline).",
		  atomic_load(&srv->ack_drops) },
		{ "marud_ack_rejoins_total", "counter",
		  "Dropped subscribers that acknowledged again and are waited on again.",
		  atomic_load(&srv->ack_rejoins) },
	};
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		put_metric(p, &m[i]);
}

/* After the pool's and directory's: rdma's (its own text), loops', acks', hints', ops'. */
static int put_rest(struct server *srv, const unsigned char served[OP_MAX], struct prom *p,
		    struct pbuf *out)
{
	int rc = rdma_stats(srv->rdma, out);

	if (rc)
		return rc;
	put_loops(srv, p);
	put_acks(srv, p);
	put_hints(srv, p);
	put_ops(srv, served, p);
	return flush(p, out);
}

int hdl_stats_text(struct server *srv, const unsigned char served[OP_MAX], struct pbuf *out)
{
	struct prom p = PROM_INIT;
	struct dir_stats st;
	size_t i;
	int rc;

	dir_stats(srv->dir, &st);
	const struct metric m[] = {
		{ "marud_pool_capacity_bytes", "gauge", "Pool data bytes.", st.capacity },
		{ "marud_pool_free_bytes", "gauge", "Unallocated bytes.", st.free },
		{ "marud_pool_used_bytes", "gauge", "Bytes of published versions.", st.used },
		{ "marud_pool_pending_bytes", "gauge", "Bytes of pending versions.", st.pending },
		{ "marud_pool_orphaned_bytes", "gauge",
		  "Bytes of unlinked versions still leased.", st.orphaned },
		{ "marud_pool_evictable_bytes", "gauge",
		  "Published bytes with no lease and no pin.", st.evictable },
		{ "marud_pool_pinned_bytes", "gauge",
		  "Bytes of published versions under a TTL pin.", st.pinned_bytes },
		{ "marud_pins", "gauge", "Versions under a TTL pin.", st.pins },
		{ "marud_pin_expired_total", "counter", "TTL pins that ran out.",
		  st.pin_expired },
		{ "marud_pin_refused_total", "counter",
		  "TTL pins refused: the pinned bytes would pass a cap.", st.pin_refused },
		{ "marud_names", "gauge", "Names bound to a published version.", st.names },
		{ "marud_dirs", "gauge", "Namespace directories.", st.dirs },
		{ "marud_versions", "gauge", "Live versions.", st.versions },
		{ "marud_leases", "gauge", "Leases held.", st.leases },
		{ "marud_sessions", "gauge", "Client sessions, attached or in grace.",
		  st.sessions },
		{ "marud_connections", "gauge", "Open client connections.",
		  atomic_load(&srv->nconns) },
		{ "marud_publishes_total", "counter", "Versions published.", st.publishes },
		{ "marud_replaces_total", "counter", "Publishes that replaced a version.",
		  st.replaces },
		{ "marud_unlinks_total", "counter", "Names unlinked.", st.unlinks },
		{ "marud_creates_total", "counter", "Pending versions created.", st.creates },
		{ "marud_abandons_total", "counter", "Pending versions abandoned.",
		  st.abandons },
		{ "marud_evictions_total", "counter", "Versions evicted.", st.evictions },
		{ "marud_evicted_bytes_total", "counter", "Bytes evicted.", st.evicted_bytes },
		{ "marud_enospc_total", "counter", "Allocations refused.", st.enospc },
		{ "marud_lease_grants_total", "counter", "Leases granted.", st.lease_grants },
		{ "marud_bytes_read_total", "counter", "Bytes sent by TCP READ.",
		  atomic_load(&srv->bytes_read) },
		{ "marud_bytes_written_total", "counter", "Bytes received by TCP WRITE.",
		  atomic_load(&srv->bytes_written) },
		{ "marud_rejected_connections_total", "counter",
		  "Connections refused over max-conns.", atomic_load(&srv->rejected_conns) },
		{ "marud_connection_handoffs_total", "counter",
		  "Connections the event loop handed to a thread of their own (a request "
		  "that waits on its peer or on time, or copies pool bytes).",
		  atomic_load(&srv->conn_handoffs) },
		{ "marud_event_seq", "counter", "Sequence of the last event.", st.event_seq },
		{ "marud_journal_checkpoints_total", "counter",
		  "Journal checkpoints that walked the directory under its lock.", st.ckpt_sync },
		{ "marud_journal_background_checkpoints_total", "counter",
		  "Journal checkpoints written by a forked child while marud served.",
		  st.ckpt_bg },
		{ "marud_journal_background_failures_total", "counter",
		  "Background checkpoints that failed (the next ones run under the lock).",
		  st.ckpt_failed },
		{ "marud_journal_checkpoint_hold_max_microseconds", "gauge",
		  "Longest directory-lock hold of one checkpoint step (walk, fork, copy).",
		  st.ckpt_hold_ns / 1000 },
		{ "marud_generation", "gauge", "Pool generation of this marud.",
		  srv->generation },
		{ "marud_accounting_ok", "gauge", "1 if free+used+pending+orphaned==capacity.",
		  st.free + st.used + st.pending + st.orphaned == st.capacity },
	};

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		put_metric(&p, &m[i]);
	rc = flush(&p, out);
	if (!rc)
		rc = put_rest(srv, served, &p, out);
	prom_fini(&p);
	return rc;
}
