/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/alloc.c: extent allocator for the data area of one pool; every
 * other file goes through alloc_*(). Free space is a set of maximal free
 * ranges, each one node linked into two red-black trees: by offset (to find
 * neighbours when coalescing) and by (len, off) (best fit and largest).
 * Because ranges are always maximal, the set of nodes is a function of the
 * free bytes alone; alloc_get() relies on that to undo a partial allocation
 * without allocating: nodes released during a call are parked on a spare
 * list and only freed (beyond a few kept) when the call returns, so
 * replaying the carves backwards never needs more nodes than the forward
 * pass held. The placement for lists that grow piece by piece, keeping
 * their joins on the pool's alignment, is alloc_grow.c's (alloc_priv.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "alloc.h"
#include "alloc_priv.h"
#include "log.h"
#include "rbtree.h"

struct len_key {
	uint64_t len, off;
};

static inline int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static inline int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

static inline struct frange *off_entry(const struct rb_node *n)
{
	return rb_entry_safe(n, struct frange, by_off);
}

static inline struct frange *len_entry(const struct rb_node *n)
{
	return rb_entry_safe(n, struct frange, by_len);
}

static int off_cmp(const struct rb_node *a, const struct rb_node *b)
{
	return cmp_u64(off_entry(a)->off, off_entry(b)->off);
}

static int off_keycmp(const void *key, const struct rb_node *n)
{
	return cmp_u64(*(const uint64_t *)key, off_entry(n)->off);
}

static int len_cmp(const struct rb_node *a, const struct rb_node *b)
{
	const struct frange *fa = len_entry(a), *fb = len_entry(b);

	if (fa->len != fb->len)
		return cmp_u64(fa->len, fb->len);
	return cmp_u64(fa->off, fb->off);
}

static int len_keycmp(const void *key, const struct rb_node *n)
{
	const struct len_key *k = key;
	const struct frange *f = len_entry(n);

	if (k->len != f->len)
		return cmp_u64(k->len, f->len);
	return cmp_u64(k->off, f->off);
}

static struct frange *range_new(struct alloc *a)
{
	struct frange *f = a->spare;

	if (f) {
		a->spare = (struct frange *)f->by_off.left;
		a->nspare--;
		return f;
	}
	return malloc(sizeof(*f));
}

static void range_link(struct alloc *a, struct frange *f, uint64_t off, uint64_t len)
{
	f->off = off;
	f->len = len;
	rb_insert(&a->by_off, &f->by_off, off_cmp);
	rb_insert(&a->by_len, &f->by_len, len_cmp);
	a->nranges++;
}

static void range_drop(struct alloc *a, struct frange *f)
{
	rb_erase(&a->by_off, &f->by_off);
	rb_erase(&a->by_len, &f->by_len);
	a->nranges--;
	f->by_off.left = (struct rb_node *)a->spare;
	a->spare = f;
	a->nspare++;
}

/*
 * Change a range's bounds. Ranges never overlap and only shrink or grow into
 * free gaps, so the offset order is unchanged; only the size tree moves.
 */
static void range_resize(struct alloc *a, struct frange *f, uint64_t off, uint64_t len)
{
	rb_erase(&a->by_len, &f->by_len);
	f->off = off;
	f->len = len;
	rb_insert(&a->by_len, &f->by_len, len_cmp);
}

void alloc_spare_trim(struct alloc *a)
{
	struct frange *f;

	while (a->nspare > SPARE_KEEP) {
		f = a->spare;
		a->spare = (struct frange *)f->by_off.left;
		a->nspare--;
		free(f);
	}
}

/* Remove [off, off+len), which lies inside f, from the free set. */
static int range_take(struct alloc *a, struct frange *f, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, fend = f->off + f->len;
	struct frange *tail;

	if (off == f->off && end == fend) {
		range_drop(a, f);
	} else if (off == f->off) {
		range_resize(a, f, end, fend - end);
	} else if (end == fend) {
		range_resize(a, f, f->off, off - f->off);
	} else {
		tail = range_new(a);
		if (!tail)
			return -ENOMEM;
		range_resize(a, f, f->off, off - f->off);
		range_link(a, tail, end, fend - end);
	}
	a->free_bytes -= len;
	return 0;
}

/* Add [off, off+len), known to be allocated, back to the free set. */
static int range_give(struct alloc *a, uint64_t off, uint64_t len)
{
	struct frange *prev, *next, *f;
	int join_prev, join_next;

	prev = off_entry(rb_floor(&a->by_off, &off, off_keycmp));
	next = off_entry(prev ? rb_next(&prev->by_off) : rb_first(&a->by_off));
	join_prev = prev && prev->off + prev->len == off;
	join_next = next && off + len == next->off;
	if (join_prev && join_next) {
		range_drop(a, next);
		range_resize(a, prev, prev->off, prev->len + len + next->len);
	} else if (join_prev) {
		range_resize(a, prev, prev->off, prev->len + len);
	} else if (join_next) {
		range_resize(a, next, off, next->len + len);
	} else {
		f = range_new(a);
		if (!f)
			return -ENOMEM;
		range_link(a, f, off, len);
	}
	a->free_bytes += len;
	return 0;
}

static int list_reserve(struct extent_list *l, uint32_t want)
{
	struct extent *v;
	uint32_t cap;

	if (want <= l->cap)
		return 0;
	if (l->cap > UINT32_MAX / 2)
		return -ENOMEM;
	cap = l->cap ? l->cap * 2 : 4;
	v = realloc(l->v, (size_t)cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	l->cap = cap;
	return 0;
}

/* Carve [off, off+len) out of f onto the end of list; all or nothing. */
int alloc_take_append(struct alloc *a, struct frange *f, uint64_t off,
		       uint64_t len, struct extent_list *l)
{
	struct extent *last = l->n ? &l->v[l->n - 1] : NULL;
	int merge = last && last->off + last->len == off;
	int rc;

	if (!merge) {
		rc = list_reserve(l, l->n + 1);
		if (rc < 0)
			return rc;
	}
	rc = range_take(a, f, off, len);
	if (rc < 0)
		return rc;
	if (merge) {
		last->len += len;
	} else {
		l->v[l->n].off = off;
		l->v[l->n].len = len;
		l->n++;
	}
	return 0;
}

/* Give back what alloc_get() appended since the mark, newest first. */
void alloc_list_rollback(struct alloc *a, struct extent_list *l,
			  const struct list_mark *m)
{
	struct extent *e;
	int rc;

	(void)rc;	/* only read by assert() */
	while (l->n > m->n) {
		e = &l->v[--l->n];
		rc = range_give(a, e->off, e->len);
		/* Replays a forward state; the spare list covers every node. */
		assert(rc == 0);
	}
	if (m->n && l->v[m->n - 1].len > m->last_len) {
		e = &l->v[m->n - 1];
		rc = range_give(a, e->off + m->last_len, e->len - m->last_len);
		assert(rc == 0);
		e->len = m->last_len;
	}
}

struct frange *alloc_largest(const struct alloc *a)
{
	return len_entry(rb_last(&a->by_len));
}

/* Smallest range of at least len bytes (lowest offset among equals). */
struct frange *alloc_best_fit(const struct alloc *a, uint64_t len)
{
	struct len_key k = { len, 0 };

	return len_entry(rb_lower_bound(&a->by_len, &k, len_keycmp));
}

struct frange *alloc_next_fit(const struct frange *f)
{
	return len_entry(rb_next(&f->by_len));
}

struct frange *alloc_range_at(const struct alloc *a, uint64_t off)
{
	struct frange *f = off_entry(rb_floor(&a->by_off, &off, off_keycmp));

	return f && f->off == off ? f : NULL;
}

/*
 * Where to cut len bytes out of f, always at one of its ends so no node is
 * needed. Large pieces start on an align boundary when they fit there.
 * Small pieces go into the unaligned head if it holds them, else at the very
 * end: that uses the unaligned tail first and then breaks only the last
 * aligned block, into whose remains later small pieces pack.
 */
static uint64_t place(const struct alloc *a, const struct frange *f, uint64_t len)
{
	uint64_t s = f->off, e = f->off + f->len;
	uint64_t as = round_up(s, a->align), ae = round_down(e, a->align);

	if (len >= a->align && as + len <= e)
		return as;
	if (ae <= as || as - s >= len)
		return s;
	return e - len;
}

/*
 * A range that holds len bytes starting on an align boundary: first a few
 * tight candidates in size order, then the smallest range long enough that
 * any alignment fits.
 */
struct frange *alloc_aligned_fit(const struct alloc *a, uint64_t len)
{
	struct frange *f = alloc_best_fit(a, len);
	unsigned int i;

	for (i = 0; f && i < ALIGNED_SCAN; i++) {
		if (round_up(f->off, a->align) + len <= f->off + f->len)
			return f;
		f = len_entry(rb_next(&f->by_len));
	}
	return alloc_best_fit(a, len + a->align - a->block);
}

/*
 * Take len bytes as one piece if any range holds them, otherwise whole
 * ranges, largest first, until the rest fits in one. Terminates with
 * success whenever len <= free bytes: that is the no-false-ENOSPC rule.
 */
static int gather(struct alloc *a, uint64_t len, struct extent_list *l)
{
	struct frange *f;
	uint64_t n;
	int rc;

	while (len) {
		f = alloc_best_fit(a, len);
		if (f)
			return alloc_take_append(a, f, place(a, f, len), len, l);
		f = alloc_largest(a);
		n = f->len;
		rc = alloc_take_append(a, f, f->off, n, l);
		if (rc < 0)
			return rc;
		len -= n;
	}
	return 0;
}

/* len >= align: one aligned extent, else aligned blocks, else anything. */
static int get_large(struct alloc *a, uint64_t len, struct extent_list *l)
{
	struct frange *f = alloc_aligned_fit(a, len);
	uint64_t as, ae, n;
	int rc;

	if (f)
		return alloc_take_append(a, f, round_up(f->off, a->align), len, l);
	while (len >= a->align) {
		f = alloc_largest(a);
		as = round_up(f->off, a->align);
		ae = round_down(f->off + f->len, a->align);
		if (ae <= as)
			break;
		n = ae - as < len ? ae - as : len;
		rc = alloc_take_append(a, f, as, n, l);
		if (rc < 0)
			return rc;
		len -= n;
	}
	return gather(a, len, l);
}

int alloc_new(uint64_t base, uint64_t size, uint64_t block, uint64_t align,
	      struct alloc **out)
{
	struct frange *f;
	struct alloc *a;

	if (!out || !is_pow2(block) || block < 4096 || !is_pow2(align) ||
	    align < block || !size || base % block || size % block ||
	    base + size < base)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	f = malloc(sizeof(*f));
	if (!f) {
		free(a);
		return -ENOMEM;
	}
	a->base = base;
	a->size = size;
	a->block = block;
	a->align = align;
	a->free_bytes = size;
	range_link(a, f, base, size);
	*out = a;
	return 0;
}

static void free_subtree(struct rb_node *n)
{
	if (!n)
		return;
	free_subtree(n->left);
	free_subtree(n->right);
	free(off_entry(n));
}

void alloc_destroy(struct alloc *a)
{
	struct frange *f;

	if (!a)
		return;
	/* Depth is O(log n), so recursion is bounded. */
	free_subtree(a->by_off.node);
	while (a->spare) {
		f = a->spare;
		a->spare = (struct frange *)f->by_off.left;
		free(f);
	}
	free(a);
}

int alloc_get(struct alloc *a, uint64_t len, struct extent_list *list)
{
	struct list_mark m;
	int rc;

	if (!a || !list)
		return -EINVAL;
	if (!len)
		return 0;
	/* Compare before rounding so a huge len cannot wrap. */
	if (len > a->free_bytes || round_up(len, a->block) > a->free_bytes)
		return -ENOSPC;
	len = round_up(len, a->block);
	list_mark_set(&m, list);
	if (len >= a->align)
		rc = get_large(a, len, list);
	else
		rc = gather(a, len, list);
	if (rc < 0)
		alloc_list_rollback(a, list, &m);
	alloc_spare_trim(a);
	return rc;
}

/* A put must lie in the pool, on block boundaries, and not be free already. */
static int put_valid(const struct alloc *a, uint64_t off, uint64_t len)
{
	const struct frange *prev, *next;

	if (!len || off % a->block || len % a->block || off < a->base ||
	    off - a->base > a->size || len > a->size - (off - a->base))
		return 0;
	prev = off_entry(rb_floor(&a->by_off, &off, off_keycmp));
	next = off_entry(prev ? rb_next(&prev->by_off) : rb_first(&a->by_off));
	if (prev && prev->off + prev->len > off)
		return 0;
	return !next || next->off >= off + len;
}

static void put_one(struct alloc *a, uint64_t off, uint64_t len)
{
	int rc;

	if (!put_valid(a, off, len)) {
		log_warnx("alloc: refusing bad or double free of %llu+%llu",
			  (unsigned long long)off, (unsigned long long)len);
		return;
	}
	rc = range_give(a, off, len);
	if (rc < 0)
		log_warn(rc, "alloc: lost %llu+%llu", (unsigned long long)off,
			 (unsigned long long)len);
}

void alloc_put(struct alloc *a, uint64_t off, uint64_t len)
{
	put_one(a, off, len);
	alloc_spare_trim(a);
}

void alloc_put_list(struct alloc *a, const struct extent_list *list)
{
	uint32_t i;

	for (i = 0; i < list->n; i++)
		put_one(a, list->v[i].off, list->v[i].len);
	alloc_spare_trim(a);
}

uint64_t alloc_trim(struct alloc *a, struct extent_list *list, uint64_t keep)
{
	uint64_t total = alloc_extent_list_bytes(list), acc = 0, part, freed;
	uint32_t i = 0, j;

	if (keep >= total || round_up(keep, a->block) >= total)
		return 0;
	keep = round_up(keep, a->block);
	while (acc + list->v[i].len <= keep)
		acc += list->v[i++].len;
	/* Extent i straddles the cut: keep its first part bytes. */
	part = keep - acc;
	freed = list->v[i].len - part;
	put_one(a, list->v[i].off + part, freed);
	list->v[i].len = part;
	for (j = i + 1; j < list->n; j++) {
		put_one(a, list->v[j].off, list->v[j].len);
		freed += list->v[j].len;
	}
	list->n = part ? i + 1 : i;
	alloc_spare_trim(a);
	return freed;
}

uint64_t alloc_free_bytes(const struct alloc *a)
{
	return a->free_bytes;
}

uint64_t alloc_capacity(const struct alloc *a)
{
	return a->size;
}

uint64_t alloc_block(const struct alloc *a)
{
	return a->block;
}

uint64_t alloc_free_ranges(const struct alloc *a)
{
	return a->nranges;
}

uint64_t alloc_unshaped(const struct alloc *a)
{
	return a->unshaped;
}

uint64_t alloc_largest_free(const struct alloc *a)
{
	const struct frange *f = alloc_largest(a);

	return f ? f->len : 0;
}

uint64_t alloc_extent_list_at(const struct extent_list *l, uint64_t off, uint64_t *pool_off)
{
	return extent_at(l->v, l->n, off, pool_off);
}

uint64_t alloc_extent_list_bytes(const struct extent_list *l)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < l->n; i++)
		sum += l->v[i].len;
	return sum;
}

void alloc_extent_list_free(struct extent_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/*
 * Warm restart (daemon/persist/): mark [off, off+len) used, as if alloc_get()
 * had handed it out. -EINVAL unless the range is block-aligned, inside the
 * pool and entirely free (a recovered extent overlapping another one).
 */
int alloc_claim(struct alloc *a, uint64_t off, uint64_t len)
{
	struct frange *f;
	int rc;

	if (!len || (off | len) & (a->block - 1) || off < a->base ||
	    off - a->base > a->size || len > a->size - (off - a->base))
		return -EINVAL;
	f = off_entry(rb_floor(&a->by_off, &off, off_keycmp));
	if (!f || off + len > f->off + f->len)
		return -EINVAL;
	rc = range_take(a, f, off, len);
	alloc_spare_trim(a);
	return rc;
}
