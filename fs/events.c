/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/events.c: the event subscription thread of marufs. It reads the pool's
 * event stream (maru_events_next), appends each event to the .maru/events
 * ring (evring.c), bumps the directory change counters (dcache.c) and turns
 * the event into invalidation jobs (notify.c), meeting the expectations of
 * handlers waiting for their own change. When it has caught up with the
 * stream it queues an ack behind those invalidations: the notifier then
 * tells marud (maru_events_ack) that this mount applied every event so far,
 * which is what lets a change on another mount return only once this mount
 * can no longer serve the old answer from the kernel's caches; events of
 * this mount's own publishes (MARU_EV_F_OWN) are nobody's wait and are not
 * acked by themselves. It also makes the directory attributes kept in
 * dattr.c stale for every change but those. A lost stream drops every
 * cached name and resubscribes.
 *
 * Without hostages: marud stops waiting for a mount that missed an ack
 * deadline, so changes elsewhere were answered while this mount could not
 * apply them. When the stream says so (MARU_EV_F_UNWAITED), and when it
 * was lost (broken, or silent past its bound: a partition) and again when
 * it is back, nothing cached here is vouched for: the kernel's names and
 * attributes, the directory attributes and the cached leases are dropped,
 * and what is asked next is asked of marud.
 *
 * Lock: ev->lock guards the subscription handle the notifier acks on; it is
 * held across maru_events_ack() (a short socket write) so that this thread
 * cannot close the handle under it, and nothing else is taken under it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "away.h"
#include "clock.h"
#include "dattr.h"
#include "dcache.h"
#include "events.h"
#include "evring.h"
#include "inode.h"
#include "log.h"
#include "notify.h"

#define ACK_EVERY	32	/* events between acks on a stream that never pauses */
#define NEXT_WAIT_MS	200
#define RETRY_OPEN_US	200000
#define RETRY_LOST_US	100000

struct events {
	struct mfs *m;
	pthread_t thread;
	pthread_mutex_t lock;
	struct maru_events *sub;	/* lock: what acks are sent on */
	int stop;
	/* the event thread's own: what it last saw of the stream */
	uint64_t losses;		/* maru_events_up()'s count */
	int down;			/* lost and not back yet */
	int unwaited;			/* the last event said MARU_EV_F_UNWAITED */
};

static int stopping(struct events *ev)
{
	return __atomic_load_n(&ev->stop, __ATOMIC_ACQUIRE);
}

static void set_sub(struct events *ev, struct maru_events *sub)
{
	pthread_mutex_lock(&ev->lock);
	ev->sub = sub;
	pthread_mutex_unlock(&ev->lock);
}

static void close_sub(struct events *ev, struct maru_events *sub)
{
	set_sub(ev, NULL);
	maru_events_close(sub);
}

/* Notifier thread: every job queued before this one ran. */
static void run_ack(void *arg, uint64_t seq)
{
	struct events *ev = arg;
	int rc = -ENOTCONN;

	pthread_mutex_lock(&ev->lock);
	if (ev->sub)
		rc = maru_events_ack(ev->sub, seq);
	pthread_mutex_unlock(&ev->lock);
	/* A lost stream shows on the event thread; nothing to do here. */
	if (rc)
		log_debug("event ack %" PRIu64 ": %s", seq, strerror(-rc));
}

/* Removals invalidate but are nobody's awaited change. */
static int expected(uint32_t type)
{
	return type != MARU_EV_UNLINK && type != MARU_EV_EVICT && type != MARU_EV_RMDIR;
}

/*
 * Is version e->ino what the kernel already has under (parent, name)? This
 * mount created it and handed the kernel its inode with the create. Events
 * come in order, so the kernel's entry can only be that version (or a later
 * one, whose own event follows) and has nothing to invalidate.
 */
static int entry_current(struct mfs *m, const struct maru_event *e)
{
	char name[MARU_NAME_MAX + 1];
	uint64_t parent;

	if (e->type != MARU_EV_PUBLISH && e->type != MARU_EV_REPLACE)
		return 0;
	return e->ino && itab_name(m->tab, e->ino, &parent, name, sizeof(name)) == 0 &&
	       parent == e->parent && strcmp(name, e->name) == 0;
}

/* What away.c kept of the names an event changed is no answer any more. */
static void away_event(struct mfs *m, const struct maru_event *e)
{
	char name[MARU_NAME_MAX + 1];
	uint64_t parent;

	if (e->type == MARU_EV_OVERFLOW || e->type == MARU_EV_GENERATION) {
		away_clear(m->aw);
		return;
	}
	if (e->name[0])
		away_forget(m->aw, e->parent, e->name);
	if (e->type == MARU_EV_RENAME && e->name2[0])
		away_forget(m->aw, e->parent2, e->name2);
	/* an attribute change or a new link: the names the kernel knows it by */
	if (e->ino && itab_name(m->tab, e->ino, &parent, name, sizeof(name)) == 0)
		away_forget(m->aw, parent, name);
}

