/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/dcache.c: the dentry table of marufs, the names (positive or negative)
 * it handed to the kernel, kept until their entry timeout passes plus a
 * second, in a shared hash table (htab.h) swept a few slots per insert so
 * it stays bounded; and the per-directory change counters bumped by the
 * event thread.
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
#include "hash.h"
#include "htab.h"

#define DIR_SEQ_SLOTS	256
#define DC_SLOTS	4096	/* initial; the table doubles at 3/4 load */
#define PRUNE_SLOTS	16	/* slots looked at per insert (at most 12 entries) */
#define EXPIRY_SLACK_NS	1000000000ULL

struct dcache {
	pthread_mutex_t lock;
	struct htab tab;	/* of struct dent */
	uint64_t prune_at;	/* where the pruning sweep goes on */
	uint64_t dir_seq[DIR_SEQ_SLOTS];
};

/* The lookup key of a note. */
struct dkey {
	uint64_t parent;
	const char *name;
};

static size_t seq_slot(uint64_t parent)
{
	return (size_t)(hash_mix64(parent) % DIR_SEQ_SLOTS);
}

static uint32_t dhash(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ hash_mix64(parent);

	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ULL;
	}
	return (uint32_t)(h ^ (h >> 32));
}

static uint32_t dent_hash(uintptr_t it)
{
	return ((const struct dent *)it)->hash;
}

static int dent_is(uintptr_t it, const void *key)
{
	const struct dent *d = (const struct dent *)it;
	const struct dkey *k = key;

	return d->parent == k->parent && strcmp(d->name, k->name) == 0;
}

int dcache_new(struct dcache **out)
{
	struct dcache *dc = calloc(1, sizeof(*dc));

	if (!dc)
		return -ENOMEM;
	if (htab_init(&dc->tab, DC_SLOTS, dent_hash, HTAB_BULK)) {
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
	htab_fini(&dc->tab);
	pthread_mutex_destroy(&dc->lock);
	free(dc);
}

/* Expired entries out, looking at up to `slots` slots from where it stopped. */
static void prune_locked(struct dcache *dc, uint64_t now, uint64_t slots)
{
	uintptr_t it;

	while ((it = htab_sweep(&dc->tab, &dc->prune_at, &slots))) {
		struct dent *d = (struct dent *)it;

		if (d->expiry <= now) {
			htab_del(&dc->tab, it);
			free(d);
		}
	}
}

void dcache_note(struct dcache *dc, uint64_t parent, const char *name, double timeout)
{
	struct dkey k = { parent, name };
	uint64_t now, exp;
	struct dent *d;
	uint32_t h;
	size_t len;

	if (!dc || timeout <= 0)
		return;
	now = mono_ns();
	exp = now + (uint64_t)(timeout * 1e9) + EXPIRY_SLACK_NS;
	h = dhash(parent, name);
	pthread_mutex_lock(&dc->lock);
	d = (struct dent *)htab_find(&dc->tab, h, dent_is, &k);
	if (d) {
		if (d->expiry < exp)
			d->expiry = exp;
		goto out;
	}
	prune_locked(dc, now, PRUNE_SLOTS);
	len = strlen(name) + 1;
	if (htab_reserve(&dc->tab))
		goto out;
	d = malloc(sizeof(*d) + len);
	if (!d)
		goto out;
	d->parent = parent;
	d->expiry = exp;
	d->hash = h;
	d->next = NULL;
	memcpy(d->name, name, len);
	htab_place(&dc->tab, (uintptr_t)d, h);
out:
	pthread_mutex_unlock(&dc->lock);
}

size_t dcache_count(struct dcache *dc)
{
	size_t n;

	if (!dc)
		return 0;
	pthread_mutex_lock(&dc->lock);
	n = (size_t)dc->tab.count;
	pthread_mutex_unlock(&dc->lock);
	return n;
}

struct dent *dcache_take_all(struct dcache *dc)
{
	struct dent *list = NULL, *d;
	uint64_t pos = 0;
	uintptr_t it;

	pthread_mutex_lock(&dc->lock);
	while ((it = htab_walk(&dc->tab, &pos))) {
		d = (struct dent *)it;
		d->next = list;
		list = d;
	}
	htab_clear(&dc->tab);
	dc->prune_at = 0;
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
