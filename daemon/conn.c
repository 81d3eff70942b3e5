// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/conn.c: marud's connections. It owns the connection objects and
 * their list, the event loops that serve them (one thread per CPU, each
 * with its own level-triggered epoll set: a pass reads every request its
 * ready connections have waiting and runs them, then sends each
 * connection's replies in one go), the hand-over of a connection to a
 * thread of its own when it asks for something that can wait on its peer or
 * on time (WRITE's data, READ's bulk send, SUBSCRIBE, hints, acknowledgement
 * waits, a frame too big to read ahead, a peer not taking its replies) or
 * copies, zero-fills or hashes pool bytes: that thread reads request
 * frames (header, then the payload, except WRITE's data, which the handler
 * takes straight into the pool) and hands them to dispatch.c until the
 * connection ends or stays quiet for CONN_LINGER_MS, when it goes back to
 * the loop. A connection whose handshake is not done (admit.c) never
 * leaves the loop: its frames are small and checked on their header. It
 * also owns the payload buffers kept between requests, closing every
 * connection at shutdown, and the fuzzer's seam of server.h (the same
 * per-frame path, on the caller's thread).
 *
 * Locks: conns_lock guards the list, its count and conns_cond (CLOCK_MONOTONIC:
 * a connection ended). It is taken under no other lock and none is taken
 * under it. The loop threads share nothing but the stop eventfd.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "admit.h"
#include "clock.h"
#include "conn.h"
#include "dir.h"
#include "dispatch.h"
#include "handlers/handlers.h"
#include "log.h"
#include "server_priv.h"
#include "session.h"
#include "subscribe.h"
#include "wire.h"

#define CONN_STACK_SIZE		(256U << 10)
#define CONN_BUF_KEEP		(1U << 20)	/* payload buffer kept between requests */
#define CLOSE_POLL_MS		100
#define LOOP_EVENTS		1024	/* ready connections taken per epoll_wait: one pass */
#define LOOP_STACK_SIZE		(256U << 10)
#define BATCH_FILLS		4	/* reads of one connection per wakeup, at most */
#define CONN_LINGER_MS		200	/* a thread idle this long gives c back to the loop */
#define CONN_FILL_NICE		10	/* a thread doing bulk pool work yields to the loops */

enum batch { BATCH_REARM, BATCH_CLOSE, BATCH_THREAD };

int conns_init(struct server *srv)
{
	int rc = -pthread_mutex_init(&srv->conns_lock, NULL);

	srv->loops_wake = -1;
	if (rc)
		return rc;
	rc = cond_init_mono(&srv->conns_cond);
	if (rc)
		pthread_mutex_destroy(&srv->conns_lock);
	return rc;
}

void conns_destroy(struct server *srv)
{
	conn_loops_stop(srv);
	pthread_cond_destroy(&srv->conns_cond);
	pthread_mutex_destroy(&srv->conns_lock);
}

static int conn_buf(struct conn *c, size_t need)
{
	uint8_t *nb;
	size_t cap = c->cap ? c->cap : 256;	/* small until a request needs more */

	if (need <= c->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	nb = realloc(c->buf, cap);
	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	c->cap = cap;
	return 0;
}

/* WRITE is checked by hand: its data stays in the socket until it lands in the pool. */
static int write_check(const struct proto_hdr *h)
{
	return h->len < sizeof(struct proto_io_req) ? -EPROTO : 0;
}

static int write_body_check(const struct proto_io_req *r, uint32_t len)
{
	if ((uint64_t)r->len + sizeof(*r) != len || r->len > PROTO_MAX_IO)
		return -EPROTO;
	return 0;
}

/*
 * Read one request payload. For WRITE only the body is read; its data is
 * left for the handler (c->unread). Returns the bytes in c->buf or -errno;
 * *check is proto_req_check()'s verdict on a payload that framed correctly.
 */
static int read_payload(struct conn *c, const struct proto_hdr *h, int *check)
{
	uint32_t n = h->len;
	int rc;

	*check = 0;
	if (h->op == OP_WRITE) {
		if (write_check(h))
			return -EPROTO;
		n = sizeof(struct proto_io_req);
	}
	rc = conn_buf(c, n ? n : 1);
	if (rc)
		return rc;
	rc = wire_recv(c, c->buf, n);
	if (rc)
		return rc;
	c->unread = h->len - n;
	if (h->op == OP_WRITE)
		return write_body_check((const void *)c->buf, h->len) ? -EPROTO : (int)n;
	*check = proto_req_check(h->op, c->buf, n);
	return *check == -EPROTO ? -EPROTO : (int)n;
}

/*
 * The frame whose header h was just taken: 0 to go on, non-zero to close.
 * Before the handshake, admit.c checks the header first (its size cap
 * comes before any buffer for the payload).
 */
static int conn_frame(struct conn *c, const struct proto_hdr *h, struct pbuf *out)
{
	int rc, n, check;

	rc = admit_frame(c, h);
	if (rc)
		return rc;
	rc = dispatch_header(c, h);
	if (rc)
		return rc;
	n = read_payload(c, h, &check);
	if (n < 0) {
		if (n == -EPROTO)
			wire_violation(c, h->op, "malformed payload");
		return n;
	}
	rc = dispatch_request(c, h, c->buf, (uint32_t)n, check, out);
	if (rc < 0)
		return rc;
	admit_check(c);
	return c->close;
}

/* One request, waiting for it: 0 to go on, non-zero to close. */
static int conn_request(struct conn *c, struct pbuf *out)
{
	struct proto_hdr h;
	int rc = wire_recv_hdr(c, &h);

	return rc ? rc : conn_frame(c, &h, out);
}

static void conn_trim(struct conn *c, struct pbuf *out)
{
	if (c->cap > CONN_BUF_KEEP) {
		free(c->buf);
		c->buf = NULL;
		c->cap = 0;
	}
	if (out->cap > CONN_BUF_KEEP)
		proto_buf_free(out);
}

static void conn_unlink(struct server *srv, struct conn *c)
{
	pthread_mutex_lock(&srv->conns_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	atomic_fetch_sub(&srv->nconns, 1);
	pthread_cond_broadcast(&srv->conns_cond);
	pthread_mutex_unlock(&srv->conns_lock);
}

void conn_free(struct conn *c)
{
	wire_free(c);
	free(c->buf);
	free(c->cached);
	free(c);
}

/* The end of a connection, on whichever thread served it last. */
static void conn_end(struct conn *c)
{
	struct server *srv = c->srv;

	admit_forget(c);	/* before the fd closes: admit.c may shut it down */
	if (c->sess)
		session_detach(srv->sessions, c->sess);
	log_debug("%s: connection closed", c->peer);
	close(c->fd);
	conn_unlink(srv, c);
	conn_free(c);
}

static int conn_to_loop(struct conn *c);

/* 1: nothing came for CONN_LINGER_MS and the event loop runs: go back to it. */
static int conn_idle(struct conn *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	if (!c->srv->nloops || wire_buffered(c))
		return 0;
	return poll(&pfd, 1, CONN_LINGER_MS) == 0;
}

/*
 * A thread that copies, zero-fills or hashes many MiB for its connection
 * runs at a lower priority, so that on a machine with few CPUs the loops'
 * lookups are not kept waiting for a time slice behind it (each thread's
 * own nice value; the thread ends when its connection goes back).
 */
static void conn_fill_nice(struct conn *c)
{
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), CONN_FILL_NICE) < 0)
		log_debug("%s: bulk work at normal priority: setpriority: %s", c->peer,
			  strerror(errno));
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	struct pbuf out = { 0 };

	if (c->fills)
		conn_fill_nice(c);

	/* Replies the event loop could not send go first, whatever it takes. */
	if (!wire_flush(c, 0) && !c->close) {
		while (!atomic_load(&srv->stopping)) {
			if (conn_idle(c) && !conn_to_loop(c)) {
				proto_buf_free(&out);
				return NULL;	/* c is the loop's now */
			}
			if (conn_request(c, &out))
				break;
			conn_trim(c, &out);
		}
	}
	proto_buf_free(&out);
	conn_end(c);
	return NULL;
}

