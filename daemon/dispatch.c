// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/dispatch.c: what runs a request. It owns the handler table (which
 * op needs HELLO first, which goes through the reply cache, which skips the
 * generation check), the gates before a handler (AUTH when a key is set,
 * HELLO, the pool generation), the use of the session's reply cache (a
 * replayed request id is answered with the recorded reply, never re-run),
 * the logging of refused version requests, the wait for subscribers'
 * acknowledgements after a change, and the reply. The per-op request
 * counters are counted here and listed by STATS. No lock of its own.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "confine.h"
#include "dir.h"
#include "dispatch.h"
#include "ext.h"
#include "handlers/handlers.h"
#include "log.h"
#include "server_priv.h"
#include "session.h"
#include "subscribe.h"
#include "wire.h"

#define H_SESSION	1u	/* needs HELLO first */
#define H_CACHED	2u	/* mutating: goes through the reply cache */
#define H_NOGEN		4u	/* no generation check (handshake, PING) */

struct handler {
	handler_fn fn;
	unsigned int flags;
};

static const struct handler *handler_of(uint16_t op);

/* STATS lists one request counter per op of this table. */
static int hdl_stats(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	unsigned char served[OP_MAX];
	unsigned int op;

	for (op = 0; op < OP_MAX; op++)
		served[op] = handler_of((uint16_t)op) != NULL;
	return hdl_stats_text(c->srv, served, out);
}

static const struct handler handlers[OP_MAX] = {
	[OP_PING] = { hdl_ping, H_NOGEN },
	[OP_HELLO] = { hdl_hello, H_NOGEN },
	[OP_AUTH] = { hdl_auth, H_NOGEN },
	[OP_STATFS] = { hdl_statfs, H_SESSION },
	[OP_STATS] = { hdl_stats, H_SESSION },
	[OP_MKDIR] = { hdl_mkdir, H_SESSION | H_CACHED },
	[OP_RMDIR] = { hdl_rmdir, H_SESSION | H_CACHED },
	[OP_LOOKUP] = { hdl_lookup, H_SESSION },
	[OP_GETATTR] = { hdl_getattr, H_SESSION },
	[OP_SETATTR] = { hdl_setattr, H_SESSION | H_CACHED },
	[OP_RENAME] = { hdl_rename, H_SESSION | H_CACHED },
	[OP_UNLINK] = { hdl_unlink, H_SESSION | H_CACHED },
	[OP_READDIR] = { hdl_readdir, H_SESSION },
	[OP_EXISTS] = { hdl_exists, H_SESSION },
	[OP_CREATE] = { hdl_create, H_SESSION | H_CACHED },
	[OP_RESERVE] = { hdl_reserve, H_SESSION | H_CACHED },
	[OP_TRUNCATE] = { hdl_truncate, H_SESSION | H_CACHED },
	[OP_PUBLISH] = { hdl_publish, H_SESSION | H_CACHED },
	[OP_ABANDON] = { hdl_abandon, H_SESSION | H_CACHED },
	[OP_OPEN] = { hdl_open, H_SESSION | H_CACHED },
	[OP_RELEASE] = { hdl_release, H_SESSION | H_CACHED },
	[OP_EXTENTS] = { hdl_extents, H_SESSION },
	[OP_READ] = { hdl_read, H_SESSION },
	[OP_WRITE] = { hdl_write, H_SESSION | H_CACHED },
	[OP_HINT] = { hdl_hint, H_SESSION },
	[OP_RKEY] = { hdl_rkey, H_SESSION },
	[OP_HINTV] = { hdl_hintv, H_SESSION },
	[OP_HINT_WAIT] = { hdl_hint_wait, H_SESSION },
	[OP_SUBSCRIBE] = { hdl_subscribe, H_SESSION },
	[OP_SYMLINK] = { hdl_symlink, H_SESSION | H_CACHED },
	[OP_READLINK] = { hdl_readlink, H_SESSION },
	[OP_LINK] = { hdl_link, H_SESSION | H_CACHED },
	[OP_MKNOD] = { hdl_mknod, H_SESSION | H_CACHED },
	[OP_PIN] = { hdl_pin, H_SESSION },
};

