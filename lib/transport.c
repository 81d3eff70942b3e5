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
 * Locks: hello_lock serialises connect+AUTH+HELLO so that concurrent
 * reconnects after a marud restart end up in one new session, not several;
 * c->lock guards the socket table and the session and is never held across
 * I/O. Order: hello_lock -> lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "failpoint.h"
#include "frame.h"
#include "session.h"
#include "sockio.h"
#include "transport.h"

#define BACKOFF_MIN_MS	10
#define BACKOFF_MAX_MS	500

static int hello(int fd, const struct maru_client *c, uint32_t flags,
		 const uint8_t *token, struct proto_hello_rep *rep)
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
	hq.proto_version = PROTO_VERSION;
	if (token)
		memcpy(hq.token, token, sizeof(hq.token));
	hq.pid = (uint64_t)getpid();
	memcpy(hq.client_name, c->name, sizeof(hq.client_name));
	/* reqid 0: HELLO belongs to no session yet and is never cached */
	proto_hdr_init(&h, OP_HELLO, sizeof(hq), 0, 0, 0);
	rc = frame_call(fd, PROTO_MAX_FRAME + sizeof(*rep), &h, &r);
	if (rc)
		return rc;
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
	int fd, rc;

	fd = addr_connect(&c->addr, ms ? ms : 1);
	if (fd < 0)
		return fd;
	/* the handshake within what is left of the caller's budget; the
	 * socket's later round trips get a whole timeout_ms each */
	rc = frame_set_timeout(fd, ms ? ms : 1);
	if (!rc && c->has_key)
		rc = auth_exchange(c, fd);
	if (!rc)
		rc = hello(fd, c, flags, token, rep);
	if (rc == -EACCES && !c->has_key)
		clog_warnx(c, "no key: marud requires one (give the key file marud's key-file names)");
	if (!rc)
		rc = frame_set_timeout(fd, c->opts.timeout_ms);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* A socket of our session (reclaimed by token if we have one). */
static int conn_open(struct maru_client *c, unsigned int ms, uint64_t *epoch)
{
	struct proto_hello_rep *rep;
	uint8_t token[16];
	int fd, have;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	pthread_mutex_lock(&c->hello_lock);
	pthread_mutex_lock(&c->lock);
	have = c->s.established;
	memcpy(token, c->s.token, sizeof(token));
	pthread_mutex_unlock(&c->lock);
	fd = transport_dial(c, ms, HELLO_F_DIRATTR | (have ? HELLO_F_RECLAIM : 0),
			    have ? token : NULL, rep);
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

static int wait_idle_locked(struct maru_client *c, uint64_t deadline)
{
	struct timespec ts;

	ns_to_timespec(deadline * 1000000u, &ts);
	return -pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

static int open_slot(struct maru_client *c, struct conn *k, uint64_t deadline)
{
	uint64_t now = mono_ms(), epoch = 0;
	int fd, down;

	fd = conn_open(c, deadline > now ? (unsigned int)(deadline - now) : 1, &epoch);
	pthread_mutex_lock(&c->lock);
	down = c->down;
	if (fd < 0) {
		k->busy = 0;
		pthread_cond_signal(&c->cond);
	} else {
		k->fd = fd;
		k->epoch = epoch;
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
		return rc == -ETIMEDOUT ? -ETIMEDOUT : rc;
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
	int first;

	pthread_mutex_lock(&c->lock);
	first = !c->down;
	c->down = 1;
	pthread_mutex_unlock(&c->lock);
	if (first)
		clog_warn(c, err, "marud at %s unreachable", c->uri);
}

static void note_up(struct maru_client *c)
{
	int was;

	atomic_store(&c->last_ok_ms, mono_ms());
	pthread_mutex_lock(&c->lock);
	was = c->down;
	c->down = 0;
	pthread_mutex_unlock(&c->lock);
	if (was)
		clog_info(c, "marud at %s reachable again", c->uri);
}

/* Errors that no retry can fix. */
static int fatal_err(int rc)
{
	return rc == -EACCES || rc == -EINVAL || rc == -ENOMEM || rc == -EPROTO;
}

/*
 * -ESTALE from a generation we did not know yet: marud restarted under us.
 * Reconnect once so the new session (and the generation callback) happens
 * now, then let the caller see -ESTALE.
 */
static void stale_refresh(struct maru_client *c, const struct req *r)
{
	struct conn *k;
	uint64_t gen;

	pthread_mutex_lock(&c->lock);
	gen = c->s.generation;
	if (gen != r->rgen)
		close_idle_locked(c);
	pthread_mutex_unlock(&c->lock);
	if (gen != r->rgen && conn_get(c, mono_ms() + c->opts.timeout_ms, &k) == 0)
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

static void reply_wait(struct maru_client *c, int fd)
{
	int skip = atomic_load(&c->spin_skip);

	if (!c->opts.spin_us || atomic_load(&c->in_flight) != 1)
		return;
	if (skip > 0) {
		atomic_compare_exchange_strong(&c->spin_skip, &skip, skip - 1);
		return;
	}
	if (sock_spin_readable(fd, (uint64_t)c->opts.spin_us * 1000)) {
		atomic_fetch_add(&c->st.spin_replies, 1);
	} else {
		atomic_fetch_add(&c->st.spin_misses, 1);
		atomic_store(&c->spin_skip, SPIN_BACKOFF);
	}
}

/* One attempt on one socket: 0 with r->status set, or -errno (retryable unless fatal). */
static int call_once(struct maru_client *c, struct req *r, uint64_t reqid, uint64_t deadline)
{
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
	rc = proto_send(k->fd, &h, r->p1, r->n1, r->p2, r->n2);
	/* tests: lose the reply of a request marud has (or will have) executed */
	if (!rc)
		rc = FAILPOINT("libmaru.reply");
	if (!rc) {
		atomic_fetch_add(&c->in_flight, 1);
		reply_wait(c, k->fd);
		rc = frame_reply(k->fd, max_frame, &h, r);
		atomic_fetch_sub(&c->in_flight, 1);
	}
	conn_put(c, k, rc != 0);
	return rc;
}

static int call_result(struct maru_client *c, struct req *r)
{
	note_up(c);
	if (r->status == -ESTALE && r->rgen != r->gen)
		stale_refresh(c, r);
	return r->status;
}

int transport_call(struct maru_client *c, struct req *r)
{
	uint64_t deadline = mono_ms() + c->opts.timeout_ms, now;
	uint64_t reqid = atomic_fetch_add(&c->next_reqid, 1);
	unsigned int backoff = BACKOFF_MIN_MS;
	int rc;

	r->rep = NULL;
	r->rlen = 0;
	pthread_mutex_lock(&c->lock);
	r->gen = c->s.generation;
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(&c->st.requests, 1);
	for (;;) {
		rc = call_once(c, r, reqid, deadline);
		if (rc == 0)
			return call_result(c, r);
		if (rc == -EPROTO) {
			clog_warnx(c, "protocol error from marud at %s on %s", c->uri,
				   proto_op_name(r->op));
			return -EIO;
		}
		if (fatal_err(rc))
			return rc;
		note_down(c, rc);
		now = mono_ms();
		if (now >= deadline)
			break;
		sleep_ms(backoff < deadline - now ? backoff : deadline - now);
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	atomic_fetch_add(&c->st.timeouts, 1);
	return -ETIMEDOUT;
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