/* c's own thread from now on (c is listed already). */
static int conn_thread(struct conn *c)
{
	pthread_attr_t at;
	pthread_t t;
	int rc;

	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, CONN_STACK_SIZE);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &at, conn_main, c);
	pthread_attr_destroy(&at);
	return -rc;
}

static void conn_list(struct conn *c)
{
	struct server *srv = c->srv;

	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	atomic_fetch_add(&srv->nconns, 1);
}

int conn_new(struct server *srv, int fd, int is_unix, struct conn **out)
{
	struct conn *c = calloc(1, sizeof(*c));

	/* c->cached (the reply cache's slot) comes with HELLO: handlers/handshake.c */
	if (!c)
		return -ENOMEM;
	c->srv = srv;
	c->fd = fd;
	c->is_unix = is_unix;
	*out = c;
	return 0;
}

int conn_spawn(struct conn *c)
{
	struct server *srv = c->srv;
	int rc;

	pthread_mutex_lock(&srv->conns_lock);
	rc = conn_thread(c);
	if (!rc)
		conn_list(c);
	pthread_mutex_unlock(&srv->conns_lock);
	return rc;
}

/* ---- the event loop ---- */

/* A PUBLISH that makes marud hash more than this runs off the loop. */
#define PUBLISH_HASH_INLINE	(1u << 20)