static const struct handler *handler_of(uint16_t op)
{
	if (op >= OP_MAX || !handlers[op].fn)
		return NULL;
	return &handlers[op];
}

/* Replay a recorded reply; a too-large one is rebuilt from its version. */
static int replay(struct conn *c, const struct proto_hdr *h, struct pbuf *out)
{
	const struct cache_reply *r = c->cached;
	int rc;

	if (!r->too_large || r->status)
		return wire_reply(c, h, r->status, r->payload, r->len);
	rc = hdl_reply_extents(c, r->ino, 0, out);
	if (!rc)
		confine_reply(c, h->op, out);	/* rebuilt: the root shown as 1 again */
	return wire_reply(c, h, rc, out->data, out->len);
}

/* After a change that emitted events (seq moved past before), wait for acks. */
static void acks_after(struct conn *c, uint16_t op, uint64_t before, unsigned int ms)
{
	uint64_t seq = dir_event_seq(c->srv->dir);

	/* Only PUBLISH runs under no kernel directory lock of the requester. */
	if (seq > before)
		subs_acks_wait(c, seq, ms, op != OP_PUBLISH);
}

/*
 * A request on a version this session may not touch that way (another
 * session's pending version, a write through a lease: -EPERM) or outside
 * it (-EINVAL) is refused, and logged: marufs-design(7) §8. A few per connection, so
 * a hostile client cannot flood the log.
 */
#define REFUSALS_LOGGED	8

static void refused(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, int status)
{
	uint64_t ino = 0;

	if ((status != -EPERM && status != -EINVAL) || h->op < OP_RESERVE || h->op > OP_HINT ||
	    c->refusals >= REFUSALS_LOGGED)
		return;
	/* every request of that range starts with the version id */
	if (len >= sizeof(ino))
		memcpy(&ino, p, sizeof(ino));
	/* a client after a reconnect, naming its ended session's versions */
	if (status == -EPERM && hdl_session_reborn(c)) {
		log_debug("%s: %s of version %llu refused: of the session this client had "
			  "before it reconnected", c->peer, proto_op_name(h->op),
			  (unsigned long long)ino);
		return;
	}
	log_warnx("%s: %s of version %llu refused: %s%s", c->peer, proto_op_name(h->op),
		  (unsigned long long)ino, status == -EPERM ?
		  "not this session's to do that with" : "offset, length or size out of range",
		  ++c->refusals == REFUSALS_LOGGED ? " (further refusals not logged)" : "");
}

static int execute(struct conn *c, const struct handler *hd, const struct proto_hdr *h,
		   const uint8_t *p, uint32_t len, struct pbuf *out)
{
	enum cache_result cr = CACHE_BYPASS;
	unsigned int ack_ms = subs_ack_wait_ms(c->srv, h->op);
	uint64_t seq0 = 0;
	int status;

	if (hd->flags & H_CACHED)
		cr = session_cache_begin(c->sess, h->reqid, h->op, c->cached);
	if (cr == CACHE_HIT) {
		log_debug("%s: %s reqid %llu answered from the reply cache", c->peer,
			  proto_op_name(h->op), (unsigned long long)h->reqid);
		if (wire_skip_unread(c))
			return -ECONNRESET;
		return replay(c, h, out);
	}
	c->cache_ino = 0;
	/* Nobody acknowledges: skip even the event sequence lookups. */
	if (ack_ms && !atomic_load(&c->srv->nacking))
		ack_ms = 0;
	if (ack_ms)
		seq0 = dir_event_seq(c->srv->dir);
	/* a scoped session's ids and rights (confine.h); p is c's own buffer */
	status = confine_request(c, h, (uint8_t *)p, len);
	if (!status)
		status = hd->fn(c, h, p, len, out);
	if (!status)
		confine_reply(c, h->op, out);
	if (!status && out->len > atomic_load(&c->srv->max_frame))
		status = -EOVERFLOW;
	refused(c, h, p, len, status);
	/* A failure whose socket broke under it (a WRITE whose payload broke off)
	 * never reaches the client: its retry must run again, not be told it. */
	if (cr == CACHE_MISS && status && c->undeliverable)
		session_cache_forget(c->sess, h->reqid);
	else if (cr == CACHE_MISS)
		session_cache_finish(c->sess, h->reqid, status, out->data,
				     status ? 0 : out->len, c->cache_ino);
	if (!status && ack_ms)
		acks_after(c, h->op, seq0, ack_ms);
	if (c->replied)
		return 0;
	if (wire_skip_unread(c))
		return -ECONNRESET;
	return wire_reply(c, h, status, out->data, out->len);
}

