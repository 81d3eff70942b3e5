/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/htab.c: the open-addressing hash table of htab.h. It knows
 * nothing of its owners: it stores tagged pointers, asks the owner's
 * htab_hash_fn for an item's hash when it has to move one, and never calls
 * out of this file except to calloc/free/madvise, the owner's compare and
 * log_fatalx.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "htab.h"
#include "log.h"

#define ITEM_BITS	HTAB_ITEM_BITS
#define ITEM_MASK	HTAB_ITEM_MASK
#define FP_MASK		HTAB_FP_MASK
/* Emptied old slots handed back to the kernel in runs of this many (64 KiB). */
#define RELEASE_SLOTS	8192u

static uint64_t slot_fp(uint32_t h)
{
	return (uint64_t)htab_fp(h) << ITEM_BITS;
}

static int arr_init(struct htab_arr *a, uint64_t size)
{
	a->slot = calloc(size, sizeof(*a->slot));
	if (!a->slot)
		return -ENOMEM;
	a->mask = size - 1;
	return 0;
}

int htab_init(struct htab *t, uint64_t size, htab_hash_fn fn, enum htab_grow grow)
{
	if (arr_init(&t->cur, size))
		return -ENOMEM;
	t->old.slot = NULL;
	t->old.mask = 0;
	t->start = t->done = 0;
	t->count = t->moved = 0;
	t->step = grow == HTAB_BULK ? UINT64_MAX : HTAB_STEP;
	t->hash = fn;
	return 0;
}

void htab_fini(struct htab *t)
{
	free(t->cur.slot);
	free(t->old.slot);
	t->cur.slot = NULL;
	t->old.slot = NULL;
	t->count = 0;
}

void htab_clear(struct htab *t)
{
	memset(t->cur.slot, 0, (t->cur.mask + 1) * sizeof(*t->cur.slot));
	free(t->old.slot);
	t->old.slot = NULL;
	t->old.mask = 0;
	t->start = t->done = 0;
	t->count = 0;
}

int htab_migrating(const struct htab *t)
{
	return t->old.slot != NULL;
}

/*
 * The incremental doubling: the old array is emptied slot by slot from
 * `start` (an empty slot, so no probe run straddles it) onward; `done` slots
 * are emptied. An old probe run may have lost its head to the migration,
 * so in the old array a hash whose home lies in the emptied part probes
 * from the first slot not yet emptied: every item still there has an
 * unbroken run from that point to its slot, which is what lookups and
 * backward-shift deletes need. Emptied pages of the old array go back to
 * the kernel as the migration passes them, so freeing a big array never
 * costs one long munmap.
 *
 * Where a probe for hash h starts in array a.
 */
static uint64_t arr_home(const struct htab *t, const struct htab_arr *a, uint32_t h)
{
	uint64_t i = h & a->mask;

	if (a == &t->old && ((i - t->start) & a->mask) < t->done)
		return (t->start + t->done) & a->mask;
	return i;
}

static void arr_place(struct htab_arr *a, uint64_t s, uint32_t h)
{
	uint64_t i = h & a->mask;

	while (a->slot[i])
		i = (i + 1) & a->mask;
	a->slot[i] = s;
}

void htab_place(struct htab *t, uintptr_t item, uint32_t h)
{
	if ((uint64_t)item & FP_MASK)
		log_fatalx("htab: item above 2^48");
	arr_place(&t->cur, slot_fp(h) | item, h);
	t->count++;
}

