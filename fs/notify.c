/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/notify.c: keeps the kernel's caches honest. An event thread reads the
 * pool's event stream (maru_events_next), formats each event into the ring
 * that .maru/events readers consume, and turns it into invalidation jobs. A
 * notifier thread runs those jobs: fuse_lowlevel_notify_inval_entry/_inode
 * and poll wake-ups, which must never be issued from a request handler (the
 * kernel may hold the very locks the handler's request is waiting under).
 * Request handlers queue jobs and may wait, bounded, for one to be sent.
 * When the event thread has caught up with the stream it queues an ack job
 * behind the invalidations: the notifier then tells marud (maru_events_ack)
 * that this mount applied every event so far, which is what lets a change on
 * another mount return only once this mount can no longer serve the old
 * answer from the kernel's caches (close-to-open across mounts).
 *
 * The dentry table remembers every (parent, name) handed to the kernel,
 * positive or negative, until its entry timeout passes, so that a lost event
 * (overflow) or a new pool generation can invalidate all of them.
 *
 * Locks: qlock (job queue, expectations), rlock (event ring and its
 * readers), dlock (dentry table), evlock (the subscription handle the
 * notifier acks on). The only nesting is rlock -> qlock (a new line queues
 * poll wake-ups); none is held across a libmaru or fuse_lowlevel_notify_*
 * call, except evlock across maru_events_ack() (a short socket write), so
 * the event thread cannot close the handle under it.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "marufs.h"

#define RING_LINES	4096
#define DIR_SEQ_SLOTS	256
#define READ_TICK_MS	100
#define ACK_EVERY	32	/* events between acks on a stream that never pauses */

enum job_type { JOB_ENTRY, JOB_INODE, JOB_ALL, JOB_POLL, JOB_ACK };

struct job {
	int type;
	uint64_t ino;		/* JOB_ACK: the event seq to acknowledge */
	char *name;
	struct fuse_pollhandle *ph;
	uint64_t seq;
	struct job *next;
};

struct dent {
	uint64_t parent;
	uint64_t expiry;	/* CLOCK_MONOTONIC ns */
	struct dent *next;
	char name[];
};

struct ev_reader {
	uint64_t cursor;	/* next ring line to hand out */
	size_t partial;		/* bytes of that line already handed out */
	struct fuse_pollhandle *ph;
	struct ev_reader *next, *prev;
};

/* A request handler waiting for the event of its own change (qlock). */
struct ev_expect {
	uint64_t parent;
	char name[MARU_NAME_MAX + 1];
	int hit;		/* the event arrived */
	uint64_t job_seq;	/* its invalidation job */
	struct ev_expect *next, *prev;
};

struct notifier {
	pthread_mutex_t qlock;
	pthread_cond_t qcond, done_cond;
	struct job *head, *tail;
	uint64_t queued, done;
	int stop;
	int started;
	int ev_ok;		/* subscribed to the event stream */
	struct ev_expect *expects;
	pthread_t ev_thread, nt_thread;

	pthread_mutex_t evlock;
	struct maru_events *ev;	/* evlock: the event thread's subscription */

	pthread_mutex_t rlock;
	pthread_cond_t rcond;
	char *lines[RING_LINES];
	uint64_t ring_head;	/* lines produced so far */
	struct ev_reader *readers;

	pthread_mutex_t dlock;
	struct dent **db;
	size_t dnb, dcount, prune_at;

	uint64_t dir_seq[DIR_SEQ_SLOTS];
};

static struct notifier *nt;

static uint64_t mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_nsec += (long)ms * 1000000L;
	while (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static size_t mix_slot(uint64_t parent)
{
	return (size_t)((parent * 0x9e3779b97f4a7c15ULL) >> 56) % DIR_SEQ_SLOTS;
}

static uint64_t dhash(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (parent * 0x9e3779b97f4a7c15ULL);

	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

int notify_init(void)
{
	nt = calloc(1, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	nt->dnb = 4096;
	nt->db = calloc(nt->dnb, sizeof(*nt->db));
	if (!nt->db) {
		free(nt);
		nt = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&nt->qlock, NULL);
	pthread_cond_init(&nt->qcond, NULL);
	pthread_cond_init(&nt->done_cond, NULL);
	pthread_mutex_init(&nt->rlock, NULL);
	pthread_cond_init(&nt->rcond, NULL);
	pthread_mutex_init(&nt->dlock, NULL);
	pthread_mutex_init(&nt->evlock, NULL);
	mfs->nt = nt;
	return 0;
}

/* ---- job queue ---- */

static uint64_t job_push(int type, uint64_t ino, const char *name,
			 struct fuse_pollhandle *ph)
{
	struct job *j = calloc(1, sizeof(*j));
	uint64_t seq;

	if (!j)
		return 0;
	j->type = type;
	j->ino = ino;
	j->ph = ph;
	if (name && !(j->name = strdup(name))) {
		free(j);
		return 0;
	}
	pthread_mutex_lock(&nt->qlock);
	j->seq = seq = ++nt->queued;
	if (nt->tail)
		nt->tail->next = j;
	else
		nt->head = j;
	nt->tail = j;
	pthread_cond_signal(&nt->qcond);
	pthread_mutex_unlock(&nt->qlock);
	return seq;
}

static void job_wait(uint64_t seq, int wait_ms)
{
	struct timespec ts;

	deadline_in(&ts, wait_ms);
	pthread_mutex_lock(&nt->qlock);
	while (nt->done < seq && !nt->stop)
		if (pthread_cond_timedwait(&nt->done_cond, &nt->qlock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&nt->qlock);
}

void notify_inval_entry(uint64_t parent, const char *name, int wait_ms)
{
	uint64_t seq;

	if (!nt)
		return;
	seq = job_push(JOB_ENTRY, parent, name, NULL);
	if (seq && wait_ms > 0 && nt->started)
		job_wait(seq, wait_ms);
}

void notify_inval_inode(uint64_t ino)
{
	if (nt)
		job_push(JOB_INODE, ino, NULL, NULL);
}

void notify_inval_all(void)
{
	if (nt)
		job_push(JOB_ALL, 0, NULL, NULL);
}

/*
 * Close-to-open across mounts: a handler that publishes, renames or makes a
 * directory registers here first, then waits until the pool's event for
 * that name came back on this mount's stream and its invalidation was sent.
 * Every mount receives the event at the same moment, so the others have
 * dropped their cached (negative) entries by then too, as far as one host's
 * scheduling allows.
 */
struct ev_expect *notify_expect(uint64_t parent, const char *name)
{
	struct ev_expect *w;

	if (!nt || !nt->started || strlen(name) > MARU_NAME_MAX)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->parent = parent;
	memcpy(w->name, name, strlen(name) + 1);
	pthread_mutex_lock(&nt->qlock);
	if (!nt->ev_ok) {
		pthread_mutex_unlock(&nt->qlock);
		free(w);
		return NULL;	/* no stream: nothing to wait for */
	}
	w->next = nt->expects;
	if (w->next)
		w->next->prev = w;
	nt->expects = w;
	pthread_mutex_unlock(&nt->qlock);
	return w;
}

static void expect_unlink_locked(struct ev_expect *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		nt->expects = w->next;
	if (w->next)
		w->next->prev = w->prev;
}

void notify_expect_cancel(struct ev_expect *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&nt->qlock);
	expect_unlink_locked(w);
	pthread_mutex_unlock(&nt->qlock);
	free(w);
}

int notify_expect_wait(struct ev_expect *w, int wait_ms, int applied)
{
	struct timespec ts;
	int seen;

	if (!w)
		return 0;
	deadline_in(&ts, wait_ms);
	pthread_mutex_lock(&nt->qlock);
	while (!(w->hit && (!applied || nt->done >= w->job_seq)) && !nt->stop &&
	       nt->ev_ok)
		if (pthread_cond_timedwait(&nt->done_cond, &nt->qlock, &ts) == ETIMEDOUT)
			break;
	seen = w->hit && (!applied || nt->done >= w->job_seq);
	expect_unlink_locked(w);
	pthread_mutex_unlock(&nt->qlock);
	free(w);
	return seen;
}

/* The event thread saw (parent, name) change; its invalidation is job seq. */
static void expect_hit(uint64_t parent, const char *name, uint64_t seq)
{
	struct ev_expect *w;

	pthread_mutex_lock(&nt->qlock);
	for (w = nt->expects; w; w = w->next) {
		if (!w->hit && w->parent == parent && strcmp(w->name, name) == 0) {
			w->hit = 1;
			w->job_seq = seq;
		}
	}
	pthread_cond_broadcast(&nt->done_cond);
	pthread_mutex_unlock(&nt->qlock);
}

/* ---- dentry table ---- */

static void dcache_prune_locked(uint64_t now, size_t buckets)
{
	size_t i;

	for (i = 0; i < buckets; i++) {
		struct dent **pp = &nt->db[nt->prune_at];

		while (*pp) {
			struct dent *d = *pp;

			if (d->expiry <= now) {
				*pp = d->next;
				free(d);
				nt->dcount--;
			} else {
				pp = &d->next;
			}
		}
		nt->prune_at = (nt->prune_at + 1) & (nt->dnb - 1);
	}
}

static void dcache_grow_locked(void)
{
	size_t nb = nt->dnb * 2, i;
	struct dent **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (i = 0; i < nt->dnb; i++) {
		struct dent *d = nt->db[i], *next;

		for (; d; d = next) {
			size_t h = dhash(d->parent, d->name) & (nb - 1);

			next = d->next;
			d->next = b[h];
			b[h] = d;
		}
	}
	free(nt->db);
	nt->db = b;
	nt->dnb = nb;
	nt->prune_at = 0;
}

void dcache_note(uint64_t parent, const char *name, double timeout)
{
	uint64_t now, exp;
	struct dent *d, **b;
	size_t len;

	if (!nt || timeout <= 0)
		return;
	now = mono_now_ns();
	exp = now + (uint64_t)(timeout * 1e9) + 1000000000ULL;
	pthread_mutex_lock(&nt->dlock);
	b = &nt->db[dhash(parent, name) & (nt->dnb - 1)];
	for (d = *b; d; d = d->next)
		if (d->parent == parent && strcmp(d->name, name) == 0)
			break;
	if (d) {
		if (d->expiry < exp)
			d->expiry = exp;
		goto out;
	}
	len = strlen(name) + 1;
	d = malloc(sizeof(*d) + len);
	if (!d)
		goto out;
	d->parent = parent;
	d->expiry = exp;
	memcpy(d->name, name, len);
	d->next = *b;
	*b = d;
	nt->dcount++;
	/* Amortized pruning: a few buckets per insert keeps the table bounded. */
	dcache_prune_locked(now, 4);
	if (nt->dcount > nt->dnb * 2)
		dcache_grow_locked();
out:
	pthread_mutex_unlock(&nt->dlock);
}

size_t dcache_count(void)
{
	size_t n;

	if (!nt)
		return 0;
	pthread_mutex_lock(&nt->dlock);
	n = nt->dcount;
	pthread_mutex_unlock(&nt->dlock);
	return n;
}

/* Detach the whole table; the caller invalidates and frees the entries. */
static struct dent *dcache_take_all(void)
{
	struct dent *list = NULL;
	size_t i;

	pthread_mutex_lock(&nt->dlock);
	for (i = 0; i < nt->dnb; i++) {
		struct dent *d = nt->db[i], *next;

		for (; d; d = next) {
			next = d->next;
			d->next = list;
			list = d;
		}
		nt->db[i] = NULL;
	}
	nt->dcount = 0;
	pthread_mutex_unlock(&nt->dlock);
	return list;
}

uint64_t dir_change_seq(uint64_t parent)
{
	if (!nt)
		return 0;
	return __atomic_load_n(&nt->dir_seq[mix_slot(parent)], __ATOMIC_ACQUIRE) +
	       mfs_epoch();
}

/* ---- notifier thread ---- */

static void inval_inode_cb(void *arg, uint64_t ino)
{
	struct job **list = arg;
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return;
	j->ino = ino;
	j->next = *list;
	*list = j;
}

static void run_inval_all(void)
{
	struct dent *d = dcache_take_all(), *next;
	struct job *inodes = NULL, *j, *jn;
	uint64_t now = mono_now_ns();

	for (; d; d = next) {
		next = d->next;
		if (d->expiry > now) {
			fuse_lowlevel_notify_inval_entry(mfs->se, d->parent, d->name,
							 strlen(d->name));
			CNT_INC(inval_entry);
		}
		free(d);
	}
	itab_foreach(inval_inode_cb, &inodes);
	for (j = inodes; j; j = jn) {
		jn = j->next;
		fuse_lowlevel_notify_inval_inode(mfs->se, j->ino, -1, 0);
		CNT_INC(inval_inode);
		free(j);
	}
	fuse_lowlevel_notify_inval_inode(mfs->se, FUSE_ROOT_ID, -1, 0);
}

/* Every job queued before this one ran: events up to seq are applied. */
static void run_ack(uint64_t seq)
{
	int rc = -ENOTCONN;

	pthread_mutex_lock(&nt->evlock);
	if (nt->ev)
		rc = maru_events_ack(nt->ev, seq);
	pthread_mutex_unlock(&nt->evlock);
	/* A lost stream shows on the event thread; nothing to do here. */
	if (rc)
		log_debug("event ack %" PRIu64 ": %s", seq, strerror(-rc));
}

static void run_job(struct job *j)
{
	switch (j->type) {
	case JOB_ENTRY:
		fuse_lowlevel_notify_inval_entry(mfs->se, j->ino, j->name,
						 strlen(j->name));
		CNT_INC(inval_entry);
		break;
	case JOB_INODE:
		fuse_lowlevel_notify_inval_inode(mfs->se, j->ino, 0, 0);
		CNT_INC(inval_inode);
		break;
	case JOB_ALL:
		run_inval_all();
		break;
	case JOB_POLL:
		fuse_lowlevel_notify_poll(j->ph);
		fuse_pollhandle_destroy(j->ph);
		break;
	case JOB_ACK:
		run_ack(j->ino);
		break;
	}
}

static void *notifier_main(void *arg)
{
	struct job *j;

	pthread_mutex_lock(&nt->qlock);
	for (;;) {
		while (!nt->head && !nt->stop)
			pthread_cond_wait(&nt->qcond, &nt->qlock);
		if (!nt->head)
			break;
		j = nt->head;
		nt->head = j->next;
		if (!nt->head)
			nt->tail = NULL;
		pthread_mutex_unlock(&nt->qlock);
		run_job(j);
		pthread_mutex_lock(&nt->qlock);
		nt->done = j->seq;
		pthread_cond_broadcast(&nt->done_cond);
		free(j->name);
		free(j);
	}
	pthread_mutex_unlock(&nt->qlock);
	return NULL;
}

/* ---- event ring ---- */

static const char *event_name(uint32_t type)
{
	switch (type) {
	case MARU_EV_PUBLISH: return "publish";
	case MARU_EV_REPLACE: return "replace";
	case MARU_EV_UNLINK: return "unlink";
	case MARU_EV_EVICT: return "evict";
	case MARU_EV_MKDIR: return "mkdir";
	case MARU_EV_RMDIR: return "rmdir";
	case MARU_EV_RENAME: return "rename";
	case MARU_EV_SETATTR: return "setattr";
	case MARU_EV_OVERFLOW: return "overflow";
	case MARU_EV_GENERATION: return "generation";
	default: return "unknown";
	}
}

static void ring_append(const struct maru_event *e)
{
	struct ev_reader *r;
	char line[2 * MARU_PATH_MAX + 128];
	int n;

	if (e->type == MARU_EV_RENAME)
		n = snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 ".%09" PRIu64
			     " %s %s -> %s\n", e->seq, e->time_ns / UINT64_C(1000000000),
			     e->time_ns % UINT64_C(1000000000), event_name(e->type),
			     e->path[0] ? e->path : e->name,
			     e->path2[0] ? e->path2 : e->name2);
	else
		n = snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 ".%09" PRIu64
			     " %s %s\n", e->seq, e->time_ns / UINT64_C(1000000000),
			     e->time_ns % UINT64_C(1000000000), event_name(e->type),
			     e->path[0] ? e->path : (e->name[0] ? e->name : "/"));
	if (n < 0)
		return;
	pthread_mutex_lock(&nt->rlock);
	free(nt->lines[nt->ring_head % RING_LINES]);
	nt->lines[nt->ring_head % RING_LINES] = strdup(line);
	nt->ring_head++;
	for (r = nt->readers; r; r = r->next) {
		if (r->ph) {
			job_push(JOB_POLL, 0, NULL, r->ph);
			r->ph = NULL;
		}
	}
	pthread_cond_broadcast(&nt->rcond);
	pthread_mutex_unlock(&nt->rlock);
}

int ring_reader_open(struct ev_reader **out)
{
	struct ev_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&nt->rlock);
	r->cursor = nt->ring_head;
	r->next = nt->readers;
	if (nt->readers)
		nt->readers->prev = r;
	nt->readers = r;
	pthread_mutex_unlock(&nt->rlock);
	*out = r;
	return 0;
}

void ring_reader_close(struct ev_reader *r)
{
	pthread_mutex_lock(&nt->rlock);
	if (r->prev)
		r->prev->next = r->next;
	else
		nt->readers = r->next;
	if (r->next)
		r->next->prev = r->prev;
	pthread_mutex_unlock(&nt->rlock);
	if (r->ph)
		fuse_pollhandle_destroy(r->ph);
	free(r);
}

/* Copy whole lines (the first possibly resumed) into buf; rlock held. */
static size_t ring_copy_locked(struct ev_reader *r, char *buf, size_t size)
{
	size_t got = 0;

	if (nt->ring_head - r->cursor > RING_LINES) {
		r->cursor = nt->ring_head - RING_LINES;
		r->partial = 0;
	}
	while (r->cursor < nt->ring_head && got < size) {
		const char *line = nt->lines[r->cursor % RING_LINES];
		size_t len = line ? strlen(line) : 0, n;

		if (r->partial >= len) {
			r->cursor++;
			r->partial = 0;
			continue;
		}
		n = len - r->partial;
		if (n > size - got) {
			if (got)
				break;	/* hand out whole lines when we can */
			n = size - got;
		}
		memcpy(buf + got, line + r->partial, n);
		got += n;
		r->partial += n;
		if (r->partial == len) {
			r->cursor++;
			r->partial = 0;
		}
	}
	return got;
}

void ring_reader_read(fuse_req_t req, struct ev_reader *r, size_t size)
{
	struct timespec ts;
	char *buf = malloc(size ? size : 1);
	size_t got = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&nt->rlock);
	while (!nt->stop && !fuse_session_exited(mfs->se)) {
		got = ring_copy_locked(r, buf, size);
		if (got)
			break;
		deadline_in(&ts, READ_TICK_MS);
		pthread_cond_timedwait(&nt->rcond, &nt->rlock, &ts);
		if (fuse_req_interrupted(req)) {
			pthread_mutex_unlock(&nt->rlock);
			free(buf);
			fuse_reply_err(req, EINTR);
			return;
		}
	}
	pthread_mutex_unlock(&nt->rlock);
	fuse_reply_buf(req, buf, got);
	free(buf);
}

