/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/alloc_grow_test.c: alloc_grow(), the allocator's policy
 * for a pending version that grows piece by piece, on a pool whose mapping
 * granule is 2 MiB (device-DAX). Real: the allocator (daemon/alloc.c and
 * alloc_grow.c). Emulated: the writers; each one grows its list the way
 * libmaru's write path reserves (lib/file.c: at least what a write needs,
 * doubling what it has) for writes of 64-128 KiB, several files
 * interleaved, as cp or dd through a marufs mount do; publish trims a list
 * to the file size (alloc_trim). "Mappable" is lib/map.c's rule: every
 * extent but the first starts on the granule, every extent but the last
 * ends on it. A block-ownership array catches overlaps and leaks.
 * The old placement (alloc_get, what the daemon used before) is run on the
 * same pattern to show it breaks that rule, and both are measured: the
 * figures are printed (pool space before and after).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "alloc.h"

#define KiB	(1024ull)
#define MiB	(1024ull * KiB)
#define BLK	(4 * KiB)
#define ALIGN	(2 * MiB)
#define NFILES	6

typedef int (*get_fn)(struct alloc *, uint64_t, struct extent_list *);

static uint64_t seed = 0x5eed;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static int mappable(const struct extent_list *l, uint64_t g)
{
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		if (i && l->v[i].off % g)
			return 0;
		if (i + 1 < l->n && (l->v[i].off + l->v[i].len) % g)
			return 0;
	}
	return 1;
}

/* No two lists share a block; every block is either free or in one list. */
static void check_disjoint(struct alloc *a, uint64_t base, uint64_t size,
			   struct extent_list *ls, unsigned int n)
{
	uint8_t *own = calloc(size / BLK, 1);
	uint64_t used = 0, b;
	unsigned int f;
	uint32_t i;

	assert_non_null(own);
	for (f = 0; f < n; f++) {
		for (i = 0; i < ls[f].n; i++) {
			assert_true(ls[f].v[i].off >= base);
			assert_true(ls[f].v[i].off + ls[f].v[i].len <= base + size);
			for (b = ls[f].v[i].off; b < ls[f].v[i].off + ls[f].v[i].len; b += BLK) {
				assert_int_equal(own[(b - base) / BLK], 0);
				own[(b - base) / BLK] = 1;
			}
			used += ls[f].v[i].len;
		}
	}
	assert_int_equal(alloc_free_bytes(a) + used, size);
	free(own);
}

/* libmaru's reserve: at least need, doubling what the file has. */
static int reserve(struct alloc *a, get_fn get, struct extent_list *l, uint64_t need)
{
	uint64_t have = alloc_extent_list_bytes(l), want;

	if (need <= have)
		return 0;
	want = have * 2 > need ? have * 2 : need;
	if (get(a, want - have, l) == 0)
		return 0;
	return get(a, need - have, l);
}

/*
 * Write NFILES files of the given sizes interleaved, 64-128 KiB at a time,
 * then publish (trim) each. Returns how many ended mappable.
 */
static unsigned int write_interleaved(struct alloc *a, get_fn get, const uint64_t *size,
				      struct extent_list *ls)
{
	uint64_t pos[NFILES] = { 0 }, step;
	unsigned int f, left = NFILES, ok = 0;

	memset(ls, 0, NFILES * sizeof(*ls));
	while (left) {
		left = 0;
		for (f = 0; f < NFILES; f++) {
			if (pos[f] >= size[f])
				continue;
			step = (64 + rnd() % 65) * KiB;
			if (step > size[f] - pos[f])
				step = size[f] - pos[f];
			assert_int_equal(reserve(a, get, &ls[f], pos[f] + step), 0);
			pos[f] += step;
			left++;
		}
	}
	for (f = 0; f < NFILES; f++) {
		alloc_trim(a, &ls[f], size[f]);
		assert_int_equal(alloc_extent_list_bytes(&ls[f]), (size[f] + BLK - 1) / BLK * BLK);
		ok += mappable(&ls[f], ALIGN);
	}
	return ok;
}

