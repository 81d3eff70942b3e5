// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fs/lookup_hints.c: hints with no engine change (-o lookup_hints=on, the
 * default). An engine's scheduler checks that a request's chunks exist
 * before its worker loads them; the first positive LOOKUP of a file name
 * (once per name per LH_WINDOW_MS, or again once the file was loaded: the
 * next lookup of a loaded chunk is a new request's) becomes part of a read
 * hint for its directory, sent once LH_COALESCE_MS passed since the batch
 * began. The batch is a hint request of its own: the first open of one of
 * its files promotes it (the load starts), and once each of its files was
 * opened and released, or after LH_END_MS, marufs ends it (read_end), so
 * the memory side can let the bytes go. One thread flushes and expires
 * batches; lh->lock guards the tables, and no libmaru call is made under
 * it (hintq_push only queues).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hints.h"

#define LH_WINDOW_MS	2000	/* a name hints at most once in this window */
#define LH_COALESCE_MS	3	/* names of one directory gathered this long */
#define LH_END_MS	10000	/* a batch nobody read is ended after this */
#define LH_SEEN		8192	/* remembered names (hash slots) */
#define LH_OPEN_MAX	1024	/* open batches; the oldest is ended past it */

struct batch {
	struct batch *next;
	uint64_t parent, due_ms, born_ms;
	char req[24];
	int sent, promoted;
	size_t n, cap, left;
	struct { uint64_t ino, key; } *f;	/* ino 0 once released; key: name_key() */
};

struct lookup_hints {
	struct mfs *m;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct { uint64_t key, ms; } seen[LH_SEEN];
	struct batch *batches;	/* gathering and sent, newest first */
	unsigned int nopen;
	uint64_t seq;
	int stop;
	pthread_t th;
};

static uint64_t name_key(uint64_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 1099511628211ULL;
	return h ? h : 1;
}

/* 1 if the name hinted within the window; else remember it now. */
static int seen_recently(struct lookup_hints *lh, uint64_t key, uint64_t now)
{
	unsigned int i = (unsigned int)(key % LH_SEEN);

	if (lh->seen[i].key == key && now - lh->seen[i].ms < LH_WINDOW_MS)
		return 1;
	lh->seen[i].key = key;
	lh->seen[i].ms = now;
	return 0;
}

static struct batch *gathering(struct lookup_hints *lh, uint64_t parent, uint64_t now)
{
	struct batch *b;

	for (b = lh->batches; b; b = b->next)
		if (!b->sent && b->parent == parent)
			return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->parent = parent;
	b->born_ms = now;
	b->due_ms = now + LH_COALESCE_MS;
	snprintf(b->req, sizeof(b->req), "L%llu", (unsigned long long)++lh->seq);
	b->next = lh->batches;
	lh->batches = b;
	return b;
}

/* Forget that key hinted: its file was loaded (see the header). */
static void seen_forget(struct lookup_hints *lh, uint64_t key)
{
	unsigned int i = (unsigned int)(key % LH_SEEN);

	if (lh->seen[i].key == key)
		lh->seen[i].key = 0;
}

static int batch_add(struct batch *b, uint64_t ino, uint64_t key)
{
	size_t cap = b->cap ? b->cap * 2 : 8;
	void *v;

	if (b->n == b->cap) {
		v = realloc(b->f, cap * sizeof(*b->f));
		if (!v)
			return -ENOMEM;
		b->f = v;
		b->cap = cap;
	}
	b->f[b->n].ino = ino;
	b->f[b->n++].key = key;
	b->left++;
	return 0;
}

void lookup_hints_seen(struct mfs *m, uint64_t parent, const char *name, uint64_t ino)
{
	struct lookup_hints *lh = m->lh;
	uint64_t now = mono_ms(), key = name_key(parent, name);
	struct batch *b;

	if (!lh)
		return;
	pthread_mutex_lock(&lh->lock);
	if (!seen_recently(lh, key, now) &&
	    (b = gathering(lh, parent, now)) && b->n < HINT_LINE_MAX_PATHS)
		batch_add(b, ino, key);
	pthread_cond_broadcast(&lh->cv);
	pthread_mutex_unlock(&lh->lock);
}

static void batch_free(struct batch *b)
{
	free(b->f);
	free(b);
}

/* Send a gathered batch as one read hint. */
static void batch_send(struct lookup_hints *lh, struct batch *b)
{
	struct maru_hint_range *r = calloc(b->n ? b->n : 1, sizeof(*r));
	size_t i, k;

	b->sent = 1;
	lh->nopen++;
	if (!r)
		return;
	for (i = k = 0; i < b->n; i++)
		if (b->f[i].ino)
			r[k++] = (struct maru_hint_range){ b->f[i].ino, 0, 0 };
	/* counted before it is queued: once the hint is out (a reader of
	 * the counters may have seen it sent), the counters include it */
	hintq_note_lookup(lh->m->hq, k);
	hintq_push(lh->m->hq, MARU_HINT_READ, b->req, r, k);
	free(r);
}

/* End a sent batch and unlink it (*pp points at it). */
static void batch_end(struct lookup_hints *lh, struct batch **pp)
{
	struct batch *b = *pp;

	*pp = b->next;
	if (b->sent) {
		hintq_push(lh->m->hq, MARU_HINT_READ_END, b->req, NULL, 0);
		lh->nopen--;
	}
	batch_free(b);
}

/* Flush due batches, end expired ones and the oldest past LH_OPEN_MAX. */
static uint64_t tick(struct lookup_hints *lh, uint64_t now)
{
	struct batch **pp = &lh->batches, *b;
	uint64_t next = now + 1000;
	unsigned int k = 0;

	while ((b = *pp)) {
		if (!b->sent && b->due_ms <= now)
			batch_send(lh, b);
		if (!b->sent && b->due_ms < next)
			next = b->due_ms;
		if (b->sent && (now - b->born_ms >= LH_END_MS || ++k > LH_OPEN_MAX)) {
			batch_end(lh, pp);
			continue;
		}
		pp = &b->next;
	}
	return next;
}

static void *lh_main(void *arg)
{
	struct lookup_hints *lh = arg;
	struct timespec ts;
	uint64_t next, now;

	pthread_mutex_lock(&lh->lock);
	while (!lh->stop) {
		now = mono_ms();
		next = tick(lh, now);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(next - now) * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&lh->cv, &lh->lock, &ts);
	}
	pthread_mutex_unlock(&lh->lock);
	return NULL;
}