/*
 * From another mount's publish (marud's clock at the event, CLOCK_REALTIME)
 * to its event here, where the name is invalidated: how long this mount
 * could still see the old version. Clocks of two hosts differ: a negative
 * span counts as 0.
 */
static void publish_seen(struct mfs *m, const struct maru_event *e)
{
	uint64_t now;

	if ((e->type != MARU_EV_PUBLISH && e->type != MARU_EV_REPLACE) || !e->time_ns ||
	    !hist_on())
		return;
	now = now_ns();
	hist_observe(&m->cnt.publish_visible, now > e->time_ns ? now - e->time_ns : 0);
}

static void handle_event(struct mfs *m, const struct maru_event *e)
{
	CNT_INC(m, events);
	away_event(m, e);
	dcache_dir_changed(m->dc, e->parent);
	if (e->type == MARU_EV_RENAME)
		dcache_dir_changed(m->dc, e->parent2);
	/* The directory attributes kept here: this mount's own publish left
	 * them as its reply said; any other change, in the directory or of
	 * it (e->ino), makes them stale. */
	if (e->flags & MARU_EV_F_OWN) {
		CNT_INC(m, events_own);
	} else {
		publish_seen(m, e);
		dattr_changed(m->da, e->parent);
		if (e->parent2)
			dattr_changed(m->da, e->parent2);
		if (e->ino)
			dattr_changed(m->da, e->ino);
	}
	evring_append(m->ring, e);
	if (entry_current(m, e)) {
		CNT_INC(m, events_current);
		notify_name_current(m->nt, e->parent, e->name);
		return;
	}
	switch (e->type) {
	case MARU_EV_PUBLISH:
	case MARU_EV_REPLACE:
	case MARU_EV_UNLINK:
	case MARU_EV_EVICT:
	case MARU_EV_MKDIR:
	case MARU_EV_RMDIR:
	case MARU_EV_SYMLINK:
	case MARU_EV_MKNOD:
		notify_name_changed(m->nt, e->parent, e->name, expected(e->type));
		if (e->type == MARU_EV_RMDIR && e->ino)
			notify_inval_inode(m->nt, e->ino);
		break;
	case MARU_EV_LINK:
		/* a new name, and the version's nlink changed */
		notify_name_changed(m->nt, e->parent, e->name, 1);
		notify_inval_inode(m->nt, e->ino);
		break;
	case MARU_EV_RENAME:
		notify_name_changed(m->nt, e->parent, e->name, 0);
		notify_name_changed(m->nt, e->parent2, e->name2, 1);
		break;
	case MARU_EV_SETATTR:
		notify_inval_inode(m->nt, e->ino);
		break;
	case MARU_EV_OVERFLOW:
	case MARU_EV_GENERATION:
		__atomic_add_fetch(&m->overflows, 1, __ATOMIC_ACQ_REL);	/* handle.c */
		maru_lease_cache_clear(m->lc);	/* missed removals, or other leases */
		dattr_stream(m->da, 1);	/* every directory may have changed */
		notify_inval_all(m->nt);
		break;
	}
	/* a removed version's bytes are kept by no lease of ours */
	if ((e->type == MARU_EV_UNLINK || e->type == MARU_EV_EVICT) && e->ino)
		maru_lease_cache_drop(m->lc, e->ino);
}

/* Nothing cached here is vouched for any more (see the top). */
static void caches_stale(struct mfs *m, const char *why)
{
	log_info("%s: cached names, attributes and leases are dropped; the next "
		 "calls ask marud", why);
	maru_lease_cache_clear(m->lc);
	dattr_stream(m->da, 1);
	notify_inval_all(m->nt);
}

/* A change answered without us: once per run of flagged events. */
static void note_unwaited(struct events *ev, const struct maru_event *e)
{
	int flagged = (e->flags & MARU_EV_F_UNWAITED) != 0;

	if (flagged && !ev->unwaited)
		caches_stale(ev->m, "marud stopped waiting for this mount's acknowledgements");
	ev->unwaited = flagged;
}

/*
 * After each look at the stream: did libmaru lose it since (and is it back)?
 * Returns 1 when it just came back: the caller acks at once, so that other
 * mounts' changes wait for the new stream again.
 */
