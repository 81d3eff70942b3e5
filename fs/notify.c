/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/notify.c: the invalidation queue of marufs. Jobs (entry and inode
 * invalidations, "drop everything", poll wake-ups, calls such as the event
 * thread's acks) are queued by request handlers and the event thread and run
 * in order by one notifier thread: fuse_lowlevel_notify_* must never be
 * issued from a request handler, since the kernel may hold the very locks
 * the handler's request waits under. One exception, notify_store(): storing
 * pages takes no inode lock, only the pages', which FLUSH and RELEASE do
 * not hold. Also here: the expectations of
 * handlers waiting for the pool's event of their own change.
 *
 * The close-to-open wait. marud itself holds the reply to a publish, rename
 * or unlink until every other mount acknowledged the event (or its
 * ack-timeout-publish-ms passed, 1000 ms by default): by then the other
 * mounts have sent their invalidations. What is left for this mount is to
 * see its own event come back and its own invalidation sent, which normally
 * takes well under a millisecond; NOTIFY_WAIT_MS bounds that wait so that a
 * stalled event stream costs no more than marud's own ack wait does. It
 * mirrors marud's default on purpose, and every marufs wait uses it.
 *
 * Lock: nt->qlock (queue, counters, expectations, stream state), a leaf
 * except that evring.c's ring lock is held when it queues poll wake-ups
 * (ring lock -> qlock). It is never held across a job: each runs unlocked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dcache.h"
#include "inode.h"
#include "notify.h"

#define NOTIFY_WAIT_MS	1000	/* mirrors marud's ack-timeout-publish-ms */

enum job_type { JOB_ENTRY, JOB_INODE, JOB_ATTR, JOB_ALL, JOB_POLL, JOB_CALL };

struct job {
	int type;
	uint64_t ino;		/* JOB_CALL: the value passed */
	char *name;
	struct fuse_pollhandle *ph;
	notify_call_fn fn;
	void *arg;
	uint64_t seq;
	struct job *next;
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
	struct mfs *m;
	pthread_mutex_t qlock;
	pthread_cond_t qcond, done_cond;
	struct job *head, *tail;
	uint64_t queued, done;
	int stop;
	int started;
	int ev_ok;		/* subscribed to the event stream */
	struct ev_expect *expects;
	pthread_t thread;
};

int notify_new(struct mfs *m, struct notifier **out)
{
	struct notifier *nt = calloc(1, sizeof(*nt));
	int rc;

	if (!nt)
		return -ENOMEM;
	nt->m = m;
	pthread_mutex_init(&nt->qlock, NULL);
	rc = cond_init_mono(&nt->qcond);
	if (rc == 0)
		rc = cond_init_mono(&nt->done_cond);
	if (rc < 0) {
		free(nt);
		return rc;
	}
	*out = nt;
	return 0;
}

static void job_free(struct job *j)
{
	if (j->ph)
		fuse_pollhandle_destroy(j->ph);
	free(j->name);
	free(j);
}

static uint64_t job_push(struct notifier *nt, struct job *j)
{
	uint64_t seq;

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

static struct job *job_new(int type, uint64_t ino, const char *name)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->type = type;
	j->ino = ino;
	if (name && !(j->name = strdup(name))) {
		free(j);
		return NULL;
	}
	return j;
}

static uint64_t push_simple(struct notifier *nt, int type, uint64_t ino, const char *name)
{
	struct job *j;

	if (!nt)
		return 0;
	j = job_new(type, ino, name);
	return j ? job_push(nt, j) : 0;
}

static void job_wait(struct notifier *nt, uint64_t seq)
{
	struct timespec ts;

	deadline_ms(&ts, NOTIFY_WAIT_MS);
	pthread_mutex_lock(&nt->qlock);
	while (nt->done < seq && !nt->stop)
		if (pthread_cond_timedwait(&nt->done_cond, &nt->qlock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&nt->qlock);
}

void notify_inval_entry(struct notifier *nt, uint64_t parent, const char *name, int wait)
{
	uint64_t seq = push_simple(nt, JOB_ENTRY, parent, name);

	if (seq && wait && nt->started)
		job_wait(nt, seq);
}

void notify_inval_inode(struct notifier *nt, uint64_t ino)
{
	push_simple(nt, JOB_INODE, ino, NULL);
}

void notify_inval_data(struct notifier *nt, uint64_t ino)
{
	uint64_t seq = push_simple(nt, JOB_INODE, ino, NULL);

	if (seq && nt->started)
		job_wait(nt, seq);
}

int notify_store(struct notifier *nt, uint64_t ino, uint64_t off, const void *buf, size_t len)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);
	int rc;

	if (!nt)
		return 0;
	bv.buf[0].mem = (void *)buf;
	rc = fuse_lowlevel_notify_store(nt->m->se, ino, (off_t)off, &bv, 0);
	if (rc == 0)
		CNT_INC(nt->m, cache_stores);
	return rc;
}