static const uint64_t sizes[NFILES] = {
	2 * MiB + 64 * KiB, 5 * MiB + 12 * KiB, 2 * MiB, 9 * MiB + 300 * KiB,
	3 * MiB + 4 * KiB, 64 * KiB,
};

static void put_all(struct alloc *a, struct extent_list *ls, unsigned int n)
{
	unsigned int f;

	for (f = 0; f < n; f++) {
		alloc_put_list(a, &ls[f]);
		alloc_extent_list_free(&ls[f]);
	}
}

/* The pattern: cp/dd of several files at once on a 2 MiB pool. */
static void test_interleaved_writes_map(void **state)
{
	struct extent_list ls[NFILES], kept[NFILES * 10];
	uint64_t base = 2 * MiB, size = 1024 * MiB - base;
	unsigned int ok_old, ok_new, round, nkept = 0, f;
	struct alloc *a;

	(void)state;
	assert_int_equal(alloc_new(base, size, BLK, ALIGN, &a), 0);
	/* What the daemon did before: the small pieces land unaligned. */
	ok_old = write_interleaved(a, alloc_get, sizes, ls);
	check_disjoint(a, base, size, ls, NFILES);
	put_all(a, ls, NFILES);
	assert_true(ok_old < NFILES);
	/* Now, also among files of earlier rounds (a fragmented pool). */
	for (round = 0; round < 20; round++) {
		ok_new = write_interleaved(a, alloc_grow, sizes, ls);
		memcpy(kept + nkept, ls, sizeof(ls));
		nkept += NFILES;
		check_disjoint(a, base, size, kept, nkept);
		assert_int_equal(ok_new, NFILES);
		/* every other round drops half of what is kept */
		if (round % 2) {
			for (f = 0; f < nkept / 2; f++) {
				alloc_put_list(a, &kept[f]);
				alloc_extent_list_free(&kept[f]);
			}
			memmove(kept, kept + f, (nkept - f) * sizeof(*kept));
			nkept -= f;
		}
	}
	printf("# interleaved cp of %d files on a 2 MiB pool: %u mappable before, %d after\n",
	       NFILES, ok_old, NFILES);
	assert_int_equal(alloc_unshaped(a), 0);
	put_all(a, kept, nkept);
	assert_int_equal(alloc_free_bytes(a), size);
	alloc_destroy(a);
}

