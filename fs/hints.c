// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fs/hints.c: the mount's hint queue and what feeds it from the namespace.
 * Hints wait in issue order (at most HINTQ_MAX that may be dropped; past
 * that the oldest droppable one goes and is counted; read_end is never
 * dropped, or a request would stay open at marud) and one sender thread
 * hands them to maru_hint() in that order. .maru/hints text is parsed and
 * its paths resolved (one LOOKUP per component from the root) before
 * anything is queued, so a bad line queues nothing and fails the write();
 * user.maru.hint on a directory names every file in it. q->lock guards
 * the queue and the counters; no libmaru call is made under it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hints.h"
#include "log.h"

struct hitem {
	struct hitem *next;
	int action;
	char req[HINT_REQ_MAX + 1];
	size_t n;
	struct maru_hint_range r[];
};

struct hintq {
	struct mfs *m;
	pthread_mutex_t lock;
	pthread_cond_t cv;	/* work queued, drained, or stop */
	struct hitem *head, **tail;
	unsigned int droppable;
	unsigned int busy;	/* the sender holds an item */
	int stop, started;
	pthread_t th;
	struct hint_counters c;
};

int hintq_new(struct mfs *m, struct hintq **out)
{
	struct hintq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->m = m;
	q->tail = &q->head;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cv, NULL);
	*out = q;
	return 0;
}

/* Drop the oldest droppable item (q->lock held). */
static void drop_oldest(struct hintq *q)
{
	struct hitem **pp, *it;

	for (pp = &q->head; (it = *pp); pp = &it->next) {
		if (it->action == MARU_HINT_READ_END)
			continue;
		*pp = it->next;
		if (q->tail == &it->next)
			q->tail = pp;
		q->droppable--;
		q->c.dropped++;
		free(it);
		return;
	}
}

int hintq_push(struct hintq *q, int action, const char *req,
	       const struct maru_hint_range *r, size_t n)
{
	struct hitem *it;

	if (!q)
		return -ENOTCONN;	/* not mounted yet, or unmounting */
	it = calloc(1, sizeof(*it) + n * sizeof(*r));
	if (!it)
		return -ENOMEM;
	it->action = action;
	snprintf(it->req, sizeof(it->req), "%s", req ? req : "");
	it->n = n;
	if (n)
		memcpy(it->r, r, n * sizeof(*r));
	pthread_mutex_lock(&q->lock);
	if (action != MARU_HINT_READ_END) {
		if (q->droppable >= HINTQ_MAX)
			drop_oldest(q);
		q->droppable++;
	}
	*q->tail = it;
	q->tail = &it->next;
	q->c.queued++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

static void send_one(struct hintq *q, struct hitem *it)
{
	int rc = maru_hint(q->m->c, it->action, it->req, it->n ? it->r : NULL, it->n);

	pthread_mutex_lock(&q->lock);
	if (!rc)
		q->c.sent++;
	else if (rc == -EOPNOTSUPP)
		q->c.unsupported++;
	else if (rc == -EPERM || rc == -ENOENT || rc == -ERANGE || rc == -EMFILE)
		q->c.refused++;
	else
		q->c.failed++;
	pthread_mutex_unlock(&q->lock);
	if (rc && rc != -EOPNOTSUPP)
		log_debug("hint %d '%s': %s (ignored: hints are advice)", it->action, it->req,
			  maru_strerror(rc));
}

static void *sender(void *arg)
{
	struct hintq *q = arg;
	struct hitem *it;

	pthread_mutex_lock(&q->lock);
	while (!q->stop || q->head) {
		it = q->head;
		if (!it) {
			pthread_cond_wait(&q->cv, &q->lock);
			continue;
		}
		q->head = it->next;
		if (!q->head)
			q->tail = &q->head;
		if (it->action != MARU_HINT_READ_END)
			q->droppable--;
		q->busy = 1;
		pthread_mutex_unlock(&q->lock);
		send_one(q, it);
		free(it);
		pthread_mutex_lock(&q->lock);
		q->busy = 0;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int hintq_start(struct hintq *q)
{
	int rc = -pthread_create(&q->th, NULL, sender, q);

	q->started = rc == 0;
	return rc;
}

void hintq_free(struct hintq *q)
{
	struct hitem *it;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->lock);
	if (q->started)
		pthread_join(q->th, NULL);
	while ((it = q->head)) {
		q->head = it->next;
		free(it);
	}
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

void hintq_drain(struct hintq *q, int timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&q->lock);
	while ((q->head || q->busy) && q->started &&
	       pthread_cond_timedwait(&q->cv, &q->lock, &ts) == 0)
		;
	pthread_mutex_unlock(&q->lock);
}

void hintq_counters(struct hintq *q, struct hint_counters *out)
{
	pthread_mutex_lock(&q->lock);
	*out = q->c;
	pthread_mutex_unlock(&q->lock);
}

void hintq_note_lookup(struct hintq *q, size_t names)
{
	pthread_mutex_lock(&q->lock);
	q->c.lookup_hints += names;
	q->c.lookup_batches++;
	pthread_mutex_unlock(&q->lock);
}