void ring_reader_poll(fuse_req_t req, struct ev_reader *r, struct fuse_pollhandle *ph)
{
	struct fuse_pollhandle *old = NULL;
	unsigned int revents = 0;

	pthread_mutex_lock(&nt->rlock);
	if (r->cursor < nt->ring_head || nt->stop) {
		revents = POLLIN | POLLRDNORM;
		old = ph;
	} else if (ph) {
		old = r->ph;
		r->ph = ph;
	}
	pthread_mutex_unlock(&nt->rlock);
	if (old)
		fuse_pollhandle_destroy(old);
	fuse_reply_poll(req, revents);
}

/* ---- event thread ---- */

static void bump_dir(uint64_t parent)
{
	__atomic_add_fetch(&nt->dir_seq[mix_slot(parent)], 1, __ATOMIC_RELEASE);
}

static void inval_name(uint64_t parent, const char *name, uint32_t type)
{
	uint64_t seq;

	if (!name[0])
		return;
	seq = job_push(JOB_ENTRY, parent, name, NULL);
	if (type != MARU_EV_UNLINK && type != MARU_EV_EVICT && type != MARU_EV_RMDIR)
		expect_hit(parent, name, seq);
}

static void handle_event(const struct maru_event *e)
{
	CNT_INC(events);
	bump_dir(e->parent);
	if (e->type == MARU_EV_RENAME)
		bump_dir(e->parent2);
	ring_append(e);
	switch (e->type) {
	case MARU_EV_PUBLISH:
	case MARU_EV_REPLACE:
	case MARU_EV_UNLINK:
	case MARU_EV_EVICT:
	case MARU_EV_MKDIR:
	case MARU_EV_RMDIR:
		inval_name(e->parent, e->name, e->type);
		if (e->type == MARU_EV_RMDIR && e->ino)
			notify_inval_inode(e->ino);
		break;
	case MARU_EV_RENAME:
		inval_name(e->parent, e->name, MARU_EV_UNLINK);
		inval_name(e->parent2, e->name2, MARU_EV_RENAME);
		break;
	case MARU_EV_SETATTR:
		notify_inval_inode(e->ino);
		break;
	case MARU_EV_OVERFLOW:
	case MARU_EV_GENERATION:
		notify_inval_all();
		break;
	}
}