void notify_inval_attr(struct notifier *nt, uint64_t ino, int wait)
{
	uint64_t seq = push_simple(nt, JOB_ATTR, ino, NULL);

	if (seq && wait && nt->started)
		job_wait(nt, seq);
}

void notify_inval_all(struct notifier *nt)
{
	push_simple(nt, JOB_ALL, 0, NULL);
}

void notify_poll(struct notifier *nt, struct fuse_pollhandle *ph)
{
	struct job *j = nt ? job_new(JOB_POLL, 0, NULL) : NULL;

	if (!j) {
		fuse_pollhandle_destroy(ph);
		return;
	}
	j->ph = ph;
	job_push(nt, j);
}

void notify_call(struct notifier *nt, notify_call_fn fn, void *arg, uint64_t val)
{
	struct job *j = nt ? job_new(JOB_CALL, val, NULL) : NULL;

	if (!j)
		return;
	j->fn = fn;
	j->arg = arg;
	job_push(nt, j);
}

/* ---- expectations ---- */

struct ev_expect *notify_expect(struct notifier *nt, uint64_t parent, const char *name)
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

static void expect_unlink_locked(struct notifier *nt, struct ev_expect *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		nt->expects = w->next;
	if (w->next)
		w->next->prev = w->prev;
}

void notify_expect_cancel(struct notifier *nt, struct ev_expect *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&nt->qlock);
	expect_unlink_locked(nt, w);
	pthread_mutex_unlock(&nt->qlock);
	free(w);
}

static int expect_met_locked(struct notifier *nt, struct ev_expect *w, int applied)
{
	return w->hit && (!applied || nt->done >= w->job_seq);
}

int notify_expect_wait(struct notifier *nt, struct ev_expect *w, int applied)
{
	struct timespec ts;
	int seen;

	if (!w)
		return 0;
	deadline_ms(&ts, NOTIFY_WAIT_MS);
	pthread_mutex_lock(&nt->qlock);
	while (!expect_met_locked(nt, w, applied) && !nt->stop && nt->ev_ok)
		if (pthread_cond_timedwait(&nt->done_cond, &nt->qlock, &ts) == ETIMEDOUT)
			break;
	seen = expect_met_locked(nt, w, applied);
	expect_unlink_locked(nt, w);
	pthread_mutex_unlock(&nt->qlock);
	free(w);
	return seen;
}

/* Meet the expectations of (parent, name) once job seq ran (qlock held). */
static void expect_hit_locked(struct notifier *nt, uint64_t parent, const char *name,
			      uint64_t seq)
{
	struct ev_expect *w;

	for (w = nt->expects; w; w = w->next) {
		if (!w->hit && w->parent == parent && strcmp(w->name, name) == 0) {
			w->hit = 1;
			w->job_seq = seq;
		}
	}
	pthread_cond_broadcast(&nt->done_cond);
}

void notify_name_changed(struct notifier *nt, uint64_t parent, const char *name,
			 int expected)
{
	uint64_t seq;

	if (!name[0])
		return;
	seq = push_simple(nt, JOB_ENTRY, parent, name);
	if (!expected || !nt)
		return;
	pthread_mutex_lock(&nt->qlock);
	expect_hit_locked(nt, parent, name, seq);
	pthread_mutex_unlock(&nt->qlock);
}

