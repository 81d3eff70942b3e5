/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/htab.h: a generic open-addressing hash table of tagged pointers
 * (linear probing, backward-shift delete, doubling at 3/4 load). Items are
 * non-zero uintptr_t values whose hash the owner computes (hkey_fn) and
 * keeps in the item, so growing never rehashes keys. A parallel array of
 * 16-bit fingerprints lets a probe run be scanned without touching the items
 * (one cache miss per lookup, not one per probe). Callers probe themselves:
 * start at htab_home(), walk while fp[i] != 0, compare fp[i] with htab_fp().
 * Not thread-safe: the directory lock guards every table.
 */
#ifndef MARUD_HTAB_H
#define MARUD_HTAB_H

#include <stdint.h>

typedef uint32_t (*hkey_fn)(uintptr_t item);

struct htab {
	uintptr_t *slot;
	uint16_t *fp;		/* fingerprint per slot; 0: empty */
	uint64_t mask, count;
	hkey_fn hash;
};

/* A 64-bit finalizer: ids and parent ids mixed into hashes. */
uint64_t htab_mix64(uint64_t x);
/* Fingerprint of a hash: never 0 (empty). */
uint16_t htab_fp(uint32_t h);

/* size: a power of two. 0 or -ENOMEM. */
int htab_init(struct htab *t, uint64_t size, hkey_fn fn);
void htab_fini(struct htab *t);
/* Make room for one more item (may double); 0 or -ENOMEM. */
int htab_reserve(struct htab *t);
/* Insert; room must have been reserved. */
void htab_place(struct htab *t, uintptr_t item, uint32_t h);
/* Slot index of an item that is in the table (fatal if not). */
uint64_t htab_slot_of(const struct htab *t, uintptr_t item);
void htab_del(struct htab *t, uintptr_t item);

static inline uint64_t htab_home(const struct htab *t, uint32_t h)
{
	return h & t->mask;
}

static inline uint64_t htab_next(const struct htab *t, uint64_t i)
{
	return (i + 1) & t->mask;
}

#endif
