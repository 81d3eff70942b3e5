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
 * A partition does not break a socket, it silences it. A stream quiet for a
 * third of its stall bound is PINGed (marud answers PINGs on an event
 * socket); one that hears nothing at all for the whole bound is taken as
 * lost and redialled, so that the stream comes back when the network does
 * rather than when TCP's backed-off retransmissions get through. Every loss
 * is counted and the caller can ask (maru_events_up) whether the stream is
 * up and how many losses there were: a subscriber that keeps caches must
 * treat them as stale across a loss, since marud answers changes without
 * waiting for a stream it cannot reach.
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
#include "route.h"

#define EV_BACKOFF_MIN_MS	10
#define EV_BACKOFF_MAX_MS	500
#define EV_FRAME_MAX		(64u * 1024)
#define EV_STALL_MIN_MS		1000
#define EV_STALL_MAX_MS		5000

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
	uint64_t heard_at;		/* monotonic ms a frame last came (or the dial) */
	int pinged;			/* a PING went since then */
	unsigned int stall_ms;		/* silent this long: lost */
	atomic_uint_fast64_t losses;	/* up -> down transitions */
	struct route_events *rev;	/* a routed client's: its pools' merged */
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
	ev->heard_at = mono_ms();
	ev->pinged = 0;
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
	/* a routed client: its pools' streams merged (lib/cluster/route_events.c) */
	if (c->route) {
		rc = route_events_open(c, &ev->rev);
		if (rc)
			free(ev);
		else
			*out = ev;
		return rc;
	}
	ev->buf = malloc(EV_FRAME_MAX);
	if (!ev->buf) {
		free(ev);
		return -ENOMEM;
	}
	ev->c = c;
	ev->fd = -1;
	ev->last_seq = after_seq;
	ev->backoff = EV_BACKOFF_MIN_MS;
	/* half the call bound: lost well before a call on it would give up */
	ev->stall_ms = c->opts.timeout_ms / 2;
	if (ev->stall_ms < EV_STALL_MIN_MS)
		ev->stall_ms = EV_STALL_MIN_MS;
	if (ev->stall_ms > EV_STALL_MAX_MS)
		ev->stall_ms = EV_STALL_MAX_MS;
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

int maru_events_up(struct maru_events *ev, uint64_t *losses)
{
	int up;

	if (!ev)
		return -EINVAL;
	if (ev->rev)
		return route_events_up(ev->rev, losses);
	if (losses)
		*losses = atomic_load(&ev->losses);
	pthread_mutex_lock(&ev->wlock);
	up = ev->fd >= 0;
	pthread_mutex_unlock(&ev->wlock);
	return up;
}

void maru_events_close(struct maru_events *ev)
{
	if (!ev)
		return;
	if (ev->rev) {
		route_events_close(ev->rev);
		free(ev);
		return;
	}
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
	out->flags = (e.flags & EVENT_F_OWN ? MARU_EV_F_OWN : 0) |
		     (e.flags & EVENT_F_UNWAITED ? MARU_EV_F_UNWAITED : 0);
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
	ev->heard_at = mono_ms();
	ev->pinged = 0;
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
	if (!ev->down) {
		clog_warn(ev->c, err, "event stream from marud at %s lost", ev->c->uri);
		atomic_fetch_add(&ev->losses, 1);
	}
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

/*
 * A quiet stream: PING it at a third of the stall bound (any frame back
 * proves it flows). Returns how long poll may wait before looking again,
 * at most cap.
 */
static int ev_quiet(struct maru_events *ev, int cap)
{
	uint64_t now = mono_ms(), quiet = now - ev->heard_at, ping_at = ev->stall_ms / 3;
	struct proto_hdr h;
	uint64_t next;

	if (quiet >= ev->stall_ms)
		return 0;
	if (quiet >= ping_at && !ev->pinged) {
		proto_hdr_init(&h, OP_PING, 0, 1, ev->generation, 0);
		pthread_mutex_lock(&ev->wlock);
		/* a failed send shows as a lost socket on the next read */
		(void)proto_send(ev->fd, &h, NULL, 0, NULL, 0);
		pthread_mutex_unlock(&ev->wlock);
		ev->pinged = 1;
	}
	next = (ev->pinged ? ev->stall_ms : ping_at) - quiet;
	return next < (uint64_t)cap ? (int)next : cap;
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
	ms = ev_quiet(ev, wait_ms(deadline, 1000));
	pfd.fd = ev->fd;
	pfd.events = POLLIN;
	rc = poll(&pfd, 1, ms);
	if (rc <= 0) {
		/* nothing waiting to be read (a stopped process's backlog is
		 * read first): silent past the bound is lost */
		now = mono_ms() - ev->heard_at;
		if (rc == 0 && now >= ev->stall_ms) {
			clog_warn(ev->c, -ETIMEDOUT,
				  "event stream from marud at %s silent for %llu ms",
				  ev->c->uri, (unsigned long long)now);
			ev_lost(ev, -ETIMEDOUT);
		}
		return 0;
	}
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
	if (ev->rev)
		return route_events_next(ev->rev, out, timeout_ms);
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
	if (ev->rev)
		return route_events_ack(ev->rev, seq);
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
