// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/conn.c: marud's connections. It owns the connection objects and
 * their list, one detached thread per connection that reads request frames
 * (header, then the payload, except WRITE's data, which the handler takes
 * straight into the pool) and hands them to dispatch.c, the payload buffers
 * kept between requests, closing every connection at shutdown, and the
 * fuzzer's seam of server.h (the same per-frame path, on the caller's thread).
 *
 * Locks: conns_lock guards the list, its count and conns_cond (CLOCK_MONOTONIC:
 * a connection ended). It is taken under no other lock and none is taken
 * under it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "dir.h"
#include "dispatch.h"
#include "handlers/handlers.h"
#include "log.h"
#include "server_priv.h"
#include "session.h"
#include "wire.h"

#define CONN_STACK_SIZE		(256U << 10)
#define CONN_BUF_KEEP		(1U << 20)	/* payload buffer kept between requests */
#define CLOSE_POLL_MS		100

int conns_init(struct server *srv)
{
	int rc = -pthread_mutex_init(&srv->conns_lock, NULL);

	if (rc)
		return rc;
	rc = cond_init_mono(&srv->conns_cond);
	if (rc)
		pthread_mutex_destroy(&srv->conns_lock);
	return rc;
}

void conns_destroy(struct server *srv)
{
	pthread_cond_destroy(&srv->conns_cond);
	pthread_mutex_destroy(&srv->conns_lock);
}

static int conn_buf(struct conn *c, size_t need)
{
	uint8_t *nb;
	size_t cap = c->cap ? c->cap : 4096;

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

/* Header of the next frame; 1 on a clean EOF between frames. */
static int read_header(struct conn *c, struct proto_hdr *h)
{
	ssize_t r;

	do
		r = recv(c->fd, h, sizeof(*h), MSG_WAITALL);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 1;
	if (r < 0)
		return -errno;
	if ((size_t)r < sizeof(*h))
		return wire_recv(c, (uint8_t *)h + r, sizeof(*h) - (size_t)r);
	return 0;
}

/* One request: 0 to go on, non-zero to close. */
static int conn_request(struct conn *c, struct pbuf *out)
{
	struct proto_hdr h;
	int rc, n, check;

	rc = read_header(c, &h);
	if (rc)
		return rc;
	rc = dispatch_header(c, &h);
	if (rc)
		return rc;
	n = read_payload(c, &h, &check);
	if (n < 0) {
		if (n == -EPROTO)
			wire_violation(c, h.op, "malformed payload");
		return n;
	}
	rc = dispatch_request(c, &h, c->buf, (uint32_t)n, check, out);
	if (rc < 0)
		return rc;
	return c->close;
}

static void conn_trim(struct conn *c, struct pbuf *out)
{
	if (c->cap > CONN_BUF_KEEP) {
		free(c->buf);
		c->buf = NULL;
		c->cap = 0;
	}
	if (out->cap > CONN_BUF_KEEP)
		pbuf_free(out);
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
	free(c->buf);
	free(c->cached);
	free(c);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	struct pbuf out = { 0 };
	int rc;

	log_debug("%s: connection open", c->peer);
	while (!atomic_load(&srv->stopping)) {
		rc = conn_request(c, &out);
		if (rc)
			break;
		conn_trim(c, &out);
	}
	pbuf_free(&out);
	if (c->sess)
		session_detach(srv->sessions, c->sess);
	log_debug("%s: connection closed", c->peer);
	close(c->fd);
	conn_unlink(srv, c);
	conn_free(c);
	return NULL;
}

int conn_new(struct server *srv, int fd, int is_unix, struct conn **out)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cached = malloc(sizeof(*c->cached));
	if (!c->cached) {
		free(c);
		return -ENOMEM;
	}
	c->srv = srv;
	c->fd = fd;
	c->is_unix = is_unix;
	*out = c;
	return 0;
}

int conn_spawn(struct conn *c)
{
	struct server *srv = c->srv;
	pthread_attr_t at;
	pthread_t t;
	int rc;

	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, CONN_STACK_SIZE);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&srv->conns_lock);
	rc = pthread_create(&t, &at, conn_main, c);
	if (!rc) {
		c->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = c;
		srv->conns = c;
		atomic_fetch_add(&srv->nconns, 1);
	}
	pthread_mutex_unlock(&srv->conns_lock);
	pthread_attr_destroy(&at);
	return -rc;
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
}

/* ---- the fuzzer's seam (server.h): one frame per call, no thread ---- */

int server_fuzz_conn_new(struct server *srv, int fd, struct conn **out)
{
	int rc = conn_new(srv, fd, 1, out);

	if (!rc)
		snprintf((*out)->peer, sizeof((*out)->peer), "fuzz fd %d", fd);
	return rc;
}

int server_fuzz_request(struct conn *c)
{
	struct pbuf out = { 0 };
	int rc = conn_request(c, &out);

	pbuf_free(&out);
	return rc;
}

void server_fuzz_conn_free(struct conn *c)
{
	if (c->sess)
		session_detach(c->srv->sessions, c->sess);
	conn_free(c);
}