static int watch_stream(struct events *ev, struct maru_events *sub)
{
	struct mfs *m = ev->m;
	uint64_t losses;
	int up = maru_events_up(sub, &losses);

	if (up < 0)
		return 0;
	if (losses != ev->losses && !ev->down) {
		ev->losses = losses;
		notify_stream_up(m->nt, 0);
		dattr_stream(m->da, 0);
		caches_stale(m, "event stream lost");
		ev->down = 1;
	}
	ev->losses = losses;
	if (!ev->down || !up)
		return 0;
	ev->down = 0;
	away_back(m->aw);
	caches_stale(m, "event stream back");
	notify_stream_up(m->nt, 1);
	return 1;
}

/* Subscribe; events between a loss and this subscription are gone. */
static struct maru_events *subscribe(struct events *ev, int *warned)
{
	struct maru_events *sub;
	int rc = maru_events_open(ev->m->c, 0, &sub);

	if (rc < 0) {
		if (!(*warned)++)
			log_warn(rc, "event stream");
		usleep(RETRY_OPEN_US);
		return NULL;
	}
	if (*warned)
		notify_inval_all(ev->m->nt);
	*warned = 0;
	ev->losses = 0;
	ev->down = 0;
	ev->unwaited = 0;
	set_sub(ev, sub);
	away_back(ev->m->aw);
	dattr_stream(ev->m->da, 1);
	/* Say at once that this stream acknowledges: marud makes other
	 * mounts' changes wait for it only from its first ack on, and a mount
	 * that only writes acks nothing else (its own events need none). */
	notify_call(ev->m->nt, run_ack, ev, 0);
	notify_stream_up(ev->m->nt, 1);
	return sub;
}

static void lost(struct events *ev, struct maru_events *sub, int rc)
{
	log_warn(rc, "event stream lost");
	notify_stream_up(ev->m->nt, 0);
	close_sub(ev, sub);
	notify_inval_all(ev->m->nt);
	dattr_stream(ev->m->da, 0);
	usleep(RETRY_LOST_US);
}

static void *event_main(void *arg)
{
	struct events *ev = arg;
	struct maru_events *sub = NULL;
	struct maru_event *e = malloc(sizeof(*e));
	uint64_t unacked = 0;	/* last event handled and not yet acked */
	unsigned int since_ack = 0;
	int rc, warned = 0;

	if (!e)
		return NULL;
	while (!stopping(ev)) {
		if (!sub && !(sub = subscribe(ev, &warned)))
			continue;
		/* With events to ack, only look whether another is already here. */
		rc = maru_events_next(sub, e, unacked ? 0 : NEXT_WAIT_MS);
		if (watch_stream(ev, sub)) {
			notify_call(ev->m->nt, run_ack, ev, 0);
			unacked = 0;
			since_ack = 0;
		}
		if (rc == 1) {
			note_unwaited(ev, e);
			handle_event(ev->m, e);
			/* No other mount waits for the ack of our own publish:
			 * it rides on the next ack (acks cover every seq
			 * before theirs), which saves marud and us a wake-up
			 * per file written here. */
			if (e->seq && !(e->flags & MARU_EV_F_OWN)) {
				unacked = e->seq;
				since_ack++;
			}
		} else if (rc < 0 && rc != -ETIMEDOUT && rc != -EINTR) {
			lost(ev, sub, rc);
			sub = NULL;
			unacked = 0;
			warned = 1;
			continue;
		}
		/* Caught up (or busy for long): ack once the invalidations
		 * queued so far ran. */
		if (rc == 0)
			maru_lease_cache_expire(ev->m->lc);
		if (unacked && (rc == 0 || since_ack >= ACK_EVERY)) {
			notify_call(ev->m->nt, run_ack, ev, unacked);
			unacked = 0;
			since_ack = 0;
		}
	}
	if (sub)
		close_sub(ev, sub);
	free(e);
	return NULL;
}

int events_start(struct mfs *m, struct events **out)
{
	struct events *ev = calloc(1, sizeof(*ev));
	int rc;

	if (!ev)
		return -ENOMEM;
	ev->m = m;
	pthread_mutex_init(&ev->lock, NULL);
	rc = -pthread_create(&ev->thread, NULL, event_main, ev);
	if (rc) {
		pthread_mutex_destroy(&ev->lock);
		free(ev);
		return rc;
	}
	*out = ev;
	return 0;
}

/* Join the thread; acks it queued may still run until the notifier stops. */
void events_stop(struct events *ev)
{
	if (!ev || stopping(ev))
		return;
	__atomic_store_n(&ev->stop, 1, __ATOMIC_RELEASE);
	pthread_join(ev->thread, NULL);
}

/* After notify_stop(): no queued ack points at ev any more. */
void events_free(struct events *ev)
{
	if (!ev)
		return;
	events_stop(ev);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}