/* The emptied old slots [i - RELEASE_SLOTS, i) go back to the kernel. */
static void old_release(struct htab *t, uint64_t i)
{
	uintptr_t lo = (uintptr_t)(t->old.slot + i - RELEASE_SLOTS);
	uintptr_t hi = (uintptr_t)(t->old.slot + i);
	uintptr_t pg = 4096;

	lo = (lo + pg - 1) & ~(pg - 1);
	hi &= ~(pg - 1);
	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Empty up to `budget` more old slots into cur; free old when it is empty. */
static void migrate(struct htab *t, uint64_t budget)
{
	struct htab_arr *o = &t->old;
	uint64_t size = o->mask + 1, i, s;

	for (; budget && t->done < size; budget--) {
		i = (t->start + t->done) & o->mask;
		s = o->slot[i];
		if (s) {
			arr_place(&t->cur, s, t->hash((uintptr_t)(s & ITEM_MASK)));
			o->slot[i] = 0;
			t->moved++;
		}
		t->done++;
		i = (i + 1) & o->mask;
		if (size > RELEASE_SLOTS && t->done >= RELEASE_SLOTS && !(i % RELEASE_SLOTS))
			old_release(t, i ? i : size);
	}
	if (t->done == size) {
		free(o->slot);
		o->slot = NULL;
	}
}

/* Start doubling: cur becomes old, emptied from its first empty slot. */
static int grow(struct htab *t)
{
	struct htab_arr n;
	uint64_t i = 0;

	if (arr_init(&n, (t->cur.mask + 1) * 2))
		return -ENOMEM;
	t->old = t->cur;
	t->cur = n;
	while (t->old.slot[i])
		i++;
	t->start = i;
	t->done = 0;
	return 0;
}

/*
 * Doubling at 3/4 load. An incremental doubling moves HTAB_STEP old slots
 * per call: the new array (twice the size) reaches 3/4 only after as many
 * inserts as old has slots, by when the HTAB_STEP >= 2 steps have emptied
 * it. A bulk one empties old in the call that starts it.
 */
int htab_reserve(struct htab *t)
{
	int rc;

	if (t->old.slot)
		migrate(t, t->step);
	if ((t->count + 1) * 4 <= (t->cur.mask + 1) * 3)
		return 0;
	if (t->old.slot)
		migrate(t, UINT64_MAX);	/* not reached: see above */
	rc = grow(t);
	if (!rc && t->step == UINT64_MAX)
		migrate(t, UINT64_MAX);
	return rc;
}

static uintptr_t probe_scan(struct htab_probe *p)
{
	uint64_t s;

	for (;;) {
		while ((s = p->a->slot[p->i])) {
			if ((s & FP_MASK) == p->fp)
				return (uintptr_t)(s & ITEM_MASK);
			p->i = (p->i + 1) & p->a->mask;
		}
		if (p->a != &p->t->cur || !p->t->old.slot)
			return 0;
		p->a = &p->t->old;
		p->i = arr_home(p->t, p->a, p->h);
	}
}

uintptr_t htab_probe(const struct htab *t, uint32_t h, struct htab_probe *p)
{
	p->t = t;
	p->a = &t->cur;
	p->h = h;
	p->fp = slot_fp(h);
	p->i = h & t->cur.mask;
	return probe_scan(p);
}

uintptr_t htab_more(struct htab_probe *p)
{
	p->i = (p->i + 1) & p->a->mask;
	return probe_scan(p);
}

uintptr_t htab_find_old(const struct htab *t, uint32_t h, htab_eq_fn eq, const void *key)
{
	uint64_t fp = slot_fp(h), i = arr_home(t, &t->old, h), s;

	while ((s = t->old.slot[i])) {
		if ((s & FP_MASK) == fp && eq((uintptr_t)(s & ITEM_MASK), key))
			return (uintptr_t)(s & ITEM_MASK);
		i = (i + 1) & t->old.mask;
	}
	return 0;
}

/* Slots of cur then old, walked as one range. */
static uint64_t nslots(const struct htab *t)
{
	return t->cur.mask + 1 + (t->old.slot ? t->old.mask + 1 : 0);
}

static uint64_t slot_at(const struct htab *t, uint64_t pos)
{
	uint64_t ncur = t->cur.mask + 1;

	return pos < ncur ? t->cur.slot[pos] : t->old.slot[pos - ncur];
}

uintptr_t htab_walk(const struct htab *t, uint64_t *pos)
{
	uint64_t s;

	while (*pos < nslots(t)) {
		s = slot_at(t, (*pos)++);
		if (s)
			return (uintptr_t)(s & ITEM_MASK);
	}
	return 0;
}

uintptr_t htab_sweep(const struct htab *t, uint64_t *pos, uint64_t *budget)
{
	uint64_t s;

	for (; *budget; (*budget)--) {
		if (*pos >= nslots(t))
			*pos = 0;
		s = slot_at(t, (*pos)++);
		if (s) {
			(*budget)--;
			return (uintptr_t)(s & ITEM_MASK);
		}
	}
	return 0;
}

/* The array and slot holding item (fatal if none). */
static uint64_t find(struct htab *t, uintptr_t item, struct htab_arr **ap)
{
	struct htab_probe p;
	uintptr_t it;

	for (it = htab_probe(t, t->hash(item), &p); it; it = htab_more(&p))
		if (it == item) {
			*ap = (struct htab_arr *)p.a;
			return p.i;
		}
	log_fatalx("htab: lost an item");
}

/* Backward-shift deletion keeps probe runs unbroken without tombstones. */
static void del_at(struct htab *t, struct htab_arr *a, uint64_t i)
{
	uint64_t j = i, k;

	for (;;) {
		j = (j + 1) & a->mask;
		if (!a->slot[j])
			break;
		k = arr_home(t, a, t->hash((uintptr_t)(a->slot[j] & ITEM_MASK)));
		/* slot[j] stays if its home k lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		a->slot[i] = a->slot[j];
		i = j;
	}
	a->slot[i] = 0;
	t->count--;
}

void htab_del(struct htab *t, uintptr_t item)
{
	struct htab_arr *a;
	uint64_t i = find(t, item, &a);

	del_at(t, a, i);
}

void htab_replace(struct htab *t, uintptr_t from, uintptr_t to)
{
	struct htab_arr *a;
	uint64_t i = find(t, from, &a);

	if ((uint64_t)to & FP_MASK)
		log_fatalx("htab: item above 2^48");
	a->slot[i] = (a->slot[i] & FP_MASK) | to;
}