/* A PUBLISH whose digest marud computes, over more than PUBLISH_HASH_INLINE. */
static int publish_hashes(const struct conn *c, const struct proto_hdr *h)
{
	struct proto_publish_req r;

	if (h->len < sizeof(r) || !wire_peek(c, sizeof(*h), &r, sizeof(r)))
		return 0;
	return r.xxh3 == 0 && r.size > PUBLISH_HASH_INLINE;
}

/*
 * A request that copies, zero-fills or hashes pool bytes (a CREATE_COPY, a
 * growing TRUNCATE, a PUBLISH marud hashes): that runs outside the
 * directory lock but may take many ms, and on the loop every other
 * connection's lookups would wait behind it. A body is known once it was
 * read ahead; before that the request counts as inline, and conn_frames()
 * asks again when the frame is whole.
 */
static int frame_fills(const struct conn *c, const struct proto_hdr *h)
{
	uint32_t flags;

	if (h->op == OP_TRUNCATE)
		return 1;
	if (h->op == OP_PUBLISH)
		return publish_hashes(c, h);
	if (h->op != OP_CREATE || h->len < sizeof(struct proto_create_req))
		return 0;
	return wire_peek(c, sizeof(*h) + offsetof(struct proto_create_req, flags), &flags,
			 sizeof(flags)) && (flags & CREATE_COPY);
}

/*
 * Whether the loop may run h's request itself: nothing in it waits for the
 * peer or for time or copies pool bytes, and all of it fits the read-ahead
 * buffer.
 */
static int frame_inline(struct conn *c, const struct proto_hdr *h)
{
	switch (h->op) {
	case OP_WRITE:
	case OP_READ:
	case OP_SUBSCRIBE:
	case OP_HINT:
	case OP_HINTV:
	case OP_HINT_WAIT:
	case OP_RKEY:
		return 0;
	default:
		break;
	}
	if (subs_ack_wait_ms(c->srv, h->op) && atomic_load(&c->srv->nacking))
		return 0;
	if (frame_fills(c, h)) {
		c->fills = 1;
		return 0;
	}
	return sizeof(*h) + (size_t)h->len <= wire_in_cap();
}

/* Run every whole frame read ahead. */
static enum batch conn_frames(struct conn *c, struct pbuf *out)
{
	struct proto_hdr h;

	while (wire_peek_hdr(c, &h)) {
		/* before the handshake: small frames only, all run here; admit.c
		 * refuses a bigger one on its header, without waiting for it */
		int refuse = c->hs_open && h.len > ADMIT_FRAME_MAX;

		if (!c->hs_open && !frame_inline(c, &h))
			return BATCH_THREAD;
		if (!refuse && wire_buffered(c) < sizeof(h) + h.len)
			break;
		wire_recv(c, &h, sizeof(h));
		if (conn_frame(c, &h, out))
			return BATCH_CLOSE;
		conn_trim(c, out);
	}
	return BATCH_REARM;
}

