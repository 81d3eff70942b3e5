// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/ext/tier/work.c: the tier's threads. Workers (bounded, the
 * "workers" setting) take the next piece of the frontmost request that has
 * one, so requests are served in hint order and promote moves one to the
 * front; each makes room within the budget first (evicting unheld units),
 * or waits when only held units are left, then brings the piece in with
 * no lock held. A read request holds what it brought in until read_end or
 * its connection's end. The sweeper measures real residency every
 * sweep_ms and evicts back to the budget, so pages that unhinted reads
 * faulted in count too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tier.h"

static void timed_wait(pthread_cond_t *c, pthread_mutex_t *m, unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(c, m, &ts);
}

struct treq *tier_req_find(struct tier *t, uint64_t conn, const char *id)
{
	struct treq *q;

	for (q = t->reqs; q; q = q->next)
		if (!q->ended && (!conn || q->conn == conn) && !strcmp(q->id, id))
			return q;
	return NULL;
}

static void req_unlink(struct tier *t, struct treq *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else if (t->reqs == q)
		t->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	q->prev = q->next = NULL;
}

static void req_free(struct treq *q)
{
	free(q->p);
	free(q->held);
	free(q);
}

/* Let its units go; freed now, or by the last load still running. */
void tier_req_end(struct tier *t, struct treq *q)
{
	uint32_t i;

	for (i = 0; i < q->nheld; i++)
		if (t->u[q->held[i]].holds)
			t->u[q->held[i]].holds--;
	q->nheld = 0;
	q->n = q->next_piece;	/* nothing more to load */
	if (!q->ended) {
		q->ended = 1;
		req_unlink(t, q);
	}
	if (!q->inflight)
		req_free(q);
	pthread_cond_broadcast(&t->done);
}

static int hold(struct treq *q, uint32_t unit)
{
	uint32_t *h;

	if (q->nheld == q->capheld) {
		h = realloc(q->held, (q->capheld ? q->capheld * 2 : 16) * sizeof(*h));
		if (!h)
			return -ENOMEM;
		q->held = h;
		q->capheld = q->capheld ? q->capheld * 2 : 16;
	}
	q->held[q->nheld++] = unit;
	return 0;
}

static struct treq *next_work(struct tier *t)
{
	struct treq *q;

	for (q = t->reqs; q; q = q->next)
		if (q->next_piece < q->n)
			return q;
	return NULL;
}

/* q stays allocated while counted in flight (evictions drop the lock). */
static int put_back(struct tier *t, struct treq *q)
{
	q->inflight--;
	if (q->ended && !q->inflight)
		req_free(q);
	return 0;
}

/*
 * Room for piece p of q, or 0 when the budget is full of held units or its
 * unit is being evicted (the caller waits for t->done and asks again).
 */
static int take_piece(struct tier *t, struct treq *q, struct piece *p)
{
	uint32_t i;
	uint64_t need;

	*p = q->p[q->next_piece];
	i = (uint32_t)(p->off / TIER_UNIT);
	if (t->u[i].state == U_EVICTING)
		return 0;
	need = TIER_UNIT - t->u[i].bytes < p->len ? TIER_UNIT - t->u[i].bytes : p->len;
	q->inflight++;
	if (tier_make_room(t, need)) {
		t->stalls++;
		return put_back(t, q);
	}
	if (q->ended || q->next_piece >= q->n || q->p[q->next_piece].off != p->off ||
	    t->u[i].state == U_EVICTING)
		return put_back(t, q);	/* changed while evicting */
	q->next_piece++;
	t->u[i].used = ++t->tick;
	if (!q->write && !hold(q, i))
		t->u[i].holds++;
	t->u[i].state = U_LOADING;
	t->u[i].loaders++;
	return 1;
}

static void piece_done(struct tier *t, struct treq *q, const struct piece *p)
{
	uint32_t i = (uint32_t)(p->off / TIER_UNIT);
	uint64_t base = (uint64_t)i * TIER_UNIT;
	uint64_t res;

	pthread_mutex_unlock(&t->lock);
	res = tier_resident(t, base, TIER_UNIT);
	pthread_mutex_lock(&t->lock);
	if (!--t->u[i].loaders)
		t->u[i].state = U_WARM;
	t->resident += res > t->u[i].bytes ? res - t->u[i].bytes : 0;
	t->u[i].bytes = (uint32_t)res;
	t->loaded_bytes += p->len;
	q->inflight--;
	if (q->ended && !q->inflight)
		req_free(q);
	else if (!q->ended && q->write && q->next_piece == q->n && !q->inflight)
		tier_req_end(t, q);	/* write hints end when prepared */
	pthread_cond_broadcast(&t->done);
}

static void *worker(void *arg)
{
	struct tier *t = arg;
	struct treq *q;
	struct piece p;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		q = next_work(t);
		if (!q) {
			timed_wait(&t->work, &t->lock, 100);
			continue;
		}
		if (!take_piece(t, q, &p)) {
			timed_wait(&t->done, &t->lock, 10);
			continue;
		}
		pthread_mutex_unlock(&t->lock);
		tier_load(t, p.off, p.len, q->write);
		pthread_mutex_lock(&t->lock);
		piece_done(t, q, &p);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static void *sweeper(void *arg)
{
	struct tier *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		tier_hold_budget(t);
		pthread_cond_broadcast(&t->done);
		timed_wait(&t->work, &t->lock, t->sweep_ms);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int tier_threads_start(struct tier *t)
{
	unsigned int i;
	int rc;

	rc = -pthread_create(&t->th[0], NULL, sweeper, t);
	if (rc)
		return rc;
	t->nth = 1;
	for (i = 0; i < t->workers; i++) {
		rc = -pthread_create(&t->th[t->nth], NULL, worker, t);
		if (rc) {
			tier_threads_stop(t);
			return rc;
		}
		t->nth++;
	}
	return 0;
}

void tier_threads_stop(struct tier *t)
{
	unsigned int i;

	pthread_mutex_lock(&t->lock);
	t->stop = 1;
	pthread_cond_broadcast(&t->work);
	pthread_cond_broadcast(&t->done);
	pthread_mutex_unlock(&t->lock);
	for (i = 0; i < t->nth; i++)
		pthread_join(t->th[i], NULL);
	t->nth = 0;
	t->stop = 0;
}
