/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/alloc_grow.c: the allocator's policy for a list that grows piece by
 * piece, alloc_grow(). A file maps zero-copy as one range (lib/map.c) only
 * if its extents join on the pool's mapping granule `align` (2 MiB on
 * device-DAX, whose mmap takes only offsets and lengths that are multiples
 * of it): every extent but the first starts on a boundary and every extent
 * but the last ends on one. Such a list can grow that way only from a
 * boundary, or in place, so alloc_grow() leaves it ending on one: a first
 * piece under align is cut from the free space so that it ends on a
 * boundary (no bytes lost); any other growth is extended in place when the
 * bytes after the list are free, else taken as align-aligned pieces, and
 * padded to the next boundary (publish trims the pad: alloc_trim). Only a
 * list whose end is already unaligned and followed by another's bytes, or
 * a pool with no free granule, falls back to alloc_get() (alloc_unshaped;
 * logged at the 1st, 2nd, 4th, ... time).
 */
#include <errno.h>

#include "alloc.h"
#include "alloc_priv.h"
#include "log.h"

static uint64_t list_end(const struct extent_list *l)
{
	return l->v[l->n - 1].off + l->v[l->n - 1].len;
}

/* Do the list's extents join only on align boundaries (lib/map.c's rule)? */
static int list_shaped(const struct alloc *a, const struct extent_list *l)
{
	uint32_t i;

	for (i = 1; i < l->n; i++)
		if ((l->v[i - 1].off + l->v[i - 1].len) % a->align || l->v[i].off % a->align)
			return 0;
	return 1;
}

/* A range holding len bytes that end on a boundary; that boundary in *end. */
static struct frange *end_fit(const struct alloc *a, uint64_t len, uint64_t *end)
{
	struct frange *f = alloc_best_fit(a, len);
	unsigned int i;

	for (i = 0; f && i < ALIGNED_SCAN; i++) {
		*end = round_down(f->off + f->len, a->align);
		if (*end >= f->off + len)
			return f;
		f = alloc_next_fit(f);
	}
	/* Any range this long holds a boundary with len bytes before it. */
	f = alloc_best_fit(a, len + a->align - a->block);
	if (f)
		*end = round_down(f->off + f->len, a->align);
	return f;
}

/*
 * need bytes as pieces that start on boundaries, each but the last ending
 * on one: one piece if a range holds it, else the aligned part of the
 * largest ranges. -ENOSPC when no such room is left.
 */
static int take_aligned(struct alloc *a, uint64_t need, struct extent_list *l)
{
	struct frange *f = alloc_aligned_fit(a, need);
	uint64_t as, ae, n;
	int rc;

	if (f)
		return alloc_take_append(a, f, round_up(f->off, a->align), need, l);
	while (need) {
		f = alloc_largest(a);
		if (!f)
			return -ENOSPC;
		as = round_up(f->off, a->align);
		ae = round_down(f->off + f->len, a->align);
		/* need fits nowhere aligned, so the rest must be whole granules */
		if (ae <= as)
			return -ENOSPC;
		n = ae - as < need ? ae - as : need;
		rc = alloc_take_append(a, f, as, n, l);
		if (rc < 0)
			return rc;
		need -= n;
	}
	return 0;
}

/*
 * Extend the list's last extent in place by want bytes, or, when the free
 * range after it is shorter, up to the last boundary that range reaches.
 * The bytes taken in *took.
 */
static int grow_in_place(struct alloc *a, uint64_t want, struct extent_list *l,
			 uint64_t *took)
{
	uint64_t p = list_end(l), n;
	struct frange *f = alloc_range_at(a, p);

	*took = 0;
	if (!f)
		return 0;
	if (f->len >= want)
		n = want;
	else
		n = round_down(f->off + f->len, a->align) > p ?
		    round_down(f->off + f->len, a->align) - p : 0;
	if (!n)
		return 0;
	*took = n;
	return alloc_take_append(a, f, p, n, l);
}

/* len bytes keeping the shape; pad: end the list on a boundary. */
static int grow_shaped(struct alloc *a, uint64_t len, int pad, struct extent_list *l)
{
	uint64_t want, took, end;
	struct frange *f;
	int rc;

	if (l->n == 0 && len < a->align) {
		f = end_fit(a, len, &end);
		if (!f)
			return -ENOSPC;
		return alloc_take_append(a, f, end - len, len, l);
	}
	if (l->n == 0)
		return take_aligned(a, pad ? round_up(len, a->align) : len, l);
	end = list_end(l);
	want = pad ? round_up(end + len, a->align) - end : len;
	rc = grow_in_place(a, want, l, &took);
	if (rc || took == want)
		return rc;
	/* The bytes after an unaligned end are another's: no shape left. */
	if (list_end(l) % a->align)
		return -ENOSPC;
	return take_aligned(a, want - took, l);
}

int alloc_grow(struct alloc *a, uint64_t len, struct extent_list *list)
{
	struct list_mark m;
	int rc;

	if (!a || !list)
		return -EINVAL;
	if (a->align == a->block || !len)
		return alloc_get(a, len, list);
	/* Compare before rounding so a huge len cannot wrap. */
	if (len > a->free_bytes || round_up(len, a->block) > a->free_bytes)
		return -ENOSPC;
	len = round_up(len, a->block);
	list_mark_set(&m, list);
	rc = grow_shaped(a, len, 1, list);
	if (rc == -ENOSPC) {
		/* Short of the pad: the exact bytes, still shaped, may fit. */
		alloc_list_rollback(a, list, &m);
		rc = grow_shaped(a, len, 0, list);
	}
	if (rc < 0)
		alloc_list_rollback(a, list, &m);
	alloc_spare_trim(a);
	if (rc != -ENOSPC)
		return rc;
	rc = alloc_get(a, len, list);
	/* one extent anywhere still maps: only a broken join counts */
	if (rc || list_shaped(a, list))
		return rc;
	a->unshaped++;
	if (!(a->unshaped & (a->unshaped - 1)))
		log_warnx("alloc: no room aligned to %llu KiB to grow a file by %llu KiB: it will not map zero-copy (%llu such growths so far)",
			  (unsigned long long)(a->align >> 10), (unsigned long long)(len >> 10),
			  (unsigned long long)a->unshaped);
	return 0;
}
