/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/events.c: the event stream (maru_events_*). A subscription has a
 * socket and a marud session of its own (HELLO_F_EVENTS without
 * HELLO_F_RECLAIM): it holds no leases or pending versions, so it needs
 * nothing from the client's session, and its reconnects never disturb the
 * client's sockets. Its HELLO names the client's session token as the
 * subscription's owner, so that marud does not make that session's own
 * changes wait for this subscriber's acknowledgements (maru_events_ack). When
 * the client's token changed since (a new session), the next ack asks for a
 * resubscription that names the new one. After a lost socket it reconnects
 * and subscribes again after the last sequence number it delivered; if marud
 * came back with a new generation it first yields one MARU_EV_GENERATION
 * event and subscribes from "now", since the old sequence numbers mean
 * nothing to the new marud.
 *
 * Locks: `lock` serialises maru_events_next() callers (and is held while they
 * wait); `wlock` guards fd and generation against a concurrent
 * maru_events_ack(), which writes to the socket without taking `lock`.
 * Order: lock -> wlock -> maru_client.lock.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client_priv.h"
#include "frame.h"
#include "sockio.h"
#include "transport.h"

#define EV_BACKOFF_MIN_MS	10
#define EV_BACKOFF_MAX_MS	500
#define EV_FRAME_MAX		(64u * 1024)

struct maru_events {
	struct maru_client *c;
	pthread_mutex_t lock;
	pthread_mutex_t wlock;		/* fd, generation: for maru_events_ack */
	int fd;
	uint64_t last_seq;
	uint64_t generation;
	uint8_t owner[16];		/* client token named at HELLO */
	int has_owner;
	atomic_int reown;		/* the client's token changed: resubscribe */
	int gen_pending;		/* a MARU_EV_GENERATION is due */
	int down;
	uint64_t retry_at;		/* monotonic ms of the next connect */
	unsigned int backoff;
	uint8_t *buf;			/* one frame payload */
};

static int subscribe(int fd, uint64_t after_seq, uint64_t generation)
{
	struct proto_subscribe_req q = { .after_seq = after_seq };
	struct req r = { .op = OP_SUBSCRIBE, .p1 = &q, .n1 = sizeof(q) };
	struct proto_hdr h;
	int rc;

	proto_hdr_init(&h, OP_SUBSCRIBE, sizeof(q), 1, generation, 0);
	rc = frame_call(fd, EV_FRAME_MAX, &h, &r);
	frame_req_done(&r);
	return rc ? rc : r.status;
}

/* The client's current session token; 0 when it has none yet. */
static int client_token(struct maru_client *c, uint8_t *token)
{
	int have;

	pthread_mutex_lock(&c->lock);
	have = c->s.established;
	if (have)
		memcpy(token, c->s.token, sizeof(c->s.token));
	pthread_mutex_unlock(&c->lock);
	return have;
}

static void ev_set_fd(struct maru_events *ev, int fd, uint64_t generation,
		      const uint8_t *owner)
{
	pthread_mutex_lock(&ev->wlock);
	ev->fd = fd;
	ev->generation = generation;
	ev->has_owner = owner != NULL;
	if (owner)
		memcpy(ev->owner, owner, sizeof(ev->owner));
	pthread_mutex_unlock(&ev->wlock);
}

/* Dial (connect, AUTH, HELLO), subscribe. Notes a generation change. */
static int ev_connect(struct maru_events *ev)
{
	struct maru_client *c = ev->c;
	struct proto_hello_rep *rep;
	uint8_t owner[16];
	uint64_t after;
	int fd, rc, have;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	have = client_token(c, owner);
	/* No HELLO_F_RECLAIM: the token names the owner, this socket still
	 * gets a session of its own. */
	fd = transport_dial(c, c->opts.timeout_ms, HELLO_F_EVENTS, have ? owner : NULL, rep);
	if (fd < 0) {
		free(rep);
		return fd;
	}
	after = ev->last_seq;
	if (ev->generation && rep->generation != ev->generation) {
		ev->gen_pending = 1;
		after = 0;
		ev->last_seq = 0;
	}
	rc = subscribe(fd, after, rep->generation);
	if (rc)
		goto out_close;
	ev_set_fd(ev, fd, rep->generation, have ? owner : NULL);
	free(rep);
	return 0;

out_close:
	close(fd);
	free(rep);
	return rc;
}

