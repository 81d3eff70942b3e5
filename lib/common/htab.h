/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/htab.h: the one hash table of marud and marufs. Open
 * addressing of tagged pointers (linear probing, backward-shift delete,
 * growing at 3/4 load), intrusive in that it stores the owner's own items
 * and allocates nothing per item.
 *
 * An item is a non-zero uintptr_t below 2^48 (a pointer, possibly with
 * low tag bits, or a small number); the owner gives the hash of an item
 * (htab_hash_fn, called when an item moves) and of a key (the h it passes
 * to lookups), and compares keys itself: htab_find() with an htab_eq_fn,
 * or htab_probe()/htab_more() to see every item of a hash. A slot keeps the
 * item in its low 48 bits and a 16-bit fingerprint of its hash in the top
 * 16, so a probe run is scanned in one array (8 bytes a slot, one cache
 * miss per lookup) and the owner's compare runs on fingerprint hits only.
 *
 * Growing is incremental or in bulk, the owner's choice (enum htab_grow).
 * Not thread-safe: the owner's lock guards the table.
 */
#ifndef MARU_HTAB_H
#define MARU_HTAB_H

#include <stdint.h>

/* The hash of an item (only the low 32 bits index the table). */
typedef uint32_t (*htab_hash_fn)(uintptr_t item);
/* Does item carry key? (the caller's compare, for htab_find) */
typedef int (*htab_eq_fn)(uintptr_t item, const void *key);

/* Slots the migration scans per htab_reserve(): the bound on items moved. */
#define HTAB_STEP 8u

/* How a table doubles. */
enum htab_grow {
	/*
	 * HTAB_STEP old slots per htab_reserve(): no call moves more than
	 * HTAB_STEP items, so a table of millions of names never stalls its
	 * lock for a whole rehash; while both arrays are live a lookup may
	 * probe both (marud's directory, whose inserts never stop for long).
	 */
	HTAB_INCREMENTAL,
	/*
	 * Every item moves in the htab_reserve() that doubles: one long call,
	 * then lookups probe one array again even if inserts stop (marufs's
	 * tables, whose lookups far outnumber their inserts).
	 */
	HTAB_BULK,
};

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
	uint64_t step;		/* old slots emptied per htab_reserve() */
	htab_hash_fn hash;
};

/* A probe for one hash: which array, where, the fingerprint looked for. */
struct htab_probe {
	const struct htab *t;
	const struct htab_arr *a;
	uint64_t i;
	uint64_t fp;		/* already shifted into the top 16 bits */
	uint32_t h;
};

/* A slot: the item in the low 48 bits, the fingerprint in the top 16. */
#define HTAB_ITEM_BITS	48
#define HTAB_ITEM_MASK	((UINT64_C(1) << HTAB_ITEM_BITS) - 1)
#define HTAB_FP_MASK	(~HTAB_ITEM_MASK)

/* Fingerprint of a hash: never 0 (empty); mixed so neighbours in a run differ. */
static inline uint16_t htab_fp(uint32_t h)
{
	uint16_t f = (uint16_t)((h * 0x9e3779b1u) >> 16);

	return f ? f : 1;
}

/* size: a power of two. 0 or -ENOMEM. */
int htab_init(struct htab *t, uint64_t size, htab_hash_fn fn, enum htab_grow grow);
void htab_fini(struct htab *t);
/* Forget every item (the owner frees them); keeps the current array. */
void htab_clear(struct htab *t);
/*
 * Make room for one more item. At 3/4 load the table starts doubling into
 * a second array; an HTAB_INCREMENTAL table then moves at most HTAB_STEP
 * slots' worth of items from the old array per call (lookups probe both
 * arrays meanwhile), an HTAB_BULK one moves them all at once. 0 or -ENOMEM
 * (nothing changed: the item cannot be placed).
 */
int htab_reserve(struct htab *t);
/* Insert item of hash h; room must have been reserved. */
void htab_place(struct htab *t, uintptr_t item, uint32_t h);
/* Remove item (compared as a value); fatal if absent. */
void htab_del(struct htab *t, uintptr_t item);
/* Put item `to` where `from` is (same hash); fatal if from is absent. */
void htab_replace(struct htab *t, uintptr_t from, uintptr_t to);
/* 1 while a doubling is under way (tests). */
int htab_migrating(const struct htab *t);

/* htab_find() in the old array of a doubling under way. */
uintptr_t htab_find_old(const struct htab *t, uint32_t h, htab_eq_fn eq, const void *key);

/*
 * The first item of hash h for which eq(item, key) holds, or 0. Inline so
 * that an owner's eq (a static function) is inlined into its lookups.
 */
static inline uintptr_t htab_find(const struct htab *t, uint32_t h, htab_eq_fn eq,
				  const void *key)
{
	uint64_t fp = (uint64_t)htab_fp(h) << HTAB_ITEM_BITS, i = h & t->cur.mask, s;

	while ((s = t->cur.slot[i])) {
		if ((s & HTAB_FP_MASK) == fp && eq((uintptr_t)(s & HTAB_ITEM_MASK), key))
			return (uintptr_t)(s & HTAB_ITEM_MASK);
		i = (i + 1) & t->cur.mask;
	}
	return t->old.slot ? htab_find_old(t, h, eq, key) : 0;
}
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
/*
 * A bounded sweep for pruning: the next item from *pos, looking at no more
 * than *budget slots (each one looked at is counted off); 0 when the budget
 * is spent. *pos wraps to the start at the end, and stays meaningful across
 * htab_del() and growth (an item shifted back may be missed until the next
 * round, none is lost), so the owner may delete what it returns.
 */
uintptr_t htab_sweep(const struct htab *t, uint64_t *pos, uint64_t *budget);

#endif
