/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/transport.c: a client's sockets to marud and the one request path. Every
 * public call builds a request and calls transport_call(), which takes an idle
 * socket (opening one, up to opts.max_conns, else waiting), sends the frame
 * and reads the reply. A socket that fails is closed and the request is sent
 * again with the SAME request id on a fresh socket (HELLO reclaims the
 * session by token; marud's reply cache makes the resend idempotent), with
 * backoff, until opts.timeout_ms since the call began. A HELLO that shows a
 * new generation or a lost session starts a new session (session.c, which
 * only records it: nothing here waits on the data path). transport_dial()
 * is the one connect+AUTH+HELLO, for these sockets and the event stream's.
 *
 * One deadline per call, counted from its start: every wait (for an idle
 * socket, for hello_lock, for the connect, for the reply, the backoff)
 * ends at it, and each socket's SO_RCVTIMEO/SO_SNDTIMEO is cut to what is
 * left, so that however many calls wait at once each returns by its own
 * deadline. Each wait also ends at once with -EINTR when the calling
 * thread's cancel token fires (cancel.c).
 *
 * A request that changes state (changes_state()) whose reply does not
 * come keeps a quarter of the budget to ask again on a fresh socket: the
 * resend, same request id, is answered from marud's reply cache, so a
 * reply lost to a cut link or a dead socket never hides an outcome that
 * a reconnect within timeout_ms can learn. A PUBLISH unanswered before a
 * marud restart is asked again in the new generation (ask_again()):
 * marud answers a publish of a version it has published with its
 * attributes, so the caller learns that it took effect.
 *
 * Locks: hello_lock serialises connect+AUTH+HELLO so that concurrent
 * reconnects after a marud restart end up in one new session, not several;
 * c->lock guards the socket table and the session and is never held across
 * I/O. Order: hello_lock -> lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <poll.h>

#include "auth.h"
#include "cancel.h"
#include "failpoint.h"
#include "frame.h"
#include "session.h"
#include "sockio.h"
#include "tlsdial.h"
#include "transport.h"

#define BACKOFF_MIN_MS	10
#define BACKOFF_MAX_MS	500

static int hello(int fd, const struct maru_client *c, uint32_t flags,
		 const uint8_t *token, struct proto_hello_rep *rep, uint64_t deadline)
{
	struct proto_hello_req hq;
	struct proto_hdr h;
	struct req r = { .op = OP_HELLO, .p1 = &hq, .n1 = sizeof(hq),
			 .rbuf = rep, .rcap = sizeof(*rep) };
	int rc;

	memset(&hq, 0, sizeof(hq));
	hq.flags = flags;
	/* marud answers the rdma fields only if it has an rdma listener */
	if (c->opts.data_path == MARU_DATA_AUTO || c->opts.data_path == MARU_DATA_RDMA)
		hq.flags |= HELLO_F_RDMA;
	/* a scoped key is never handed the pool: marud refuses it (EPERM) */
	if (c->opts.data_path == MARU_DATA_SHM)
		hq.flags |= HELLO_F_SHM;
	hq.proto_version = PROTO_VERSION;
	if (token)
		memcpy(hq.token, token, sizeof(hq.token));
	hq.pid = (uint64_t)getpid();
	memcpy(hq.client_name, c->name, sizeof(hq.client_name));
	/* reqid 0: HELLO belongs to no session yet and is never cached */
	proto_hdr_init(&h, OP_HELLO, sizeof(hq), 0, 0, 0);
	rc = proto_send(fd, &h, r.p1, r.n1, NULL, 0);
	/* the thread's cancel token ends the wait for an answer too */
	if (!rc)
		rc = cancel_poll(fd, POLLIN, deadline);
	if (!rc)
		rc = frame_reply(fd, PROTO_MAX_FRAME + sizeof(*rep), &h, &r);
	if (rc)
		return rc;
	if (r.status == -EPERM && (hq.flags & HELLO_F_SHM))
		clog_warnx(c, "%s: marud refused data=shm: key '%s' is scoped, and a scoped key "
			   "is never handed the pool mapping (mount with data=tcp)", c->uri,
			   c->key_name);
	if (r.status)
		return r.status;
	if (r.rlen != sizeof(*rep))
		return -EPROTO;
	rep->pool_path[sizeof(rep->pool_path) - 1] = '\0';
	return 0;
}

int transport_dial(struct maru_client *c, unsigned int ms, uint32_t flags,
		   const uint8_t *token, struct proto_hello_rep *rep)
{
	uint64_t deadline = mono_ms() + (ms ? ms : 1);
	int fd, rc;

	fd = addr_connect_stop(&c->addr, ms ? ms : 1, cancel_fd());
	/* with tls_ca, TLS before any byte of ours (tlsdial.c says why not) */
	if (fd >= 0)
		fd = tlsdial_wrap(c, fd, deadline);
	if (fd < 0)
		return fd;
	/* the handshake within what is left of the caller's budget; the
	 * socket's later round trips get a whole timeout_ms each */
	rc = frame_set_timeout(fd, ms ? ms : 1);
	if (!rc && c->has_key)
		rc = auth_exchange(c, fd);
	if (!rc)
		rc = hello(fd, c, flags, token, rep, deadline);
	rc = tlsdial_ended(c, rc);
	if (rc == -EACCES && !c->has_key)
		clog_warnx(c, "no key: marud requires one (give the key file marud's key-file names)");
	if (rc == -EPROTONOSUPPORT)
		clog_warnx(c, "marud at %s speaks only TLS on tcp: give tls_ca= (the CA of its "
			   "certificate)", c->uri);
	if (!rc)
		rc = frame_set_timeout(fd, c->opts.timeout_ms);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/*
 * A socket of our session (reclaimed by token if we have one), by deadline:
 * the wait for hello_lock (another thread connecting) counts too.
 */
static int conn_open(struct maru_client *c, uint64_t deadline, uint64_t *epoch)
{
	struct proto_hello_rep *rep;
	uint8_t token[16];
	uint64_t now;
	int fd, have;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	fd = cancel_lock(&c->hello_lock, deadline);
	if (fd) {
		free(rep);
		return fd;
	}
	now = mono_ms();
	pthread_mutex_lock(&c->lock);
	have = c->s.established;
	memcpy(token, c->s.token, sizeof(token));
	pthread_mutex_unlock(&c->lock);
	fd = transport_dial(c, deadline > now ? (unsigned int)(deadline - now) : 1,
			    HELLO_F_DIRATTR | (have ? HELLO_F_RECLAIM : 0), have ? token : NULL, rep);
	if (fd >= 0)
		*epoch = session_update(c, rep);
	pthread_mutex_unlock(&c->hello_lock);
	free(rep);
	return fd;
}

/* Close every idle socket (they are likely dead too, or of an old session). */
static void close_idle_locked(struct maru_client *c)
{
	unsigned int i;

	for (i = 0; i < c->nconns; i++) {
		if (c->conns[i].fd >= 0 && !c->conns[i].busy) {
			close(c->conns[i].fd);
			c->conns[i].fd = -1;
		}
	}
}

void transport_close_conns(struct maru_client *c)
{
	pthread_mutex_lock(&c->lock);
	close_idle_locked(c);
	pthread_mutex_unlock(&c->lock);
}

/* A slot to use: an idle open socket of this session, else a closed one. */
static struct conn *pick_locked(struct maru_client *c, int *need_open)
{
	struct conn *closed = NULL;
	unsigned int i;

	for (i = 0; i < c->nconns; i++) {
		struct conn *k = &c->conns[i];

		if (k->busy)
			continue;
		if (k->fd >= 0 && k->epoch != c->s.epoch) {
			close(k->fd);
			k->fd = -1;
		}
		if (k->fd >= 0) {
			*need_open = 0;
			return k;
		}
		if (!closed)
			closed = k;
	}
	*need_open = 1;
	return closed;
}

/*
 * Wait for a socket to become idle: 0 to look again, -ETIMEDOUT at the
 * deadline, -EINTR when the thread's token fired (looked at every
 * CANCEL_SLICE_MS when the thread has one).
 */
static int wait_idle_locked(struct maru_client *c, uint64_t deadline)
{
	uint64_t now = mono_ms(), until = deadline;
	struct timespec ts;
	int rc;

	if (cancel_check())
		return -EINTR;
	if (now >= deadline)
		return -ETIMEDOUT;
	if (cancel_fd() >= 0 && deadline - now > CANCEL_SLICE_MS)
		until = now + CANCEL_SLICE_MS;
	ns_to_timespec(until * 1000000u, &ts);
	rc = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	return rc == ETIMEDOUT || rc == 0 ? 0 : -rc;
}

static int open_slot(struct maru_client *c, struct conn *k, uint64_t deadline)
{
	uint64_t epoch = 0;
	int fd, down;

	fd = conn_open(c, deadline, &epoch);
	pthread_mutex_lock(&c->lock);
	down = c->down;
	if (fd < 0) {
		k->busy = 0;
		pthread_cond_signal(&c->cond);
	} else {
		k->fd = fd;
		k->epoch = epoch;
		k->tmo_ms = c->opts.timeout_ms;	/* as transport_dial left it */
	}
	pthread_mutex_unlock(&c->lock);
	if (fd >= 0 && down)
		atomic_fetch_add(&c->st.reconnects, 1);
	return fd < 0 ? fd : 0;
}

static int conn_get(struct maru_client *c, uint64_t deadline, struct conn **out)
{
	struct conn *k;
	int need_open, rc = 0;

	pthread_mutex_lock(&c->lock);
	while (!(k = pick_locked(c, &need_open)) && rc == 0)
		rc = wait_idle_locked(c, deadline);
	if (!k) {
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	k->busy = 1;
	pthread_mutex_unlock(&c->lock);
	*out = k;
	return need_open ? open_slot(c, k, deadline) : 0;
}

static void conn_put(struct maru_client *c, struct conn *k, int broken)
{
	pthread_mutex_lock(&c->lock);
	if (broken || k->epoch != c->s.epoch) {
		close(k->fd);
		k->fd = -1;
	}
	if (broken)
		close_idle_locked(c);
	k->busy = 0;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void note_down(struct maru_client *c, int err)
{
	uint64_t zero = 0;
	int first;

	pthread_mutex_lock(&c->lock);
	first = !c->down;
	c->down = 1;
	pthread_mutex_unlock(&c->lock);
	atomic_compare_exchange_strong(&c->down_since_ms, &zero, mono_ms());
	if (first)
		clog_warn(c, err, "marud at %s unreachable", c->uri);
}

static void note_up(struct maru_client *c)
{
	int was;

	atomic_store(&c->last_ok_ms, mono_ms());
	atomic_store(&c->down_since_ms, 0);
	pthread_mutex_lock(&c->lock);
	was = c->down;
	c->down = 0;
	pthread_mutex_unlock(&c->lock);
	if (was)
		clog_info(c, "marud at %s reachable again", c->uri);
}

/* Errors that no retry can fix (EPERM: data=shm refused to a scoped key). */
static int fatal_err(int rc)
{
	return rc == -EACCES || rc == -EINVAL || rc == -ENOMEM || rc == -EPROTO ||
	       rc == -EPROTONOSUPPORT || rc == -EPERM;
}

/*
 * -ESTALE from a generation we did not know yet: marud restarted under us.
 * Reconnect once so the new session (and the generation callback) happens
 * now, then let the caller see -ESTALE.
 */
static void stale_refresh(struct maru_client *c, const struct req *r, uint64_t deadline)
{
	struct conn *k;
	uint64_t gen;

	pthread_mutex_lock(&c->lock);
	gen = c->s.generation;
	if (gen != r->rgen)
		close_idle_locked(c);
	pthread_mutex_unlock(&c->lock);
	if (gen != r->rgen && conn_get(c, deadline, &k) == 0)
		conn_put(c, k, 0);
}

/*
 * Before blocking on a reply, poll for it for up to opts.spin_us: a reply
 * that comes meanwhile is read without this thread ever sleeping, so
 * neither side waits for a wake-up (here, on a 2-vCPU VM, a wake-up of an
 * idle vCPU costs 35-50 us, a whole round trip between two threads 76-118
 * us asleep against 37 with the caller polling). Only a request that is
 * the client's only one in flight polls: with others in flight, the CPU is
 * better left to marud (4 threads of lookups ran 12% slower with one of
 * them polling). A reply that did not come in time (a bulk transfer, a
 * busy marud, a far network) makes the next SPIN_BACKOFF requests block
 * at once.
 */
#define SPIN_BACKOFF	8

/* 1 when the reply is there already (polled for); 0: wait for it. */
static int reply_wait(struct maru_client *c, int fd)
{
	int skip = atomic_load(&c->spin_skip);

	if (!c->opts.spin_us || atomic_load(&c->in_flight) != 1)
		return 0;
	if (skip > 0) {
		atomic_compare_exchange_strong(&c->spin_skip, &skip, skip - 1);
		return 0;
	}
	if (sock_spin_readable(fd, (uint64_t)c->opts.spin_us * 1000)) {
		atomic_fetch_add(&c->st.spin_replies, 1);
		return 1;
	}
	atomic_fetch_add(&c->st.spin_misses, 1);
	atomic_store(&c->spin_skip, SPIN_BACKOFF);
	return 0;
}

/*
 * Requests marud executes once whatever the network does (they go through
 * its reply cache) and whose effect a lost reply would hide from the caller.
 */
static int changes_state(uint16_t op)
{
	switch (op) {
	case OP_MKDIR: case OP_RMDIR: case OP_SETATTR: case OP_RENAME: case OP_UNLINK:
	case OP_SYMLINK: case OP_LINK: case OP_MKNOD: case OP_CREATE: case OP_RESERVE:
	case OP_TRUNCATE: case OP_PUBLISH: case OP_ABANDON:
		return 1;
	default:
		return 0;
	}
}

/* The share of timeout_ms a state change keeps to ask again after a silent socket. */
#define RESEND_SHARE	4
/* SO_RCVTIMEO may be this much under what is left of the call before it is set again. */
#define TMO_SLACK_MS	100

/*
 * k's socket timeouts within what is left of the call, so that a send or a
 * read never outlives the deadline (set again only when they are not).
 */
static int conn_bound(struct conn *k, uint64_t deadline)
{
	uint64_t now = mono_ms();
	unsigned int left = deadline > now ? (unsigned int)(deadline - now) : 1;
	int rc;

	if (k->tmo_ms <= left && k->tmo_ms + TMO_SLACK_MS >= left)
		return 0;
	rc = frame_set_timeout(k->fd, left);
	if (!rc)
		k->tmo_ms = left;
	return rc;
}

/*
 * One attempt on one socket: 0 with r->status set, or -errno (retryable
 * unless fatal). *unanswered is set when the request went out and no reply
 * came: marud may have executed it.
 */
static int call_once(struct maru_client *c, struct req *r, uint64_t reqid, uint64_t deadline,
		     int *unanswered)
{
	uint64_t reply_by = deadline, now;
	struct proto_hdr h;
	struct conn *k;
	uint32_t max_frame;
	int rc;

	rc = conn_get(c, deadline, &k);
	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	max_frame = c->s.max_frame;
	pthread_mutex_unlock(&c->lock);
	proto_hdr_init(&h, r->op, (uint32_t)(r->n1 + r->n2), reqid, r->gen, 0);
	frame_req_done(r);
	rc = conn_bound(k, deadline);
	if (!rc)
		rc = proto_send(k->fd, &h, r->p1, r->n1, r->p2, r->n2);
	/* tests: lose the reply of a request marud has (or will have) executed */
	if (!rc)
		rc = FAILPOINT("libmaru.reply");
	now = mono_ms();
	if (changes_state(r->op) && deadline - now > c->opts.timeout_ms / RESEND_SHARE)
		reply_by = deadline - c->opts.timeout_ms / RESEND_SHARE;
	if (!rc) {
		atomic_fetch_add(&c->in_flight, 1);
		if (!reply_wait(c, k->fd))
			rc = cancel_poll(k->fd, POLLIN, reply_by);
		if (!rc)
			rc = frame_reply(k->fd, max_frame, &h, r);
		atomic_fetch_sub(&c->in_flight, 1);
		*unanswered = rc != 0;
	}
	conn_put(c, k, rc != 0);
	return rc;
}

static int call_until(struct maru_client *c, struct req *r, uint64_t deadline);

/*
 * Callers queued one behind the other: the kernel serialises the lookups
 * of one directory (libfuse before 3.16 never asks for parallel ones), so
 * on an unreachable pool each would wait out its own timeout_ms after the
 * one before it. Once an outage lasted a whole timeout_ms, a call that
 * comes within CHAIN_MS of the last call that waited out its bound fails
 * at once: the queue drains within the bound. Those quick failures do not
 * extend the window, so that a caller retrying in a loop tries marud again
 * (with its whole budget) CHAIN_MS later, and finds it back after a heal.
 */
#define CHAIN_MS	20

static void note_timeout(struct maru_client *c)
{
	atomic_fetch_add(&c->st.timeouts, 1);
	atomic_store(&c->last_fail_ms, mono_ms());
}

static int outage_gate(struct maru_client *c)
{
	uint64_t now = mono_ms(), since = atomic_load(&c->down_since_ms);

	if (!since || now - since < c->opts.timeout_ms ||
	    now - atomic_load(&c->last_fail_ms) >= CHAIN_MS)
		return 0;
	atomic_fetch_add(&c->st.timeouts, 1);
	return -ETIMEDOUT;
}

/*
 * A PUBLISH went out, its reply was lost, and marud answers the resend from
 * a new generation (it restarted): whether the publish took effect before
 * is a question only the new marud can answer. Ask it again in the new
 * session (a new request id, the caller's deadline): marud publishes
 * nothing for a session that does not own the version, and answers a
 * version it has published with the same size (and hash) as a success.
 * 0 with r's reply replaced when it took effect; else r is left as it was.
 */
static void ask_again(struct maru_client *c, struct req *r, uint64_t deadline)
{
	struct req q = { .op = r->op, .p1 = r->p1, .n1 = r->n1, .p2 = r->p2, .n2 = r->n2,
			 .rbuf = r->rbuf, .rcap = r->rcap, .asked_again = 1 };

	if (call_until(c, &q, deadline) != 0) {
		frame_req_done(&q);
		return;
	}
	clog_info(c, "PUBLISH of version %llu: its reply was lost to marud's restart; "
		  "marud has it published", (unsigned long long)
		  ((const struct proto_publish_req *)r->p1)->ino);
	frame_req_done(r);
	r->status = 0;
	r->rep = q.rep;
	r->rlen = q.rlen;
	r->rgen = q.rgen;
	r->gen = q.gen;
}

static int call_result(struct maru_client *c, struct req *r, int unanswered,
		       uint64_t deadline)
{
	note_up(c);
	if (r->status == -ESTALE && r->rgen != r->gen) {
		stale_refresh(c, r, deadline);
		if (unanswered && r->op == OP_PUBLISH && !r->asked_again &&
		    r->n1 >= sizeof(struct proto_publish_req))
			ask_again(c, r, deadline);
	}
	return r->status;
}

static int call_until(struct maru_client *c, struct req *r, uint64_t deadline)
{
	uint64_t reqid = atomic_fetch_add(&c->next_reqid, 1), now;
	unsigned int backoff = BACKOFF_MIN_MS;
	int rc, unanswered = 0, lost = 0;

	r->rep = NULL;
	r->rlen = 0;
	pthread_mutex_lock(&c->lock);
	r->gen = c->s.generation;
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(&c->st.requests, 1);
	if (outage_gate(c))
		return -ETIMEDOUT;
	for (;;) {
		rc = cancel_check();
		if (!rc)
			rc = call_once(c, r, reqid, deadline, &unanswered);
		lost |= unanswered;
		unanswered = 0;
		if (rc == 0)
			return call_result(c, r, lost, deadline);
		if (rc == -EINTR && cancel_check()) {
			atomic_fetch_add(&c->st.cancels, 1);
			return -EINTR;
		}
		if (rc == -EPROTO) {
			clog_warnx(c, "protocol error from marud at %s on %s", c->uri,
				   proto_op_name(r->op));
			return -EIO;
		}
		if (fatal_err(rc))
			return rc;
		/* -EINTR with the token clear: a fire that raced a reset */
		if (rc != -EINTR)
			note_down(c, rc);
		now = mono_ms();
		if (now >= deadline)
			break;
		rc = cancel_poll(-1, 0, now + (backoff < deadline - now ? backoff : deadline - now));
		if (rc == -EINTR) {
			atomic_fetch_add(&c->st.cancels, 1);
			return -EINTR;
		}
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	note_timeout(c);
	if (lost && changes_state(r->op))
		clog_warnx(c, "%s to marud at %s: sent, no reply within %u ms; whether it "
			   "took effect is unknown", proto_op_name(r->op), c->uri,
			   c->opts.timeout_ms);
	return -ETIMEDOUT;
}

int transport_call_within(struct maru_client *c, struct req *r, unsigned int ms)
{
	uint64_t t0 = hist_start();
	int rc = call_until(c, r, mono_ms() + (ms < c->opts.timeout_ms ? ms : c->opts.timeout_ms));

	if (r->op < OP_MAX)
		hist_done(&c->st.call_lat[r->op], t0);
	return rc;
}

int transport_call(struct maru_client *c, struct req *r)
{
	return transport_call_within(c, r, c->opts.timeout_ms);
}

int transport_down(struct maru_client *c)
{
	uint64_t since = atomic_load(&c->down_since_ms);

	return since && mono_ms() - since >= TRANSPORT_OUTAGE_MS;
}

void transport_ping(struct maru_client *c)
{
	struct req r = { .op = OP_PING };

	transport_call(c, &r);
	frame_req_done(&r);
}

int transport_live(struct maru_client *c)
{
	if (mono_ms() - atomic_load(&c->last_ok_ms) < TRANSPORT_LIVE_MS)
		return 0;
	transport_ping(c);
	return mono_ms() - atomic_load(&c->last_ok_ms) < TRANSPORT_LIVE_MS ? 0 : -ETIMEDOUT;
}

/*
 * maru_client_new: the first session. Retries like a call, but reports
 * why it could not connect (-ECONNREFUSED) rather than only -ETIMEDOUT.
 */
int transport_connect_first(struct maru_client *c)
{
	uint64_t deadline = mono_ms() + c->opts.timeout_ms, now;
	unsigned int backoff = BACKOFF_MIN_MS;
	struct conn *k;
	int rc;

	for (;;) {
		rc = conn_get(c, deadline, &k);
		if (rc == 0) {
			conn_put(c, k, 0);
			return 0;
		}
		/* marud at max-conns says so: no point retrying for a first session */
		if (fatal_err(rc) || rc == -EUSERS)
			return rc == -EPROTO ? -EIO : rc;
		now = mono_ms();
		if (now >= deadline)
			break;
		sleep_ms(backoff < deadline - now ? backoff : deadline - now);
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	if (rc == -ENOENT || rc == -ECONNREFUSED)
		return -ECONNREFUSED;
	return -ETIMEDOUT;
}