static void set_ev_ok(int ok)
{
	pthread_mutex_lock(&nt->qlock);
	nt->ev_ok = ok;
	pthread_cond_broadcast(&nt->done_cond);
	pthread_mutex_unlock(&nt->qlock);
}

static int stopping(void)
{
	int stop;

	pthread_mutex_lock(&nt->qlock);
	stop = nt->stop;
	pthread_mutex_unlock(&nt->qlock);
	return stop;
}

static void set_ev(struct maru_events *ev)
{
	pthread_mutex_lock(&nt->evlock);
	nt->ev = ev;
	pthread_mutex_unlock(&nt->evlock);
}

static void close_ev(struct maru_events *ev)
{
	set_ev(NULL);
	maru_events_close(ev);
}

static void *event_main(void *arg)
{
	struct maru_events *ev = NULL;
	struct maru_event *e = malloc(sizeof(*e));
	uint64_t unacked = 0;	/* last event handled and not yet acked */
	unsigned int since_ack = 0;
	int rc, warned = 0;

	if (!e)
		return NULL;
	while (!stopping()) {
		if (!ev) {
			rc = maru_events_open(mfs->c, 0, &ev);
			if (rc < 0) {
				if (!warned++)
					log_warn(rc, "event stream");
				ev = NULL;
				usleep(200000);
				continue;
			}
			/* Events between a loss and this subscription are gone. */
			if (warned)
				notify_inval_all();
			warned = 0;
			set_ev(ev);
			set_ev_ok(1);
		}
		/* With events to ack, only look whether another is already here. */
		rc = maru_events_next(ev, e, unacked ? 0 : 200);
		if (rc == 1) {
			handle_event(e);
			if (e->seq)
				unacked = e->seq;
			since_ack++;
		} else if (rc < 0 && rc != -ETIMEDOUT && rc != -EINTR) {
			log_warn(rc, "event stream lost");
			set_ev_ok(0);
			close_ev(ev);
			ev = NULL;
			unacked = 0;
			warned = 1;
			notify_inval_all();
			usleep(100000);
			continue;
		}
		/* Caught up (or busy for long): ack once the invalidations
		 * queued so far ran. */
		if (unacked && (rc == 0 || since_ack >= ACK_EVERY)) {
			job_push(JOB_ACK, unacked, NULL, NULL);
			unacked = 0;
			since_ack = 0;
		}
	}
	if (ev)
		close_ev(ev);
	free(e);
	return NULL;
}

