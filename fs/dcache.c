/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/dcache.c: the dentry table of marufs, the names (positive or negative)
 * it handed to the kernel, kept until their entry timeout passes plus a
 * second, pruned a few buckets per insert so it stays bounded; and the
 * per-directory change counters bumped by the event thread.
 *
 * Lock: dc->lock, a leaf: nothing else is taken or called under it. The
 * change counters are atomics.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dcache.h"

#define DIR_SEQ_SLOTS	256
#define DC_BUCKETS	4096	/* initial; doubles past two entries a bucket */
#define PRUNE_PER_NOTE	4
#define EXPIRY_SLACK_NS	1000000000ULL

struct dcache {
	pthread_mutex_t lock;
	struct dent **db;
	size_t nb, count, prune_at;
	uint64_t dir_seq[DIR_SEQ_SLOTS];
};

static size_t seq_slot(uint64_t parent)
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

int dcache_new(struct dcache **out)
{
	struct dcache *dc = calloc(1, sizeof(*dc));

	if (!dc)
		return -ENOMEM;
	dc->nb = DC_BUCKETS;
	dc->db = calloc(dc->nb, sizeof(*dc->db));
	if (!dc->db) {
		free(dc);
		return -ENOMEM;
	}
	pthread_mutex_init(&dc->lock, NULL);
	*out = dc;
	return 0;
}

void dcache_free(struct dcache *dc)
{
	struct dent *d, *dn;

	if (!dc)
		return;
	for (d = dcache_take_all(dc); d; d = dn) {
		dn = d->next;
		free(d);
	}
	free(dc->db);
	pthread_mutex_destroy(&dc->lock);
	free(dc);
}

static void prune_locked(struct dcache *dc, uint64_t now, size_t buckets)
{
	size_t i;

	for (i = 0; i < buckets; i++) {
		struct dent **pp = &dc->db[dc->prune_at];

		while (*pp) {
			struct dent *d = *pp;

			if (d->expiry <= now) {
				*pp = d->next;
				free(d);
				dc->count--;
			} else {
				pp = &d->next;
			}
		}
		dc->prune_at = (dc->prune_at + 1) & (dc->nb - 1);
	}
}

static void grow_locked(struct dcache *dc)
{
	size_t nb = dc->nb * 2, i;
	struct dent **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (i = 0; i < dc->nb; i++) {
		struct dent *d = dc->db[i], *next;

		for (; d; d = next) {
			size_t h = dhash(d->parent, d->name) & (nb - 1);

			next = d->next;
			d->next = b[h];
			b[h] = d;
		}
	}
	free(dc->db);
	dc->db = b;
	dc->nb = nb;
	dc->prune_at = 0;
}

void dcache_note(struct dcache *dc, uint64_t parent, const char *name, double timeout)
{
	uint64_t now, exp;
	struct dent *d, **b;
	size_t len;

	if (!dc || timeout <= 0)
		return;
	now = mono_ns();
	exp = now + (uint64_t)(timeout * 1e9) + EXPIRY_SLACK_NS;
	pthread_mutex_lock(&dc->lock);
	b = &dc->db[dhash(parent, name) & (dc->nb - 1)];
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
	dc->count++;
	prune_locked(dc, now, PRUNE_PER_NOTE);
	if (dc->count > dc->nb * 2)
		grow_locked(dc);
out:
	pthread_mutex_unlock(&dc->lock);
}

size_t dcache_count(struct dcache *dc)
{
	size_t n;

	if (!dc)
		return 0;
	pthread_mutex_lock(&dc->lock);
	n = dc->count;
	pthread_mutex_unlock(&dc->lock);
	return n;
}

struct dent *dcache_take_all(struct dcache *dc)
{
	struct dent *list = NULL;
	size_t i;

	pthread_mutex_lock(&dc->lock);
	for (i = 0; i < dc->nb; i++) {
		struct dent *d = dc->db[i], *next;

		for (; d; d = next) {
			next = d->next;
			d->next = list;
			list = d;
		}
		dc->db[i] = NULL;
	}
	dc->count = 0;
	pthread_mutex_unlock(&dc->lock);
	return list;
}

uint64_t dcache_dir_seq(struct dcache *dc, uint64_t parent)
{
	if (!dc)
		return 0;
	return __atomic_load_n(&dc->dir_seq[seq_slot(parent)], __ATOMIC_ACQUIRE);
}

void dcache_dir_changed(struct dcache *dc, uint64_t parent)
{
	__atomic_add_fetch(&dc->dir_seq[seq_slot(parent)], 1, __ATOMIC_RELEASE);
}