int maru_events_open(struct maru_client *c, uint64_t after_seq, struct maru_events **out)
{
	struct maru_events *ev;
	int rc;

	if (!c || !out)
		return -EINVAL;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ev->buf = malloc(EV_FRAME_MAX);
	if (!ev->buf) {
		free(ev);
		return -ENOMEM;
	}
	ev->c = c;
	ev->fd = -1;
	ev->last_seq = after_seq;
	ev->backoff = EV_BACKOFF_MIN_MS;
	pthread_mutex_init(&ev->wlock, NULL);
	rc = ev_connect(ev);
	if (rc) {
		pthread_mutex_destroy(&ev->wlock);
		free(ev->buf);
		free(ev);
		return rc == -EPROTO ? -EIO : rc;
	}
	pthread_mutex_init(&ev->lock, NULL);
	*out = ev;
	return 0;
}

void maru_events_close(struct maru_events *ev)
{
	if (!ev)
		return;
	if (ev->fd >= 0)
		close(ev->fd);
	pthread_mutex_destroy(&ev->lock);
	pthread_mutex_destroy(&ev->wlock);
	free(ev->buf);
	free(ev);
}

/* ---- decoding ---- */

static void copy_str(char *dst, size_t cap, const uint8_t *src, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int decode_event(const uint8_t *p, uint32_t len, struct maru_event *out)
{
	struct proto_event e;
	size_t off = sizeof(e);

	if (len < sizeof(e) || proto_rep_check(OP_EVENT, p, len))
		return -EPROTO;
	memcpy(&e, p, sizeof(e));
	if (off + e.namelen + e.name2len + e.pathlen + e.path2len > len)
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->event_size = sizeof(*out);
	out->seq = e.seq;
	out->time_ns = e.time_ns;
	/* DEV_* and MARU_EV_* share values; DEV_OVERFLOW is MARU_EV_OVERFLOW */
	out->type = e.type;
	out->flags = e.flags & EVENT_F_OWN ? MARU_EV_F_OWN : 0;
	out->ino = e.ino;
	out->parent = e.parent;
	out->parent2 = e.parent2;
	copy_str(out->name, sizeof(out->name), p + off, e.namelen);
	off += e.namelen;
	copy_str(out->name2, sizeof(out->name2), p + off, e.name2len);
	off += e.name2len;
	copy_str(out->path, sizeof(out->path), p + off, e.pathlen);
	off += e.pathlen;
	copy_str(out->path2, sizeof(out->path2), p + off, e.path2len);
	return 0;
}

/* Read one frame. 1: an event in *out; 0: a frame we skip; -errno: socket lost. */
static int read_event(struct maru_events *ev, struct maru_event *out)
{
	struct proto_hdr h;
	int rc;

	rc = sock_read_full(ev->fd, &h, sizeof(h));
	if (rc)
		return rc;
	if (proto_hdr_check(&h, EV_FRAME_MAX))
		return -EPROTO;
	rc = h.len ? sock_read_full(ev->fd, ev->buf, h.len) : 0;
	if (rc)
		return rc;
	if (h.op != OP_EVENT)
		return 0;
	rc = decode_event(ev->buf, h.len, out);
	if (rc)
		return rc;
	ev->last_seq = out->seq;
	return 1;
}

static void gen_event(struct maru_events *ev, struct maru_event *out)
{
	memset(out, 0, sizeof(*out));
	out->event_size = sizeof(*out);
	out->type = MARU_EV_GENERATION;
	out->time_ns = now_ns();
	ev->gen_pending = 0;
}

static void ev_drop_fd(struct maru_events *ev)
{
	pthread_mutex_lock(&ev->wlock);
	if (ev->fd >= 0)
		close(ev->fd);
	ev->fd = -1;
	pthread_mutex_unlock(&ev->wlock);
}

static void ev_lost(struct maru_events *ev, int err)
{
	ev_drop_fd(ev);
	if (!ev->down)
		clog_warn(ev->c, err, "event stream from marud at %s lost", ev->c->uri);
	ev->down = 1;
	ev->retry_at = mono_ms() + ev->backoff;
	ev->backoff = ev->backoff * 2 > EV_BACKOFF_MAX_MS ? EV_BACKOFF_MAX_MS : ev->backoff * 2;
}

/* Reconnect when due. 0 connected, 1 not yet, -EACCES fatal. */
static int ev_reconnect(struct maru_events *ev)
{
	int rc;

	if (mono_ms() < ev->retry_at)
		return 1;
	rc = ev_connect(ev);
	if (rc == -EACCES)
		return rc;
	if (rc) {
		ev_lost(ev, rc);
		return 1;
	}
	if (ev->down)
		clog_info(ev->c, "event stream from marud at %s resumed", ev->c->uri);
	ev->down = 0;
	ev->backoff = EV_BACKOFF_MIN_MS;
	return 0;
}

/* Milliseconds to wait until deadline (-1: forever), capped at cap. */
static int wait_ms(int64_t deadline, uint64_t cap)
{
	uint64_t now = mono_ms(), left;

	if (deadline < 0)
		return (int)cap;
	left = (uint64_t)deadline > now ? (uint64_t)deadline - now : 0;
	return (int)(left < cap ? left : cap);
}

/* One step; 1 event, 0 keep going, -errno fatal. */
static int ev_step(struct maru_events *ev, struct maru_event *out, int64_t deadline)
{
	struct pollfd pfd;
	uint64_t now;
	int rc, ms;

	if (ev->fd < 0) {
		rc = ev_reconnect(ev);
		if (rc == 1) {
			/* retry_at may have passed since ev_reconnect looked: never
			 * let the difference wrap into a huge (as int: -1, forever) wait */
			now = mono_ms();
			ms = wait_ms(deadline, ev->retry_at > now ? ev->retry_at - now : 0);
			poll(NULL, 0, ms);
		}
		return rc < 0 ? rc : 0;
	}
	pfd.fd = ev->fd;
	pfd.events = POLLIN;
	ms = wait_ms(deadline, 1000);
	rc = poll(&pfd, 1, ms);
	if (rc <= 0)
		return 0;
	rc = read_event(ev, out);
	if (rc < 0)
		ev_lost(ev, rc);
	return rc > 0 ? 1 : 0;
}

int maru_events_next(struct maru_events *ev, struct maru_event *out, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : (int64_t)(mono_ms() + (uint64_t)timeout_ms);
	int rc = 0;

	if (!ev || !out)
		return -EINVAL;
	pthread_mutex_lock(&ev->lock);
	for (;;) {
		if (atomic_exchange(&ev->reown, 0) && ev->fd >= 0) {
			/* Resubscribe at once after what was delivered: nothing is
			 * lost, and marud learns the client's new token. */
			ev_drop_fd(ev);
			ev->retry_at = 0;
		}
		if (ev->gen_pending) {
			gen_event(ev, out);
			rc = 1;
			break;
		}
		rc = ev_step(ev, out, deadline);
		if (rc != 0)
			break;
		if (ev->gen_pending)
			continue;
		if (deadline >= 0 && mono_ms() >= (uint64_t)deadline)
			break;
	}
	pthread_mutex_unlock(&ev->lock);
	return rc;
}

int maru_events_ack(struct maru_events *ev, uint64_t seq)
{
	struct proto_ack_req q = { .seq = seq };
	struct proto_hdr h;
	uint8_t token[16];
	int have, rc;

	if (!ev)
		return -EINVAL;
	have = client_token(ev->c, token);
	pthread_mutex_lock(&ev->wlock);
	if (have && (!ev->has_owner || memcmp(token, ev->owner, sizeof(token))))
		atomic_store(&ev->reown, 1);
	if (ev->fd < 0) {
		/* Not subscribed: marud holds no record of us to update. */
		rc = -ENOTCONN;
	} else {
		/* reqid 0: marud answers nothing; a lost socket shows on read. */
		proto_hdr_init(&h, OP_EVENT_ACK, sizeof(q), 0, ev->generation, 0);
		rc = proto_send(ev->fd, &h, &q, sizeof(q), NULL, 0);
	}
	pthread_mutex_unlock(&ev->wlock);
	return rc;
}