void notify_name_current(struct notifier *nt, uint64_t parent, const char *name)
{
	if (!nt || !name[0])
		return;
	pthread_mutex_lock(&nt->qlock);
	expect_hit_locked(nt, parent, name, nt->queued);
	pthread_mutex_unlock(&nt->qlock);
}

void notify_stream_up(struct notifier *nt, int up)
{
	pthread_mutex_lock(&nt->qlock);
	nt->ev_ok = up;
	pthread_cond_broadcast(&nt->done_cond);
	pthread_mutex_unlock(&nt->qlock);
}

/* ---- the notifier thread ---- */

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

static void run_inval_all(struct mfs *m)
{
	struct dent *d = dcache_take_all(m->dc), *next;
	struct job *inodes = NULL, *j, *jn;
	uint64_t now = mono_ns();

	for (; d; d = next) {
		next = d->next;
		if (d->expiry > now) {
			fuse_lowlevel_notify_inval_entry(m->se, d->parent, d->name,
							 strlen(d->name));
			CNT_INC(m, inval_entry);
		}
		free(d);
	}
	itab_foreach(m->tab, inval_inode_cb, &inodes);
	for (j = inodes; j; j = jn) {
		jn = j->next;
		/* the pages too: without FUSE_CAP_AUTO_INVAL_DATA a read of a
		 * cached page would not ask marufs (an old generation's EIO) */
		fuse_lowlevel_notify_inval_inode(m->se, j->ino, 0, 0);
		CNT_INC(m, inval_inode);
		free(j);
	}
	fuse_lowlevel_notify_inval_inode(m->se, FUSE_ROOT_ID, -1, 0);
}

static void run_job(struct mfs *m, struct job *j)
{
	switch (j->type) {
	case JOB_ENTRY:
		fuse_lowlevel_notify_inval_entry(m->se, j->ino, j->name, strlen(j->name));
		CNT_INC(m, inval_entry);
		break;
	case JOB_INODE:
		fuse_lowlevel_notify_inval_inode(m->se, j->ino, 0, 0);
		CNT_INC(m, inval_inode);
		break;
	case JOB_ATTR:	/* attributes only: the cached pages stay */
		fuse_lowlevel_notify_inval_inode(m->se, j->ino, -1, 0);
		CNT_INC(m, inval_inode);
		break;
	case JOB_ALL:
		run_inval_all(m);
		break;
	case JOB_POLL:
		fuse_lowlevel_notify_poll(j->ph);
		break;
	case JOB_CALL:
		j->fn(j->arg, j->ino);
		break;
	}
}

static void *notifier_main(void *arg)
{
	struct notifier *nt = arg;
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
		run_job(nt->m, j);
		pthread_mutex_lock(&nt->qlock);
		nt->done = j->seq;
		pthread_cond_broadcast(&nt->done_cond);
		job_free(j);
	}
	pthread_mutex_unlock(&nt->qlock);
	return NULL;
}

int notify_start(struct notifier *nt)
{
	int rc = -pthread_create(&nt->thread, NULL, notifier_main, nt);

	if (rc == 0)
		nt->started = 1;
	return rc;
}

void notify_stop(struct notifier *nt)
{
	struct job *j, *jn;

	if (!nt)
		return;
	pthread_mutex_lock(&nt->qlock);
	nt->stop = 1;
	pthread_cond_broadcast(&nt->qcond);
	pthread_cond_broadcast(&nt->done_cond);
	pthread_mutex_unlock(&nt->qlock);
	if (nt->started)
		pthread_join(nt->thread, NULL);
	nt->started = 0;
	for (j = nt->head; j; j = jn) {
		jn = j->next;
		job_free(j);
	}
	nt->head = nt->tail = NULL;
}

void notify_free(struct notifier *nt)
{
	if (!nt)
		return;
	notify_stop(nt);
	pthread_cond_destroy(&nt->qcond);
	pthread_cond_destroy(&nt->done_cond);
	pthread_mutex_destroy(&nt->qlock);
	free(nt);
}
