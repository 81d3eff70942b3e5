// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/admit.c: what keeps unauthenticated connections from holding
 * marud hostage. It owns the list of connections whose handshake is not
 * done (AUTH with a key configured, HELLO without one), oldest first, and
 * the limits on it:
 *
 *  - per source address (handshake-per-source): a new connection from a
 *    source that has that many unauthenticated ones is closed at once;
 *  - overall (handshake-max, at most three quarters of max-conns): a new
 *    connection over it closes the oldest unauthenticated one instead, so
 *    the other quarter of the slots is only ever held by authenticated
 *    sessions, and a client with the right key is never refused for
 *    connections that have not proved anything;
 *  - max-conns itself: when it is reached and some connection is still
 *    unauthenticated, that one (the oldest) is closed to make room; only
 *    when every slot is authenticated is a new connection refused (-EUSERS);
 *  - connections closed for these limits but not yet ended by the thread
 *    serving them count too: while there are handshake-max of them, new
 *    connections are closed at accept (the descriptors stay bounded);
 *  - a deadline (handshake-timeout-ms) by which the handshake must be done;
 *  - before the handshake, only AUTH, HELLO and PING frames of at most
 *    ADMIT_FRAME_MAX bytes, checked on the header before anything is
 *    allocated for the payload.
 *
 * Closing a listed connection means shutdown() of its socket: the thread
 * serving it sees the end and frees it. Refusals are logged through
 * refusals.c. admit_lock guards the list and its count; it is taken under no
 * other lock and none is taken under it (the log notes are made after it is
 * released). A connection's fd stays open while it is listed: conn.c calls
 * admit_forget() before closing it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "admit.h"
#include "clock.h"
#include "log.h"
#include "refusals.h"
#include "server_priv.h"
#include "wire.h"

#define TICK_MAX_MS	1000	/* the refusal counts are looked at this often */
#define EXPIRE_BATCH	64	/* deadlines handled per lock hold */

int admit_init(struct server *srv)
{
	int rc = -pthread_mutex_init(&srv->admit_lock, NULL);

	if (rc)
		return rc;
	rc = refusals_init(&srv->refusals, REFUSALS_WINDOW_MS);
	if (rc)
		pthread_mutex_destroy(&srv->admit_lock);
	return rc;
}

void admit_destroy(struct server *srv)
{
	refusals_flush(&srv->refusals, mono_ms(), 1);
	refusals_destroy(&srv->refusals);
	pthread_mutex_destroy(&srv->admit_lock);
}

unsigned int admit_limit(const struct server *srv)
{
	unsigned int max = atomic_load(&srv->hs_max);
	unsigned int conns = atomic_load(&srv->max_conns);
	unsigned int cap = conns - conns / 4;

	if (cap > max)
		cap = max;
	return cap ? cap : 1;
}

void admit_refused(struct server *srv, const char *src, const char *why)
{
	atomic_fetch_add(&srv->hs_refused, 1);
	refusals_note(&srv->refusals, src, why);
}

/* Off the list; admit_lock held. */
static void unlist(struct server *srv, struct conn *c)
{
	if (c->hs_prev)
		c->hs_prev->hs_next = c->hs_next;
	else
		srv->hs_head = c->hs_next;
	if (c->hs_next)
		c->hs_next->hs_prev = c->hs_prev;
	else
		srv->hs_tail = c->hs_prev;
	c->hs_prev = c->hs_next = NULL;
	c->hs_listed = 0;
	atomic_fetch_sub(&srv->nhandshake, 1);
}

/* Close listed c (its thread frees it) and remember its source for the log. */
static void drop(struct server *srv, struct conn *c, char *src, size_t cap)
{
	shutdown(c->fd, SHUT_RDWR);
	unlist(srv, c);
	atomic_fetch_add(&srv->ndropping, 1);
	snprintf(src, cap, "%s", c->src);
}

static unsigned int from_source(const struct server *srv, const char *src)
{
	unsigned int n = 0;
	const struct conn *c;

	for (c = srv->hs_head; c; c = c->hs_next)
		n += !strcmp(c->src, src);
	return n;
}

