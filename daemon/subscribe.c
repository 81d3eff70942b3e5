// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/subscribe.c: event subscribers and their acknowledgements. It owns
 * the registry of subscribed connections, SUBSCRIBE (the connection's thread
 * becomes an event pusher; a reader thread of its own takes PINGs and
 * EVENT_ACKs off the socket, so an ACK is seen the moment it arrives), and
 * the waits for acknowledgements that give close-to-open across mounts: a
 * change waits, bounded, until the other sessions' subscribers applied it.
 * A subscriber that misses one deadline leaves the set changes wait on at
 * once (dropped), so that an unreachable mount costs at most one wait, and
 * rejoins it the moment it acknowledges the event it missed; the events
 * pushed to it meanwhile carry EVENT_F_UNWAITED, which tells the mount that
 * changes were answered without it and its caches must be revalidated.
 * A stream joins (first ack) or rejoins only when it has caught up, within
 * SUB_LAG_MAX events of the newest: one replaying a long backlog (a mount
 * back from a partition) would otherwise make the next change wait out the
 * bound while it works through it.
 *
 * Locks: subs_lock guards the registry (each sub's acked/acking/dropped/listed
 * fields) and the list of lock-holding changes waiting for acks; sub.wlock
 * orders the writes of a subscriber's two threads on its socket. Neither is
 * taken under the other (a pusher takes wlock alone; subs_lock is never held
 * across a socket write) and neither is held across a dir_*() call.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "confine.h"
#include "dir.h"
#include "log.h"
#include "server_priv.h"
#include "session.h"
#include "subscribe.h"
#include "wire.h"

#define SUB_BATCH		16
#define SUB_WAIT_MS		1000
#define SUB_READER_STACK	(64U << 10)
#define SUB_LOG_PER_S		5
#define SUB_LAG_MAX		64	/* events behind the newest: caught up */

/*
 * One subscribed connection, in server.subs from its start to its end. Its
 * connection thread pushes events; its reader thread reads the socket.
 */
struct sub {
	struct sub *prev, *next;
	struct conn *c;
	uint64_t acked;		/* subs_lock: every event up to it applied */
	uint64_t start;		/* it subscribed after this event */
	int acking;		/* subs_lock: an ACK came; changes wait for it */
	uint64_t dropped;	/* subs_lock: the event it missed; 0: waited on */
	uint64_t dropped_ns;	/* subs_lock: when */
	atomic_int unwaited;	/* dropped: events pushed say EVENT_F_UNWAITED */
	int listed;		/* subs_lock */
	atomic_int gone;	/* the reader saw the peer leave */
	/* scoped streams (confine.h): events held back are acknowledged for it */
	uint64_t last_sent;	/* subs_lock: the last event pushed */
	uint64_t skip_to;	/* subs_lock: the last event held back after it */
	pthread_mutex_t wlock;	/* socket writes: events vs PING replies */
	pthread_t reader;
};

/* A change waiting for acknowledgements (on the waiter's stack). */
struct ack_wait {
	struct ack_wait *prev, *next;	/* subs_lock: server.waits */
	const struct conn *c;		/* the requester */
	uint64_t seq;
	int listed;			/* it holds a kernel directory lock */
};

int subs_init(struct server *srv)
{
	int rc = -pthread_mutex_init(&srv->subs_lock, NULL);

	if (rc)
		return rc;
	rc = cond_init_mono(&srv->subs_cond);
	if (rc)
		pthread_mutex_destroy(&srv->subs_lock);
	return rc;
}

void subs_destroy(struct server *srv)
{
	pthread_cond_destroy(&srv->subs_cond);
	pthread_mutex_destroy(&srv->subs_lock);
}

static void sub_list(struct server *srv, struct sub *s)
{
	pthread_mutex_lock(&srv->subs_lock);
	s->next = srv->subs;
	if (s->next)
		s->next->prev = s;
	srv->subs = s;
	s->listed = 1;
	pthread_mutex_unlock(&srv->subs_lock);
}

