/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/alloc_priv.h: the allocator's insides, shared by alloc.c (the free
 * set, alloc_get() and the rest of alloc.h) and alloc_grow.c (the policy
 * that keeps a growing list mappable at the pool's alignment). Nothing
 * outside those two files includes it.
 */
#ifndef MARUD_ALLOC_PRIV_H
#define MARUD_ALLOC_PRIV_H

#include <stdint.h>

#include "alloc.h"
#include "rbtree.h"

/* Spare nodes kept between calls, so an alloc_put() rarely needs malloc. */
#define SPARE_KEEP	16
/* Candidates examined for a tight aligned fit before the guaranteed one. */
#define ALIGNED_SCAN	8

struct frange {
	struct rb_node by_off;
	struct rb_node by_len;
	uint64_t off, len;
};

struct alloc {
	struct rb_root by_off, by_len;
	uint64_t base, size, block, align;
	uint64_t free_bytes, nranges;
	uint64_t unshaped;	/* alloc_grow() calls that could not keep the shape */
	struct frange *spare;	/* linked through by_off.left */
	unsigned int nspare;
};

/* A list's state before an allocation, to roll back to. */
struct list_mark {
	uint32_t n;
	uint64_t last_len;
};

static inline uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static inline uint64_t round_down(uint64_t x, uint64_t a)
{
	return x & ~(a - 1);
}

static inline void list_mark_set(struct list_mark *m, const struct extent_list *l)
{
	m->n = l->n;
	m->last_len = l->n ? l->v[l->n - 1].len : 0;
}

/* Carve [off, off+len) out of f onto the end of list; all or nothing. */
int alloc_take_append(struct alloc *a, struct frange *f, uint64_t off,
		      uint64_t len, struct extent_list *l);
/* Give back what was appended to l since the mark, newest first. */
void alloc_list_rollback(struct alloc *a, struct extent_list *l, const struct list_mark *m);
/* Free spare nodes beyond SPARE_KEEP; every public call ends with it. */
void alloc_spare_trim(struct alloc *a);
/* The largest free range; the smallest of at least len (lowest offset first). */
struct frange *alloc_largest(const struct alloc *a);
struct frange *alloc_best_fit(const struct alloc *a, uint64_t len);
/* The next range in size order after f, or NULL. */
struct frange *alloc_next_fit(const struct frange *f);
/* A range that holds len bytes starting on an align boundary, or NULL. */
struct frange *alloc_aligned_fit(const struct alloc *a, uint64_t len);
/* The free range that starts exactly at off, or NULL. */
struct frange *alloc_range_at(const struct alloc *a, uint64_t off);

#endif