/* Read what c's peer sent and run it; its replies wait in c->outq. */
static enum batch conn_batch(struct conn *c, struct pbuf *out)
{
	enum batch b = BATCH_REARM;
	int fills = 0;
	size_t room;
	ssize_t n;

	c->batch = 1;
	do {
		n = wire_fill(c, &room);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			break;
		if (n <= 0) {
			b = n == -ENOBUFS ? BATCH_THREAD : BATCH_CLOSE;
			break;
		}
		b = conn_frames(c, out);
		/* a peer that keeps sending gets its turn again on the next wakeup */
	} while (b == BATCH_REARM && (size_t)n == room && ++fills < BATCH_FILLS);
	c->batch = 0;
	return b;
}

/*
 * Send c's queued replies. Those the peer does not take now (among them the
 * answer that explains a close) are sent by a thread of c's own, which then
 * ends c if it was closing.
 */
static enum batch conn_flush(struct conn *c, enum batch b)
{
	if (wire_flush(c, 1) != -EAGAIN)
		return b;
	if (b == BATCH_CLOSE)
		c->close = 1;
	return BATCH_THREAD;
}

/*
 * c leaves its loop: to a thread of its own, or closed. A connection whose
 * handshake is not done never gets a thread (its frames are small and
 * inline; one not taking its replies is closed).
 */
static void conn_leave(struct conn *c, enum batch b)
{
	epoll_ctl(c->loop->ep, EPOLL_CTL_DEL, c->fd, NULL);
	c->loop = NULL;
	if (b == BATCH_THREAD && c->hs_open) {
		admit_refused(c->srv, c->src, "not taking its replies before the handshake");
		b = BATCH_CLOSE;
	}
	if (b == BATCH_THREAD) {
		atomic_fetch_add(&c->srv->conn_handoffs, 1);
		if (!conn_thread(c))
			return;
		log_warnx("%s: cannot start a connection thread; closing", c->peer);
	}
	conn_end(c);
}

/*
 * Serve ready c. 1: it stays on the loop with replies queued, for the send
 * at the end of the loop's pass; 0: nothing to send, or c left the loop.
 */
static int conn_ready(struct conn *c, struct pbuf *out)
{
	enum batch b = conn_batch(c, out);

	if (b == BATCH_REARM && !atomic_load(&c->srv->stopping))
		return c->outq.len != 0;
	/* closing, handed over, or marud stops: c leaves after its replies */
	conn_leave(c, conn_flush(c, b));
	return 0;
}

/*
 * One pass of the loop over the n connections epoll_wait() gave: every
 * request first, then one send per connection that has replies, as Redis
 * does. The peers are woken together at the end, not one by one between
 * requests, and the loop runs its pass without being preempted by each
 * peer it wakes. 1: the stop eventfd was among them.
 */
static int loop_pass(struct conn_loop *l, struct epoll_event *ev, int n, struct pbuf *out)
{
	struct conn *sendq[LOOP_EVENTS];
	int i, nq = 0, stop = 0;

	for (i = 0; i < n; i++) {
		if (!ev[i].data.ptr)
			stop = 1;	/* the eventfd, left readable for the others */
		else if (conn_ready(ev[i].data.ptr, out))
			sendq[nq++] = ev[i].data.ptr;
	}
	atomic_fetch_add_explicit(&l->passes, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->sends, (unsigned int)nq, memory_order_relaxed);
	for (i = 0; i < nq; i++)
		if (conn_flush(sendq[i], BATCH_REARM) != BATCH_REARM)
			conn_leave(sendq[i], BATCH_THREAD);
	return stop;
}

static void *loop_main(void *arg)
{
	struct conn_loop *l = arg;
	struct epoll_event ev[LOOP_EVENTS];
	struct pbuf out = { 0 };
	int n;

	for (;;) {
		n = epoll_wait(l->ep, ev, LOOP_EVENTS, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			log_warn(errno, "epoll_wait");
			break;
		}
		if (loop_pass(l, ev, n, &out))
			break;
		if (out.cap > CONN_BUF_KEEP)
			proto_buf_free(&out);
	}
	proto_buf_free(&out);
	return NULL;
}