/* Leave the registry (either thread, once); waiters may be waiting on it. */
static void sub_unlist(struct server *srv, struct sub *s)
{
	pthread_mutex_lock(&srv->subs_lock);
	if (s->listed) {
		if (s->prev)
			s->prev->next = s->next;
		else
			srv->subs = s->next;
		if (s->next)
			s->next->prev = s->prev;
		s->listed = 0;
		if (s->acking && !s->dropped)
			atomic_fetch_sub(&srv->nacking, 1);
		pthread_cond_broadcast(&srv->subs_cond);
	}
	pthread_mutex_unlock(&srv->subs_lock);
}

/*
 * One line per drop or rejoin, at most SUB_LOG_PER_S a second; the lines
 * left out are counted in the next one. (subs_lock held)
 */
static int sub_log_ok(unsigned int *skipped)
{
	static uint64_t window_ns;
	static unsigned int in_window, left_out;
	uint64_t now = mono_ns();

	if (now - window_ns >= 1000000000ULL) {
		window_ns = now;
		in_window = 0;
	}
	if (in_window >= SUB_LOG_PER_S) {
		left_out++;
		return 0;
	}
	in_window++;
	*skipped = left_out;
	left_out = 0;
	return 1;
}

/* s missed the deadline of event seq: no change waits for it any more. */
static void sub_drop(struct server *srv, struct sub *s, uint64_t seq)
{
	unsigned int skipped;

	s->dropped = seq;
	s->dropped_ns = mono_ns();
	atomic_store(&s->unwaited, 1);
	atomic_fetch_sub(&srv->nacking, 1);
	atomic_fetch_add(&srv->ack_drops, 1);
	if (sub_log_ok(&skipped))
		log_info("%s: subscriber of session %llu did not acknowledge event %llu "
			 "in time (acked %llu): changes no longer wait for it until it "
			 "does (%u similar lines left out)", s->c->peer,
			 (unsigned long long)s->c->owner_sid, (unsigned long long)seq,
			 (unsigned long long)s->acked, skipped);
}

/* s acknowledged the event it missed: changes wait for it again. */
static void sub_rejoin(struct server *srv, struct sub *s)
{
	unsigned int skipped;

	if (sub_log_ok(&skipped))
		log_info("%s: subscriber of session %llu acknowledged event %llu after "
			 "%llu ms: changes wait for it again (%u similar lines left out)",
			 s->c->peer, (unsigned long long)s->c->owner_sid,
			 (unsigned long long)s->dropped,
			 (unsigned long long)((mono_ns() - s->dropped_ns) / 1000000), skipped);
	s->dropped = 0;
	atomic_store(&s->unwaited, 0);
	atomic_fetch_add(&srv->nacking, 1);
	atomic_fetch_add(&srv->ack_rejoins, 1);
}

/* Has s applied everything but the last few events (newest)? */
static int sub_caught_up(const struct sub *s, uint64_t newest)
{
	uint64_t at = s->acked > s->start ? s->acked : s->start;

	return newest <= at + SUB_LAG_MAX;
}

static void sub_ack(struct server *srv, struct sub *s, uint64_t seq)
{
	uint64_t newest = 0;
	int steady;

	/* the newest event only matters to a stream not waited on yet (the
	 * dir lock is not taken under subs_lock, nor for every ack) */
	pthread_mutex_lock(&srv->subs_lock);
	steady = s->acking && !s->dropped;
	pthread_mutex_unlock(&srv->subs_lock);
	if (!steady)
		newest = dir_event_seq(srv->dir);
	pthread_mutex_lock(&srv->subs_lock);
	/* events held back after the last one pushed count as applied */
	if (seq >= s->last_sent && s->skip_to > seq)
		seq = s->skip_to;
	if (seq > s->acked)
		s->acked = seq;
	/* (a state that changed since it was looked at waits for the next ack) */
	if (!s->acking && s->listed && !steady && sub_caught_up(s, newest)) {
		s->acking = 1;
		atomic_fetch_add(&srv->nacking, 1);
		log_debug("%s: subscriber acknowledges events", s->c->peer);
	}
	if (s->dropped && s->listed && !steady && s->acked >= s->dropped &&
	    sub_caught_up(s, newest))
		sub_rejoin(srv, s);
	pthread_cond_broadcast(&srv->subs_cond);
	pthread_mutex_unlock(&srv->subs_lock);
}

