/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/dattr.c: the directory attribute cache (see dattr.h). A fixed table
 * of slots, each holding at most one directory (the last stored wins) and
 * a generation that directories sharing the slot share too: a change of
 * one refuses older answers for the others, never the reverse. Direct
 * mapped on purpose, not a growing hash table (htab.h): a directory with
 * no entry still needs a generation that its changes move, and a slot's
 * gives one to every directory in bounded memory with no eviction rule.
 *
 * Lock: da->lock, a leaf. Every call takes a NULL table (a mount
 * without one: unit tests) as empty.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dattr.h"
#include "hash.h"

#define DATTR_SLOTS	1024

struct dslot {
	uint64_t gen;
	uint64_t stored;	/* CLOCK_MONOTONIC ns; 0: empty */
	struct maru_attr a;
};

struct dattr {
	pthread_mutex_t lock;
	uint64_t ttl_ns;
	int up;			/* the event stream is up */
	struct dslot s[DATTR_SLOTS];
};

static struct dslot *slot(struct dattr *da, uint64_t dir)
{
	return &da->s[hash_mix64(dir) & (DATTR_SLOTS - 1)];
}

/* Drop what s keeps and refuse answers to requests sent before now. */
static void slot_stale(struct dslot *s)
{
	s->gen++;
	s->stored = 0;
}

int dattr_new(double ttl_s, struct dattr **out)
{
	struct dattr *da = calloc(1, sizeof(*da));

	if (!da)
		return -ENOMEM;
	da->ttl_ns = ttl_s > 0 ? (uint64_t)(ttl_s * 1e9) : 0;
	pthread_mutex_init(&da->lock, NULL);
	*out = da;
	return 0;
}

void dattr_free(struct dattr *da)
{
	if (!da)
		return;
	pthread_mutex_destroy(&da->lock);
	free(da);
}

uint64_t dattr_gen(struct dattr *da, uint64_t dir)
{
	uint64_t g;

	if (!da)
		return 0;
	pthread_mutex_lock(&da->lock);
	g = slot(da, dir)->gen;
	pthread_mutex_unlock(&da->lock);
	return g;
}

static int older(const struct maru_attr *a, const struct maru_attr *b)
{
	return a->ctime.tv_sec < b->ctime.tv_sec ||
	       (a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec < b->ctime.tv_nsec);
}

void dattr_put(struct dattr *da, const struct maru_attr *a, uint64_t gen)
{
	struct dslot *s;

	if (!da || !da->ttl_ns || !a->ino || a->state != MARU_STATE_DIR)
		return;
	pthread_mutex_lock(&da->lock);
	s = slot(da, a->ino);
	if (da->up && s->gen == gen && !(s->stored && s->a.ino == a->ino && older(a, &s->a))) {
		s->a = *a;
		s->stored = mono_ns();
	}
	pthread_mutex_unlock(&da->lock);
}

int dattr_get(struct dattr *da, uint64_t dir, struct maru_attr *a)
{
	struct dslot *s;
	int rc = -ENOENT;

	if (!da)
		return rc;
	pthread_mutex_lock(&da->lock);
	s = slot(da, dir);
	if (s->stored && s->a.ino == dir) {
		if (mono_ns() - s->stored < da->ttl_ns) {
			*a = s->a;
			rc = 0;
		} else {
			s->stored = 0;
		}
	}
	pthread_mutex_unlock(&da->lock);
	return rc;
}

void dattr_changed(struct dattr *da, uint64_t dir)
{
	if (!da)
		return;
	pthread_mutex_lock(&da->lock);
	slot_stale(slot(da, dir));
	pthread_mutex_unlock(&da->lock);
}

void dattr_stream(struct dattr *da, int up)
{
	size_t i;

	if (!da)
		return;
	pthread_mutex_lock(&da->lock);
	da->up = up;
	for (i = 0; i < DATTR_SLOTS; i++)
		slot_stale(&da->s[i]);
	pthread_mutex_unlock(&da->lock);
}