/* A piece under 2 MiB as a first piece ends on a boundary; no pad. */
static void test_first_small_piece_ends_aligned(void **state)
{
	struct extent_list l = { 0 };
	struct alloc *a;

	(void)state;
	assert_int_equal(alloc_new(2 * MiB, 62 * MiB, BLK, ALIGN, &a), 0);
	assert_int_equal(alloc_grow(a, 64 * KiB, &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.v[0].len, 64 * KiB);
	assert_int_equal((l.v[0].off + l.v[0].len) % ALIGN, 0);
	/* growth is padded to the next boundary, then trimmed at publish */
	assert_int_equal(alloc_grow(a, 960 * KiB, &l), 0);
	assert_int_equal(alloc_extent_list_bytes(&l), 64 * KiB + ALIGN);
	assert_true(mappable(&l, ALIGN));
	assert_int_equal(alloc_trim(a, &l, 2 * MiB + 64 * KiB), 0);
	assert_int_equal(alloc_trim(a, &l, 1 * MiB), 1 * MiB + 64 * KiB);
	assert_true(mappable(&l, ALIGN));
	alloc_put_list(a, &l);
	alloc_extent_list_free(&l);
	assert_int_equal(alloc_free_bytes(a), 62 * MiB);
	assert_int_equal(alloc_free_ranges(a), 1);
	alloc_destroy(a);
}

/* Growth goes on in place when the bytes after the list are free. */
static void test_grows_in_place(void **state)
{
	struct extent_list l = { 0 };
	struct alloc *a;
	int i;

	(void)state;
	assert_int_equal(alloc_new(0, 64 * MiB, BLK, ALIGN, &a), 0);
	assert_int_equal(alloc_grow(a, 3 * MiB, &l), 0);
	assert_int_equal(l.v[0].off % ALIGN, 0);
	assert_int_equal(l.v[0].len, 4 * MiB);
	/* the pad covers what comes next: no call until 4 MiB is passed */
	for (i = 1; i <= 10; i++)
		assert_int_equal(reserve(a, alloc_grow, &l, 4 * MiB + i * 128 * KiB), 0);
	/* doubling asks 8 MiB, all in place: one extent */
	assert_int_equal(l.n, 1);
	assert_int_equal(alloc_extent_list_bytes(&l), 8 * MiB);
	alloc_put_list(a, &l);
	alloc_extent_list_free(&l);
	alloc_destroy(a);
}

/* No room of the shape left: the bytes still come (alloc_get), counted. */
static void test_fallback_no_false_enospc(void **state)
{
	struct extent_list small[16], l = { 0 };
	struct alloc *a;
	unsigned int i;

	(void)state;
	/* 4 granules; a 64 KiB file ends each, so no granule is free */
	assert_int_equal(alloc_new(0, 8 * MiB, BLK, ALIGN, &a), 0);
	for (i = 0; i < 4; i++) {
		memset(&small[i], 0, sizeof(small[i]));
		assert_int_equal(alloc_grow(a, 64 * KiB, &small[i]), 0);
		assert_int_equal((small[i].v[0].off + 64 * KiB) % ALIGN, 0);
	}
	assert_int_equal(alloc_unshaped(a), 0);
	/* 3 MiB fits only in pieces that cannot join on a boundary */
	assert_int_equal(alloc_grow(a, 3 * MiB, &l), 0);
	assert_int_equal(alloc_extent_list_bytes(&l), 3 * MiB);
	assert_int_equal(alloc_unshaped(a), 1);
	assert_int_equal(alloc_grow(a, alloc_free_bytes(a), &l), 0);
	assert_int_equal(alloc_free_bytes(a), 0);
	assert_int_equal(alloc_grow(a, BLK, &l), -ENOSPC);
	assert_int_equal(alloc_grow(NULL, BLK, &l), -EINVAL);
	alloc_put_list(a, &l);
	alloc_extent_list_free(&l);
	for (i = 0; i < 4; i++) {
		alloc_put_list(a, &small[i]);
		alloc_extent_list_free(&small[i]);
	}
	assert_int_equal(alloc_free_ranges(a), 1);
	alloc_destroy(a);
}

/* On a 4 KiB pool (shm, file) alloc_grow is alloc_get: no pad. */
static void test_block_aligned_pool_unchanged(void **state)
{
	struct extent_list l = { 0 };
	struct alloc *a;

	(void)state;
	assert_int_equal(alloc_new(0, 64 * MiB, BLK, BLK, &a), 0);
	assert_int_equal(alloc_grow(a, 5000, &l), 0);
	assert_int_equal(alloc_extent_list_bytes(&l), 8 * KiB);
	assert_int_equal(alloc_grow(a, 1 * MiB, &l), 0);
	assert_int_equal(alloc_extent_list_bytes(&l), 8 * KiB + 1 * MiB);
	alloc_put_list(a, &l);
	alloc_extent_list_free(&l);
	alloc_destroy(a);
}

/*
 * What it costs: small files written through the mount (reserved 64 KiB,
 * published at 16 KiB) until the pool is full, old and new placement; and
 * the peak and final bytes of a 2 MiB + 64 KiB file.
 */
static unsigned int fill_small(get_fn get, unsigned int *mappable_growers)
{
	struct extent_list *ls = calloc(4096, sizeof(*ls)), g = { 0 };
	unsigned int n = 0, i;
	struct alloc *a;

	assert_non_null(ls);
	assert_int_equal(alloc_new(0, 64 * MiB, BLK, ALIGN, &a), 0);
	while (n < 4096 && get(a, 64 * KiB, &ls[n]) == 0) {
		alloc_trim(a, &ls[n], 16 * KiB);
		n++;
	}
	/* then the files of the first 8 MiB go: does a new file grow mappably? */
	for (i = 0; i < n; i++) {
		if (ls[i].n && ls[i].v[0].off < 8 * MiB) {
			alloc_put_list(a, &ls[i]);
			alloc_extent_list_free(&ls[i]);
		}
	}
	*mappable_growers = 0;
	while (reserve(a, get, &g, alloc_extent_list_bytes(&g) + 128 * KiB) == 0 &&
	       alloc_extent_list_bytes(&g) < 4 * MiB)
		;
	*mappable_growers = mappable(&g, ALIGN);
	alloc_extent_list_free(&g);
	for (i = 0; i < n; i++)
		alloc_extent_list_free(&ls[i]);
	free(ls);
	alloc_destroy(a);
	return n;
}

static void test_space_cost(void **state)
{
	unsigned int n_old, n_new, g_old, g_new;
	struct extent_list l = { 0 };
	uint64_t peak = 0, p;
	struct alloc *a;

	(void)state;
	n_old = fill_small(alloc_get, &g_old);
	n_new = fill_small(alloc_grow, &g_new);
	printf("# 16 KiB files on a 64 MiB 2 MiB-aligned pool: %u fit before, %u after\n",
	       n_old, n_new);
	printf("# a 4 MiB file grown among them maps: before %s, after %s\n",
	       g_old ? "yes" : "no", g_new ? "yes" : "no");
	assert_int_equal(n_old, n_new);
	assert_true(n_new >= 64 * MiB / (16 * KiB) - 3);
	assert_true(g_new);
	assert_int_equal(alloc_new(0, 64 * MiB, BLK, ALIGN, &a), 0);
	for (p = 64 * KiB; p <= 2 * MiB + 64 * KiB; p += 64 * KiB) {
		assert_int_equal(reserve(a, alloc_grow, &l, p), 0);
		if (alloc_extent_list_bytes(&l) > peak)
			peak = alloc_extent_list_bytes(&l);
	}
	alloc_trim(a, &l, 2 * MiB + 64 * KiB);
	printf("# a 2 MiB + 64 KiB file: %llu KiB reserved at most while written, %llu KiB once published\n",
	       (unsigned long long)(peak / KiB),
	       (unsigned long long)(alloc_extent_list_bytes(&l) / KiB));
	assert_int_equal(alloc_extent_list_bytes(&l), 2 * MiB + 64 * KiB);
	assert_true(peak <= 2 * (2 * MiB + 64 * KiB) + ALIGN);
	assert_true(mappable(&l, ALIGN));
	alloc_put_list(a, &l);
	alloc_extent_list_free(&l);
	alloc_destroy(a);
}

/*
 * Many small first pieces, far more than the pool has granules, then freed
 * in random order: each call stays a few tree searches (the shaped search
 * gives up in O(log n) once no granule end is free) and nothing is lost.
 */
static void test_many_small_files(void **state)
{
	const unsigned int n = 300000;
	struct extent_list *ls = calloc(n, sizeof(*ls));
	uint64_t size = 16ull * 1024 * MiB, t;
	struct alloc *a;
	unsigned int i, j;

	(void)state;
	assert_non_null(ls);
	assert_int_equal(alloc_new(0, size, BLK, ALIGN, &a), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(alloc_grow(a, (1 + rnd() % 16) * BLK, &ls[i]), 0);
	for (i = n - 1; i > 0; i--) {
		j = (unsigned int)(rnd() % (i + 1));
		struct extent_list tmp = ls[i];

		ls[i] = ls[j];
		ls[j] = tmp;
	}
	for (i = 0; i < n; i++) {
		t = alloc_extent_list_bytes(&ls[i]);
		assert_true(t >= BLK && t <= 16 * BLK);
		alloc_put_list(a, &ls[i]);
		alloc_extent_list_free(&ls[i]);
	}
	assert_int_equal(alloc_free_bytes(a), size);
	assert_int_equal(alloc_free_ranges(a), 1);
	assert_int_equal(alloc_unshaped(a), 0);
	free(ls);
	alloc_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interleaved_writes_map),
		cmocka_unit_test(test_first_small_piece_ends_aligned),
		cmocka_unit_test(test_grows_in_place),
		cmocka_unit_test(test_fallback_no_false_enospc),
		cmocka_unit_test(test_block_aligned_pool_unchanged),
		cmocka_unit_test(test_space_cost),
		cmocka_unit_test(test_many_small_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