/* Is s the event stream of c's own session? */
static int sub_owned_by(const struct sub *s, const struct conn *c)
{
	return s->c->has_owner && c->sess &&
	       !memcmp(s->c->owner, session_token(c->sess), SESSION_TOKEN_BYTES);
}

/* Must a change by c up to event seq wait for s? (subs_lock held) */
static int sub_behind(const struct sub *s, const struct conn *c, uint64_t seq)
{
	if (!s->acking || s->dropped || s->acked >= seq)
		return 0;
	/* The requester keeps its own caches: its own stream is not waited for. */
	return !sub_owned_by(s, c);
}

/*
 * A lock-holding change by c need not wait for s when s's own session has a
 * lock-holding change waiting for c's stream: each mount's notifier may be
 * stuck behind the directory lock its own change holds, so neither could
 * acknowledge before the bound. Both go at once instead. (subs_lock held)
 */
static int sub_in_cycle(struct server *srv, const struct sub *s, const struct conn *c)
{
	const struct ack_wait *w;
	const struct sub *t;

	for (w = srv->waits; w; w = w->next) {
		if (w->c == c || !sub_owned_by(s, w->c))
			continue;
		for (t = srv->subs; t; t = t->next)
			if (sub_owned_by(t, c) && sub_behind(t, w->c, w->seq))
				return 1;
	}
	return 0;
}

static int sub_holds_up(struct server *srv, const struct sub *s, const struct ack_wait *me)
{
	if (!sub_behind(s, me->c, me->seq))
		return 0;
	return !(me->listed && sub_in_cycle(srv, s, me->c));
}

static int subs_behind(struct server *srv, const struct ack_wait *me)
{
	const struct sub *s;

	for (s = srv->subs; s; s = s->next)
		if (sub_holds_up(srv, s, me))
			return 1;
	return 0;
}

/*
 * Count and drop those that missed the deadline; the other waiters, woken,
 * no longer wait for them either.
 */
static void subs_missed(struct server *srv, const struct ack_wait *me)
{
	struct sub *s;

	for (s = srv->subs; s; s = s->next) {
		if (!sub_holds_up(srv, s, me))
			continue;
		atomic_fetch_add(&srv->ack_timeouts, 1);
		sub_drop(srv, s, me->seq);
	}
	pthread_cond_broadcast(&srv->subs_cond);
}

/* A lock-holding wait is listed, so that its counterpart can see a cycle. */
static void wait_list(struct server *srv, struct ack_wait *w)
{
	w->next = srv->waits;
	if (w->next)
		w->next->prev = w;
	srv->waits = w;
	w->listed = 1;
	pthread_cond_broadcast(&srv->subs_cond);
}

static void wait_unlist(struct server *srv, struct ack_wait *w)
{
	if (!w->listed)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		srv->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
}

/*
 * Close-to-open across mounts: before c's change up to event seq is
 * answered, every acknowledging subscriber of another session applies it,
 * or ms pass. Called with no lock held (the dir lock above all).
 */
void subs_acks_wait(struct conn *c, uint64_t seq, unsigned int ms, int holds_lock)
{
	struct ack_wait me = { .c = c, .seq = seq };
	struct server *srv = c->srv;
	struct timespec ts;

	deadline_ms(&ts, ms);
	pthread_mutex_lock(&srv->subs_lock);
	if (holds_lock)
		wait_list(srv, &me);
	while (subs_behind(srv, &me) && !atomic_load(&srv->stopping)) {
		if (pthread_cond_timedwait(&srv->subs_cond, &srv->subs_lock, &ts) == ETIMEDOUT) {
			subs_missed(srv, &me);
			break;
		}
	}
	wait_unlist(srv, &me);
	pthread_mutex_unlock(&srv->subs_lock);
}

/*
 * How long a successful op waits for acknowledgements; 0: not at all.
 * PUBLISH runs at close, under no kernel directory lock, so it can wait
 * long. The others hold one on the requesting mount: two of them in one
 * directory on two mounts would each wait for the other mount's notifier,
 * which is blocked on that lock; the short bound breaks that cycle.
 */