int notify_start(void)
{
	int rc;

	rc = -pthread_create(&nt->nt_thread, NULL, notifier_main, NULL);
	if (rc)
		return rc;
	rc = -pthread_create(&nt->ev_thread, NULL, event_main, NULL);
	if (rc) {
		pthread_mutex_lock(&nt->qlock);
		nt->stop = 1;
		pthread_cond_broadcast(&nt->qcond);
		pthread_mutex_unlock(&nt->qlock);
		pthread_join(nt->nt_thread, NULL);
		return rc;
	}
	nt->started = 1;
	return 0;
}

void notify_stop(void)
{
	struct job *j, *jn;
	struct dent *d, *dn;
	size_t i;

	if (!nt)
		return;
	pthread_mutex_lock(&nt->qlock);
	nt->stop = 1;
	pthread_cond_broadcast(&nt->qcond);
	pthread_cond_broadcast(&nt->done_cond);
	pthread_mutex_unlock(&nt->qlock);
	pthread_mutex_lock(&nt->rlock);
	pthread_cond_broadcast(&nt->rcond);
	pthread_mutex_unlock(&nt->rlock);
	if (nt->started) {
		pthread_join(nt->ev_thread, NULL);
		pthread_join(nt->nt_thread, NULL);
	}
	for (j = nt->head; j; j = jn) {
		jn = j->next;
		if (j->ph)
			fuse_pollhandle_destroy(j->ph);
		free(j->name);
		free(j);
	}
	for (d = dcache_take_all(); d; d = dn) {
		dn = d->next;
		free(d);
	}
	for (i = 0; i < RING_LINES; i++)
		free(nt->lines[i]);
	free(nt->db);
	free(nt);
	nt = NULL;
	mfs->nt = NULL;
}