/* The batch holding ino (a sent one unless unsent is set), its slot; or NULL. */
static struct batch **batch_of(struct lookup_hints *lh, uint64_t ino, int unsent, size_t *slot)
{
	struct batch **pp;
	size_t i;

	for (pp = &lh->batches; *pp; pp = &(*pp)->next)
		for (i = 0; ((*pp)->sent || unsent) && i < (*pp)->n; i++)
			if ((*pp)->f[i].ino == ino) {
				*slot = i;
				return pp;
			}
	return NULL;
}

void lookup_hints_opened(struct mfs *m, uint64_t ino)
{
	struct lookup_hints *lh = m->lh;
	struct batch **pp;
	size_t i;

	if (!lh)
		return;
	pthread_mutex_lock(&lh->lock);
	pp = batch_of(lh, ino, 0, &i);
	if (pp && !(*pp)->promoted) {
		(*pp)->promoted = 1;
		hintq_push(m->hq, MARU_HINT_PROMOTE, (*pp)->req, NULL, 0);
	}
	pthread_mutex_unlock(&lh->lock);
}

void lookup_hints_released(struct mfs *m, uint64_t ino)
{
	struct lookup_hints *lh = m->lh;
	struct batch **pp;
	size_t i;

	if (!lh)
		return;
	pthread_mutex_lock(&lh->lock);
	/*
	 * A file opened and released before its batch went out was loaded
	 * already: it leaves the batch unsent (a batch of nothing but such
	 * files is never sent), so no hint holds its bytes after the load.
	 */
	pp = batch_of(lh, ino, 1, &i);
	if (pp) {
		seen_forget(lh, (*pp)->f[i].key);
		(*pp)->f[i].ino = 0;
		if (--(*pp)->left == 0)
			batch_end(lh, pp);
	}
	pthread_mutex_unlock(&lh->lock);
}

int lookup_hints_new(struct mfs *m, struct lookup_hints **out)
{
	struct lookup_hints *lh = calloc(1, sizeof(*lh));
	int rc;

	if (!lh)
		return -ENOMEM;
	lh->m = m;
	pthread_mutex_init(&lh->lock, NULL);
	pthread_cond_init(&lh->cv, NULL);
	rc = -pthread_create(&lh->th, NULL, lh_main, lh);
	if (rc) {
		pthread_cond_destroy(&lh->cv);
		pthread_mutex_destroy(&lh->lock);
		free(lh);
		return rc;
	}
	*out = lh;
	return 0;
}

void lookup_hints_free(struct lookup_hints *lh)
{
	if (!lh)
		return;
	pthread_mutex_lock(&lh->lock);
	lh->stop = 1;
	pthread_cond_broadcast(&lh->cv);
	pthread_mutex_unlock(&lh->lock);
	pthread_join(lh->th, NULL);
	while (lh->batches)
		batch_end(lh, &lh->batches);
	pthread_cond_destroy(&lh->cv);
	pthread_mutex_destroy(&lh->lock);
	free(lh);
}