unsigned int subs_ack_wait_ms(struct server *srv, uint16_t op)
{
	switch (op) {
	case OP_PUBLISH:
		return atomic_load(&srv->ack_publish_ms);
	case OP_RENAME:
	case OP_UNLINK:
	case OP_MKDIR:
	case OP_RMDIR:
	case OP_SETATTR:
	case OP_SYMLINK:
	case OP_LINK:
	case OP_MKNOD:
		return atomic_load(&srv->ack_ms);
	default:
		return 0;
	}
}

/* ---- SUBSCRIBE: the connection becomes an event pusher ---- */

static int send_event(struct conn *c, const struct dir_event *e, uint32_t flags)
{
	struct proto_event w = {
		.seq = e->seq, .time_ns = e->time_ns, .type = e->type,
		/* the owner's own change: nobody waits for this stream's ack of it */
		.flags = flags | (e->origin && e->origin == c->owner_sid ? EVENT_F_OWN : 0),
		.ino = e->ino, .parent = e->parent, .parent2 = e->parent2,
		.namelen = (uint16_t)strnlen(e->name, sizeof(e->name)),
		.name2len = (uint16_t)strnlen(e->name2, sizeof(e->name2)),
		.pathlen = (uint16_t)strnlen(e->path, sizeof(e->path)),
		.path2len = (uint16_t)strnlen(e->path2, sizeof(e->path2)),
	};
	struct iovec iov[6];
	struct proto_hdr h;
	uint32_t n = sizeof(w) + w.namelen + w.name2len + w.pathlen + w.path2len;

	proto_hdr_init(&h, OP_EVENT, n, 0, c->srv->generation, 0);
	iov[0] = (struct iovec){ &h, sizeof(h) };
	iov[1] = (struct iovec){ &w, sizeof(w) };
	iov[2] = (struct iovec){ (void *)e->name, w.namelen };
	iov[3] = (struct iovec){ (void *)e->name2, w.name2len };
	iov[4] = (struct iovec){ (void *)e->path, w.pathlen };
	iov[5] = (struct iovec){ (void *)e->path2, w.path2len };
	return wire_sendv(c, iov, 6);
}

/* One frame from a subscriber: PING or EVENT_ACK. Non-zero: stop reading. */
static int sub_frame(struct sub *s)
{
	struct conn *c = s->c;
	struct proto_ack_req a;
	struct proto_hdr h;
	int rc;

	if (wire_recv(c, &h, sizeof(h)))
		return 1;
	rc = proto_hdr_check(&h, sizeof(a));
	if (!rc && (h.op == OP_PING || h.op == OP_EVENT_ACK))
		rc = wire_recv(c, &a, h.len) ? 1 : proto_req_check(h.op, &a, h.len);
	if (rc || (h.op != OP_PING && h.op != OP_EVENT_ACK)) {
		if (rc <= 0)
			log_warnx("%s: %s: protocol violation: only PING and EVENT_ACK are "
				  "allowed after SUBSCRIBE; closing", c->peer,
				  proto_op_name(h.op));
		return 1;
	}
	atomic_fetch_add(&c->srv->ops[h.op], 1);
	if (h.op == OP_EVENT_ACK) {
		sub_ack(c->srv, s, a.seq);
		return 0;
	}
	pthread_mutex_lock(&s->wlock);
	rc = wire_reply(c, &h, 0, NULL, 0);
	pthread_mutex_unlock(&s->wlock);
	return rc;
}

static void *sub_reader(void *arg)
{
	struct sub *s = arg;
	struct conn *c = s->c;

	while (!sub_frame(s))
		;
	/* Waiters stop waiting for it now, and the pusher leaves its wait. */
	sub_unlist(c->srv, s);
	atomic_store(&s->gone, 1);
	shutdown(c->fd, SHUT_RDWR);
	dir_events_kick(c->srv->dir);
	return NULL;
}