/*
 * Ops that hand out or touch pool bytes; refused while the region
 * extension keeps the pool out of use (mapped() failed, or the memory
 * generation is unknown).
 */
static int pool_op(uint16_t op)
{
	return op == OP_CREATE || op == OP_OPEN || op == OP_RESERVE || op == OP_TRUNCATE ||
	       op == OP_EXTENTS || op == OP_READ || op == OP_WRITE;
}

/* Gates before a handler runs; > 0: answered (or closing) already. */
static int gate(struct conn *c, const struct handler *hd, const struct proto_hdr *h)
{
	if (c->srv->have_key && !c->authed && h->op != OP_AUTH) {
		log_warnx("%s: %s before AUTH; closing", c->peer, proto_op_name(h->op));
		c->close = 1;
		wire_reply(c, h, -EACCES, NULL, 0);
		return 1;
	}
	if ((hd->flags & H_SESSION) && !c->sess) {
		wire_violation(c, h->op, "request before HELLO");
		wire_reply(c, h, -EPROTO, NULL, 0);
		return 1;
	}
	if (!(hd->flags & H_NOGEN) && h->generation != c->srv->generation) {
		if (wire_skip_unread(c))
			return -ECONNRESET;
		wire_reply(c, h, -ESTALE, NULL, 0);
		return 1;
	}
	if (pool_op(h->op) && !ext_region_ok(c->srv->ext)) {
		if (wire_skip_unread(c))
			return -ECONNRESET;
		wire_reply(c, h, -EIO, NULL, 0);
		return 1;
	}
	return 0;
}

int dispatch_header(struct conn *c, const struct proto_hdr *h)
{
	int rc = proto_hdr_check(h, atomic_load(&c->srv->max_frame));

	if (!rc && handler_of(h->op))
		return 0;
	wire_violation(c, h->op, rc == -EMSGSIZE ? "frame too large" : "bad header or op");
	/* The header is sound but for its length: say why before closing. */
	if (rc == -EMSGSIZE && handler_of(h->op))
		wire_reply(c, h, -EMSGSIZE, NULL, 0);
	return -EPROTO;
}

int dispatch_request(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, int check, struct pbuf *out)
{
	const struct handler *hd = handler_of(h->op);
	int rc;

	if (!hd)
		return -EPROTO;
	/* a loop's own counter: the loops share no cache line per request */
	if (c->loop)
		atomic_fetch_add_explicit(&c->loop->ops[h->op], 1, memory_order_relaxed);
	else
		atomic_fetch_add(&c->srv->ops[h->op], 1);
	out->len = 0;
	c->replied = 0;
	c->undeliverable = 0;
	rc = gate(c, hd, h);
	/* A well-framed request naming an invalid entry is the caller's error. */
	if (rc == 0 && check)
		rc = wire_reply(c, h, check, NULL, 0);
	else if (rc == 0)
		rc = execute(c, hd, h, p, len, out);
	return rc;
}
