/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/htab.c: the generic open-addressing hash table of htab.h. It
 * knows nothing of directories: it stores tagged pointers, asks the owner's
 * hkey_fn for an item's hash when it has to move one, and never calls out
 * of this file except to calloc/free and fatalx.
 */
#include <errno.h>
#include <stdlib.h>

#include "htab.h"
#include "log.h"

uint64_t htab_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Mixed so neighbours in a probe run differ. */
uint16_t htab_fp(uint32_t h)
{
	uint16_t f = (uint16_t)((h * 0x9e3779b1u) >> 16);

	return f ? f : 1;
}

int htab_init(struct htab *t, uint64_t size, hkey_fn fn)
{
	/* One block: the slots, then the fingerprints. */
	t->slot = calloc(size, sizeof(*t->slot) + sizeof(*t->fp));
	if (!t->slot)
		return -ENOMEM;
	t->fp = (uint16_t *)(t->slot + size);
	t->mask = size - 1;
	t->count = 0;
	t->hash = fn;
	return 0;
}

void htab_fini(struct htab *t)
{
	free(t->slot);
	t->slot = NULL;
	t->fp = NULL;
	t->count = 0;
}

void htab_place(struct htab *t, uintptr_t item, uint32_t h)
{
	uint64_t i = htab_home(t, h);

	while (t->fp[i])
		i = htab_next(t, i);
	t->slot[i] = item;
	t->fp[i] = htab_fp(h);
	t->count++;
}

/*
 * Doubling at 3/4 load: the rehash is amortized O(1) per insert; hashes
 * are kept in the items so it never rehashes names.
 */
int htab_reserve(struct htab *t)
{
	uint64_t size = t->mask + 1, i;
	struct htab n;

	if ((t->count + 1) * 4 <= size * 3)
		return 0;
	if (htab_init(&n, size * 2, t->hash))
		return -ENOMEM;
	for (i = 0; i < size; i++)
		if (t->fp[i])
			htab_place(&n, t->slot[i], t->hash(t->slot[i]));
	free(t->slot);
	*t = n;
	return 0;
}

uint64_t htab_slot_of(const struct htab *t, uintptr_t item)
{
	uint64_t i = htab_home(t, t->hash(item));

	while (t->slot[i] != item) {
		if (!t->fp[i])
			fatalx("dir: hash table lost an item");
		i = htab_next(t, i);
	}
	return i;
}

/* Backward-shift deletion keeps probe runs unbroken without tombstones. */
static void htab_del_at(struct htab *t, uint64_t i)
{
	uint64_t j = i, k;

	for (;;) {
		j = htab_next(t, j);
		if (!t->fp[j])
			break;
		k = htab_home(t, t->hash(t->slot[j]));
		/* slot[j] stays if its home k lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slot[i] = t->slot[j];
		t->fp[i] = t->fp[j];
		i = j;
	}
	t->slot[i] = 0;
	t->fp[i] = 0;
	t->count--;
}

void htab_del(struct htab *t, uintptr_t item)
{
	htab_del_at(t, htab_slot_of(t, item));
}