static int sub_start(struct sub *s)
{
	pthread_attr_t attr;
	int rc;

	pthread_mutex_init(&s->wlock, NULL);
	sub_list(s->c->srv, s);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, SUB_READER_STACK);
	rc = -pthread_create(&s->reader, &attr, sub_reader, s);
	pthread_attr_destroy(&attr);
	if (rc) {
		log_warn(rc, "%s: subscriber reader thread", s->c->peer);
		sub_unlist(s->c->srv, s);
		pthread_mutex_destroy(&s->wlock);
	}
	return rc;
}

static void sub_end(struct sub *s)
{
	/* Wakes the reader out of its recv; conn_main closes the fd. */
	shutdown(s->c->fd, SHUT_RDWR);
	pthread_join(s->reader, NULL);
	sub_unlist(s->c->srv, s);
	pthread_mutex_destroy(&s->wlock);
}

/* A peer that hung up is noticed before waiting (the reader kicks too). */
static int sub_peer_gone(struct sub *s)
{
	struct pollfd pfd = { .fd = s->c->fd, .events = POLLRDHUP };

	if (atomic_load(&s->gone))
		return 1;
	return poll(&pfd, 1, 0) > 0 &&
	       (pfd.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL));
}

/*
 * A scoped stream is pushed only the events inside its root (confine.c);
 * the others are acknowledged for it, so that no change outside waits on a
 * stream that will never see it. Returns how many of ev[0..n) remain.
 */
static int sub_filter(struct server *srv, struct sub *s, struct dir_event *ev, int n)
{
	uint64_t skipped = 0, sent = 0;
	int i, k = 0;

	if (!s->c->tenant || n <= 0)
		return n;

	for (i = 0; i < n; i++) {
		if (confine_event(s->c, &ev[i])) {
			/* its own session's changes wait for nobody's ack: the
			 * client acks them only with a later event */
			if (!ev[i].origin || ev[i].origin != s->c->owner_sid)
				sent = ev[i].seq;
			if (k != i)
				ev[k] = ev[i];
			k++;
			skipped = 0;
		} else {
			skipped = ev[i].seq;
		}
	}
	/* (only the mark moves: whether changes wait on s is its own acks' say) */
	pthread_mutex_lock(&srv->subs_lock);
	if (sent)
		s->last_sent = sent;
	s->skip_to = skipped;
	if (skipped && s->acked >= s->last_sent && skipped > s->acked) {
		s->acked = skipped;
		pthread_cond_broadcast(&srv->subs_cond);
	}
	pthread_mutex_unlock(&srv->subs_lock);
	return k;
}

static void sub_push(struct sub *s, uint64_t after, struct dir_event *ev)
{
	struct server *srv = s->c->srv;
	uint32_t flags;
	int i, n, rc = 0;

	while (!atomic_load(&srv->stopping) && !sub_peer_gone(s)) {
		n = dir_events_wait(srv->dir, after, ev, SUB_BATCH, SUB_WAIT_MS);
		if (n > 0)
			after = ev[n - 1].seq;
		n = sub_filter(srv, s, ev, n);
		flags = atomic_load(&s->unwaited) ? EVENT_F_UNWAITED : 0;
		pthread_mutex_lock(&s->wlock);
		for (i = 0; i < n && !rc; i++)
			rc = send_event(s->c, &ev[i], flags);
		pthread_mutex_unlock(&s->wlock);
		if (n < 0 || rc)
			break;
	}
}

int hdl_subscribe(struct conn *c, const struct proto_hdr *h, const uint8_t *p, uint32_t len,
		struct pbuf *out)
{
	const struct proto_subscribe_req *r = (const void *)p;
	struct server *srv = c->srv;
	uint64_t after = r->after_seq ? r->after_seq : dir_event_seq(srv->dir);
	struct dir_event *ev = malloc(SUB_BATCH * sizeof(*ev));
	struct sub *s = calloc(1, sizeof(*s));

	if (!ev || !s) {
		free(ev);
		free(s);
		return -ENOMEM;
	}
	s->c = c;
	s->start = after;
	c->replied = 1;
	c->close = 1;
	if (wire_reply(c, h, 0, NULL, 0) || sub_start(s))
		goto out;
	log_debug("%s: subscribed after seq %llu", c->peer, (unsigned long long)after);
	sub_push(s, after, ev);
	sub_end(s);
out:
	free(s);
	free(ev);
	return 0;
}

