/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/htab.h: a generic open-addressing hash table of tagged pointers
 * (linear probing, backward-shift delete, growing at 3/4 load). Items are
 * non-zero uintptr_t values below 2^48 whose hash the owner computes
 * (hkey_fn); a slot keeps the item in its low 48 bits and a 16-bit
 * fingerprint of the hash in the top 16, so a probe run is scanned in one
 * array (8 bytes a slot, one cache miss per lookup). Growing is incremental
 * (see htab_reserve). Callers never see array indexes: they probe with
 * htab_probe()/htab_more(), walk every item with htab_walk(), and repoint
 * an item with htab_replace(). Not thread-safe: the directory lock guards
 * every table.
 */
#ifndef MARUD_HTAB_H
#define MARUD_HTAB_H

#include <stdint.h>

typedef uint32_t (*hkey_fn)(uintptr_t item);

/* Slots the migration scans per htab_reserve(): the bound on items moved. */
#define HTAB_STEP 8u

struct htab_arr {
	uint64_t *slot;		/* fp << 48 | item; 0: empty */
	uint64_t mask;
};

struct htab {
	struct htab_arr cur;	/* inserts go here */
	struct htab_arr old;	/* being emptied into cur; slot NULL if none */
	uint64_t start, done;	/* old: migration began at start, done slots since */
	uint64_t count;		/* items in both arrays */
	uint64_t moved;		/* items moved between arrays so far (tests) */
	hkey_fn hash;
};

/* A probe for one hash: which array, where, the fingerprint looked for. */
struct htab_probe {
	const struct htab *t;
	const struct htab_arr *a;
	uint64_t i;
	uint64_t fp;		/* already shifted into the top 16 bits */
	uint32_t h;
};

/* A 64-bit finalizer: ids and parent ids mixed into hashes. */
uint64_t htab_mix64(uint64_t x);
/* Fingerprint of a hash: never 0 (empty). */
uint16_t htab_fp(uint32_t h);

/* size: a power of two. 0 or -ENOMEM. */
int htab_init(struct htab *t, uint64_t size, hkey_fn fn);
void htab_fini(struct htab *t);
/*
 * Make room for one more item. At 3/4 load the table starts doubling into
 * a second array, and every call then moves at most HTAB_STEP slots' worth
 * of items from the old array, so no call moves more than HTAB_STEP items
 * (a 10M-name table never stalls its lock for a whole rehash); while both
 * arrays are live, lookups probe both. 0 or -ENOMEM.
 */
int htab_reserve(struct htab *t);
/* Insert; room must have been reserved. */
void htab_place(struct htab *t, uintptr_t item, uint32_t h);
void htab_del(struct htab *t, uintptr_t item);
/* Put item `to` where `from` is (same hash); fatal if from is absent. */
void htab_replace(struct htab *t, uintptr_t from, uintptr_t to);
/* 1 while a doubling is under way (tests). */
int htab_migrating(const struct htab *t);

/*
 * Every item whose fingerprint matches hash h, in both arrays:
 *   for (it = htab_probe(t, h, &p); it; it = htab_more(&p))
 * The table must not change during the walk.
 */
uintptr_t htab_probe(const struct htab *t, uint32_t h, struct htab_probe *p);
uintptr_t htab_more(struct htab_probe *p);

/*
 * Every item, once: start with *pos = 0; returns 0 at the end. The table
 * must not change during the walk.
 */
uintptr_t htab_walk(const struct htab *t, uint64_t *pos);

#endif