static unsigned int loops_wanted(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > CONN_LOOPS_MAX ? CONN_LOOPS_MAX : (unsigned int)n;
}

/* Loop l's epoll set, watching the stop eventfd; then its thread. */
static int loop_start(struct server *srv, struct conn_loop *l, const pthread_attr_t *at)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int rc;

	l->srv = srv;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	if (l->ep < 0)
		return -errno;
	rc = epoll_ctl(l->ep, EPOLL_CTL_ADD, srv->loops_wake, &ev) < 0 ? -errno : 0;
	if (!rc)
		rc = -pthread_create(&l->th, at, loop_main, l);
	if (rc) {
		close(l->ep);
		l->ep = -1;
	}
	return rc;
}

int conn_loops_start(struct server *srv)
{
	unsigned int want = loops_wanted();
	pthread_attr_t at;
	int rc = 0;

	srv->loops_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->loops_wake < 0)
		return -errno;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, LOOP_STACK_SIZE);
	while (!rc && srv->nloops < want) {
		rc = loop_start(srv, &srv->loops[srv->nloops], &at);
		if (!rc)
			srv->nloops++;
	}
	pthread_attr_destroy(&at);
	if (rc)
		conn_loops_stop(srv);
	return rc;
}

void conn_loops_stop(struct server *srv)
{
	uint64_t one = 1;
	unsigned int i;

	if (srv->nloops && write(srv->loops_wake, &one, sizeof(one)) < 0)
		log_warn(errno, "waking the event loop");
	for (i = 0; i < srv->nloops; i++) {
		pthread_join(srv->loops[i].th, NULL);
		close(srv->loops[i].ep);
		srv->loops[i].ep = -1;
	}
	srv->nloops = 0;
	if (srv->loops_wake >= 0)
		close(srv->loops_wake);
	srv->loops_wake = -1;
}

/* Hand listed c to a loop (round-robin); 0: from here its thread may serve and end c. */
static int conn_to_loop(struct conn *c)
{
	struct server *srv = c->srv;
	struct conn_loop *l = &srv->loops[atomic_fetch_add(&srv->next_loop, 1) % srv->nloops];
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	c->loop = l;
	c->fills = 0;
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, c->fd, &ev) == 0)
		return 0;
	c->loop = NULL;
	return -errno;
}

int conn_start(struct conn *c)
{
	struct server *srv = c->srv;
	int rc;

	log_debug("%s: connection open", c->peer);
	if (!srv->nloops)
		return conn_spawn(c);
	pthread_mutex_lock(&srv->conns_lock);
	conn_list(c);
	pthread_mutex_unlock(&srv->conns_lock);
	rc = conn_to_loop(c);
	if (rc)
		conn_unlink(srv, c);
	return rc;
}

void conns_close_all(struct server *srv)
{
	struct timespec ts;
	struct conn *c;

	pthread_mutex_lock(&srv->conns_lock);
	while (atomic_load(&srv->nconns)) {
		for (c = srv->conns; c; c = c->next)
			shutdown(c->fd, SHUT_RDWR);
		pthread_mutex_unlock(&srv->conns_lock);
		dir_events_kick(srv->dir);
		pthread_mutex_lock(&srv->conns_lock);
		if (atomic_load(&srv->nconns)) {
			deadline_ms(&ts, CLOSE_POLL_MS);
			pthread_cond_timedwait(&srv->conns_cond, &srv->conns_lock, &ts);
		}
	}
	pthread_mutex_unlock(&srv->conns_lock);
	conn_loops_stop(srv);
}

/* ---- the fuzzer's seam (server.h): one frame per call, no thread ---- */

int conn_fuzz_new(struct server *srv, int fd, struct conn **out)
{
	int rc = conn_new(srv, fd, 1, out);

	if (!rc)
		snprintf((*out)->peer, sizeof((*out)->peer), "fuzz fd %d", fd);
	return rc;
}

int conn_fuzz_request(struct conn *c)
{
	struct pbuf out = { 0 };
	int rc = conn_request(c, &out);

	proto_buf_free(&out);
	return rc;
}

void conn_fuzz_free(struct conn *c)
{
	if (c->sess)
		session_detach(c->srv->sessions, c->sess);
	conn_free(c);
}