int admit_conn(struct conn *c, const char **why)
{
	struct server *srv = c->srv;
	char dropped[2][sizeof(c->src)];
	int ndropped = 0, rc = 0;

	*why = NULL;
	pthread_mutex_lock(&srv->admit_lock);
	if (from_source(srv, c->src) >= atomic_load(&srv->hs_per_source)) {
		*why = "handshake limit per source address";
		rc = -EBUSY;
		goto out;
	}
	/*
	 * Closed ones not yet ended still hold a descriptor: while as many as
	 * the limit are, new ones are refused rather than more closed, so
	 * that a flood cannot run marud out of descriptors.
	 */
	if (atomic_load(&srv->ndropping) >= admit_limit(srv)) {
		*why = "handshake limit (still closing earlier connections)";
		rc = -EBUSY;
		goto out;
	}
	if (srv->hs_head && atomic_load(&srv->nhandshake) >= admit_limit(srv)) {
		atomic_fetch_add(&srv->hs_evicted, 1);
		drop(srv, srv->hs_head, dropped[ndropped++], sizeof(dropped[0]));
	}
	/* the ones closed already but not yet ended hold no slot */
	if (atomic_load(&srv->nconns) - atomic_load(&srv->ndropping) >=
	    atomic_load(&srv->max_conns)) {
		if (!srv->hs_head) {
			*why = "max-conns reached, every connection authenticated";
			rc = -EUSERS;
			goto out;
		}
		atomic_fetch_add(&srv->hs_evicted, 1);
		drop(srv, srv->hs_head, dropped[ndropped++], sizeof(dropped[0]));
	}
	c->hs_open = 1;
	c->hs_listed = 1;
	c->hs_since_ms = mono_ms();
	c->hs_prev = srv->hs_tail;
	c->hs_next = NULL;
	if (srv->hs_tail)
		srv->hs_tail->hs_next = c;
	else
		srv->hs_head = c;
	srv->hs_tail = c;
	atomic_fetch_add(&srv->nhandshake, 1);
out:
	pthread_mutex_unlock(&srv->admit_lock);
	while (ndropped--)
		admit_refused(srv, dropped[ndropped],
			      "handshake limit (closed its oldest unauthenticated connection)");
	return rc;
}

int admit_frame(struct conn *c, const struct proto_hdr *h)
{
	int rc;

	if (!c->hs_open)
		return 0;
	rc = proto_hdr_check(h, ADMIT_FRAME_MAX);
	if (rc == -EMSGSIZE) {
		admit_refused(c->srv, c->src, "frame before the handshake over its size cap");
		return -EPROTO;
	}
	if (rc || (h->op != OP_AUTH && h->op != OP_HELLO && h->op != OP_PING)) {
		admit_refused(c->srv, c->src, "bad frame before the handshake");
		return -EPROTO;
	}
	if (h->op == OP_HELLO && c->srv->have_key && !c->authed) {
		/* the client sent no key: tell it so, and close */
		admit_refused(c->srv, c->src, "client sent no key (HELLO before AUTH)");
		c->close = 1;
		wire_reply(c, h, -EACCES, NULL, 0);
		return 1;
	}
	return 0;
}

void admit_forget(struct conn *c)
{
	struct server *srv = c->srv;
	int gave_up = 0;

	if (!c->hs_open)
		return;
	c->hs_open = 0;
	pthread_mutex_lock(&srv->admit_lock);
	if (c->hs_listed) {
		unlist(srv, c);
		/* the client checks marud's proof first: with another key it leaves */
		gave_up = c->auth_stage == 1 && !c->authed;
	} else {
		atomic_fetch_sub(&srv->ndropping, 1);	/* drop() closed it */
	}
	pthread_mutex_unlock(&srv->admit_lock);
	if (gave_up)
		admit_refused(srv, c->src, "wrong key (the client left after AUTH step 1: "
			      "marud's proof did not match its key)");
}

void admit_check(struct conn *c)
{
	if (!c->hs_open || !(c->srv->have_key ? c->authed : c->sess != NULL))
		return;
	admit_forget(c);
	log_debug("%s: handshake done", c->peer);
}

/* Close up to EXPIRE_BATCH connections past their deadline; how many. */
static int expire_some(struct server *srv, uint64_t now, char (*src)[sizeof(srv->hs_head->src)],
		       uint64_t *next_ms)
{
	unsigned int tmo = atomic_load(&srv->hs_timeout_ms);
	int n = 0;

	pthread_mutex_lock(&srv->admit_lock);
	while (srv->hs_head && n < EXPIRE_BATCH) {
		uint64_t due = srv->hs_head->hs_since_ms + tmo;

		if (due > now) {
			*next_ms = due - now;
			break;
		}
		atomic_fetch_add(&srv->hs_expired, 1);	/* counted before it shows */
		drop(srv, srv->hs_head, src[n++], sizeof(src[0]));
	}
	pthread_mutex_unlock(&srv->admit_lock);
	return n;
}

int admit_tick(struct server *srv, int stopping)
{
	char src[EXPIRE_BATCH][sizeof(srv->hs_head->src)];
	uint64_t now = mono_ms(), next = TICK_MAX_MS;
	int n;

	do {
		n = expire_some(srv, now, src, &next);
		for (int i = 0; i < n; i++)
			admit_refused(srv, src[i], "handshake not done by its deadline");
	} while (n == EXPIRE_BATCH);
	/* now again: a note above may have opened a window after the first now */
	refusals_flush(&srv->refusals, mono_ms(), stopping);
	if (next > TICK_MAX_MS)
		next = TICK_MAX_MS;
	return next ? (int)next : 1;
}
