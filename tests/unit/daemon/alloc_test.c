/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/alloc_test.c: the extent allocator against a model.
 * The model owns one byte per pool block; every extent handed out is
 * marked there, so overlaps, leaks, lost coalescing (free range count and
 * largest range recomputed from the model) and false ENOSPC are caught after
 * every operation. malloc/realloc are interposed to inject ENOMEM and prove
 * that a failed alloc_get() or alloc_grow() leaves everything unchanged.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "alloc.h"

#define KiB	(1024ull)
#define MiB	(1024ull * KiB)
#define GiB	(1024ull * MiB)
#define BLK	(4 * KiB)
#define ALIGN	(2 * MiB)

/* ---- malloc fault injection ---- */

/*
 * Sanitizers own malloc and break if the program defines it too; valgrind
 * replaces it outright. Then the hook is left out or inert and the ENOMEM
 * test skips.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_MALLOC_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define NO_MALLOC_HOOK 1
#endif
#endif

/* Fail the N-th malloc/realloc from now (1-based); 0 = never. */
static unsigned long fail_countdown;
static unsigned long fail_injected;

#ifndef NO_MALLOC_HOOK
void *__libc_malloc(size_t size);
void *__libc_realloc(void *p, size_t size);

static int should_fail(void)
{
	if (!fail_countdown)
		return 0;
	if (--fail_countdown)
		return 0;
	fail_injected++;
	return 1;
}

void *malloc(size_t size)
{
	return should_fail() ? NULL : __libc_malloc(size);
}

void *realloc(void *p, size_t size)
{
	return should_fail() ? NULL : __libc_realloc(p, size);
}

static int injection_works(void)
{
	/* Through a pointer, so the call is neither inlined nor elided. */
	void *(*volatile mallocp)(size_t) = malloc;
	void *p;

	fail_countdown = 1;
	p = mallocp(16);
	fail_countdown = 0;
	free(p);
	return p == NULL;
}
#else
static int injection_works(void)
{
	return 0;
}
#endif

/* ---- deterministic random numbers ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi)
{
	return lo + rnd() % (hi - lo + 1);
}

/* ---- the model ---- */

struct model {
	struct alloc *a;
	uint64_t base, size;
	uint64_t nblocks;
	uint8_t *owned;		/* 1 per allocated block */
	uint64_t allocated;	/* bytes, as the model counts them */
};

static void model_init(struct model *m, uint64_t base, uint64_t size)
{
	memset(m, 0, sizeof(*m));
	assert_int_equal(alloc_new(base, size, BLK, ALIGN, &m->a), 0);
	m->base = base;
	m->size = size;
	m->nblocks = size / BLK;
	m->owned = calloc(m->nblocks, 1);
	assert_non_null(m->owned);
}

static void model_fini(struct model *m)
{
	alloc_destroy(m->a);
	free(m->owned);
}

static void mark_extent(struct model *m, uint64_t off, uint64_t len, uint8_t val)
{
	uint64_t b;

	assert_true(len > 0);
	assert_int_equal(off % BLK, 0);
	assert_int_equal(len % BLK, 0);
	assert_true(off >= m->base);
	assert_true(off + len <= m->base + m->size);
	for (b = (off - m->base) / BLK; b < (off - m->base + len) / BLK; b++) {
		/* Marking an owned block again is an overlap; the reverse a leak. */
		assert_int_not_equal(m->owned[b], val);
		m->owned[b] = val;
	}
	if (val)
		m->allocated += len;
	else
		m->allocated -= len;
}

static void mark_extents(struct model *m, const struct extent *v, uint32_t n, uint8_t val)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		mark_extent(m, v[i].off, v[i].len, val);
}

/* Adjacent extents of one list must have been merged. */
static void check_merged(const struct extent_list *l)
{
	uint32_t i;

	for (i = 1; i < l->n; i++)
		assert_int_not_equal(l->v[i - 1].off + l->v[i - 1].len, l->v[i].off);
}

/* Free ranges as the model sees them: maximal runs of unowned blocks. */
static void model_runs(const struct model *m, uint64_t *nruns, uint64_t *largest)
{
	uint64_t b, run = 0;

	*nruns = *largest = 0;
	for (b = 0; b <= m->nblocks; b++) {
		if (b < m->nblocks && !m->owned[b]) {
			if (!run++)
				(*nruns)++;
			continue;
		}
		if (run * BLK > *largest)
			*largest = run * BLK;
		run = 0;
	}
}

static void check_model(const struct model *m)
{
	uint64_t nruns, largest;

	assert_int_equal(alloc_capacity(m->a), m->size);
	assert_int_equal(alloc_free_bytes(m->a) + m->allocated, m->size);
	model_runs(m, &nruns, &largest);
	assert_int_equal(alloc_free_ranges(m->a), nruns);
	assert_int_equal(alloc_largest_free(m->a), largest);
}

/* Does some free run hold need bytes starting on an align boundary? */
static int model_aligned_fit(const struct model *m, uint64_t need)
{
	uint64_t b, start = 0, s, as;
	int in_run = 0;

	for (b = 0; b <= m->nblocks; b++) {
		if (b < m->nblocks && !m->owned[b]) {
			if (!in_run)
				start = b;
			in_run = 1;
			continue;
		}
		if (in_run) {
			s = m->base + start * BLK;
			as = (s + ALIGN - 1) & ~(ALIGN - 1);
			if (as + need <= m->base + b * BLK)
				return 1;
		}
		in_run = 0;
	}
	return 0;
}

static uint64_t round_blk(uint64_t x)
{
	return (x + BLK - 1) & ~(BLK - 1);
}

static struct extent *copy_extents(const struct extent_list *l)
{
	struct extent *v = calloc(l->n + 1, sizeof(*v));

	assert_non_null(v);
	if (l->n)
		memcpy(v, l->v, l->n * sizeof(*v));
	return v;
}

/* new must be old with the last extent possibly shortened or grown in place. */
static void check_prefix(const struct extent *old, uint32_t old_n,
			 const struct extent_list *l, uint32_t common)
{
	uint32_t i;

	assert_true(common <= old_n && common <= l->n);
	for (i = 0; i + 1 < common; i++) {
		assert_int_equal(l->v[i].off, old[i].off);
		assert_int_equal(l->v[i].len, old[i].len);
	}
	if (common)
		assert_int_equal(l->v[common - 1].off, old[common - 1].off);
}

struct stats {
	unsigned long ok, enospc, aligned, multi, trims, frees;
};

/* alloc_get with every outcome checked against the model. */
static int model_get(struct model *m, struct extent_list *l, uint64_t len,
		     struct stats *st)
{
	uint64_t need = round_blk(len), before = alloc_extent_list_bytes(l);
	uint64_t free0 = alloc_free_bytes(m->a), ranges0 = alloc_free_ranges(m->a);
	int want_aligned = l->n == 0 && need >= ALIGN && model_aligned_fit(m, need);
	struct extent *old = copy_extents(l);
	uint32_t old_n = l->n;
	int rc;

	rc = alloc_get(m->a, len, l);
	if (need <= free0) {
		/* No false ENOSPC, whatever the fragmentation. */
		assert_int_equal(rc, 0);
		assert_int_equal(alloc_extent_list_bytes(l), before + need);
		assert_int_equal(alloc_free_bytes(m->a), free0 - need);
		check_prefix(old, old_n, l, old_n);
		mark_extents(m, old, old_n, 0);
		mark_extents(m, l->v, l->n, 1);
		if (want_aligned) {
			assert_int_equal(l->n, 1);
			assert_int_equal(l->v[0].off % ALIGN, 0);
			st->aligned++;
		}
		if (l->n > old_n + 1)
			st->multi++;
		st->ok++;
	} else {
		assert_int_equal(rc, -ENOSPC);
		assert_int_equal(l->n, old_n);
		if (old_n)
			assert_memory_equal(l->v, old, old_n * sizeof(*old));
		assert_int_equal(alloc_free_bytes(m->a), free0);
		assert_int_equal(alloc_free_ranges(m->a), ranges0);
		st->enospc++;
	}
	check_merged(l);
	free(old);
	return rc;
}

static void model_trim(struct model *m, struct extent_list *l, uint64_t keep)
{
	uint64_t before = alloc_extent_list_bytes(l), kept = round_blk(keep), freed;
	struct extent *old = copy_extents(l);
	uint32_t old_n = l->n;

	if (kept > before)
		kept = before;
	freed = alloc_trim(m->a, l, keep);
	assert_int_equal(freed, before - kept);
	assert_int_equal(alloc_extent_list_bytes(l), kept);
	check_prefix(old, old_n, l, l->n);
	if (l->n)
		assert_true(l->v[l->n - 1].len <= old[l->n - 1].len);
	mark_extents(m, old, old_n, 0);
	mark_extents(m, l->v, l->n, 1);
	free(old);
}

static void model_free(struct model *m, struct extent_list *l)
{
	alloc_put_list(m->a, l);
	mark_extents(m, l->v, l->n, 0);
	alloc_extent_list_free(l);
}

static uint64_t random_len(void)
{
	switch (rnd() % 10) {
	case 0: case 1: case 2: case 3: case 4:
		return rnd_range(1, 64 * KiB);
	case 5: case 6: case 7:
		return rnd_range(64 * KiB, 2 * MiB);
	default:
		return rnd_range(2 * MiB, 24 * MiB);
	}
}

#define NHANDLES 64

static void run_random(uint64_t seed, uint64_t base, uint64_t size, unsigned int ops)
{
	struct extent_list h[NHANDLES];
	struct stats st = { 0 };
	struct model m;
	unsigned int op, i, r;

	rng_state = seed;
	memset(h, 0, sizeof(h));
	model_init(&m, base, size);
	for (op = 0; op < ops; op++) {
		i = rnd() % NHANDLES;
		r = rnd() % 100;
		if (r < 55 && (!h[i].n || r < 12)) {
			model_get(&m, &h[i], random_len(), &st);
		} else if (r < 70 && h[i].n) {
			model_trim(&m, &h[i], rnd() % (alloc_extent_list_bytes(&h[i]) + BLK));
			st.trims++;
		} else if (h[i].n) {
			model_free(&m, &h[i]);
			st.frees++;
		}
		check_model(&m);
	}
	for (i = 0; i < NHANDLES; i++)
		model_free(&m, &h[i]);
	check_model(&m);
	/* Everything back: one range again. */
	assert_int_equal(alloc_free_ranges(m.a), 1);
	assert_int_equal(alloc_largest_free(m.a), size);
	model_fini(&m);
	/* The sequence must have exercised every path it claims to test. */
	assert_true(st.ok > ops / 10);
	assert_true(st.enospc > 0);
	assert_true(st.aligned > 0);
	assert_true(st.multi > 0);
	assert_true(st.trims > 0);
}

static void test_random_sequences(void **state)
{
	static const uint64_t seeds[] = { 1, 0xdeadbeef, 0x9e3779b97f4a7c15ull, 77, 31337 };
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		/* Base off the align grid: alignment is of pool offsets. */
		run_random(seeds[i], 0, 64 * MiB, 8000);
		run_random(seeds[i] + 1, 1 * MiB + 64 * KiB, 64 * MiB - 4 * KiB, 4000);
	}
}

/*
 * 4 KiB chunks over the whole pool, every other one freed: 128 MiB free in
 * 32768 ranges of one block. 64 MiB must still be granted.
 */
static void test_no_false_enospc_fragmented(void **state)
{
	const uint64_t size = 256 * MiB, n = size / BLK;
	struct extent_list *chunks, big = { 0 }, rest = { 0 }, one = { 0 };
	struct stats st = { 0 };
	struct model m;
	uint64_t i;

	(void)state;
	chunks = calloc(n, sizeof(*chunks));
	assert_non_null(chunks);
	model_init(&m, 0, size);
	for (i = 0; i < n; i++) {
		assert_int_equal(alloc_get(m.a, BLK, &chunks[i]), 0);
		mark_extents(&m, chunks[i].v, chunks[i].n, 1);
	}
	assert_int_equal(alloc_free_bytes(m.a), 0);
	assert_int_equal(alloc_get(m.a, 1, &one), -ENOSPC);
	assert_int_equal(one.n, 0);
	for (i = 0; i < n; i += 2)
		model_free(&m, &chunks[i]);
	check_model(&m);
	assert_int_equal(alloc_free_ranges(m.a), n / 2);
	assert_int_equal(alloc_largest_free(m.a), BLK);

	assert_int_equal(model_get(&m, &big, 64 * MiB, &st), 0);
	assert_int_equal(big.n, 64 * MiB / BLK);
	check_model(&m);
	/* Exactly the rest of free space, then not a byte more. */
	assert_int_equal(model_get(&m, &rest, alloc_free_bytes(m.a), &st), 0);
	assert_int_equal(alloc_free_bytes(m.a), 0);
	assert_int_equal(model_get(&m, &one, 1, &st), -ENOSPC);
	check_model(&m);

	model_free(&m, &big);
	model_free(&m, &rest);
	for (i = 1; i < n; i += 2)
		model_free(&m, &chunks[i]);
	check_model(&m);
	assert_int_equal(alloc_free_ranges(m.a), 1);
	assert_int_equal(alloc_free_bytes(m.a), size);
	free(chunks);
	model_fini(&m);
}

/* Aligned 2 MiB blocks of the pool that are entirely free in the model. */
static uint64_t free_aligned_blocks(const struct model *m)
{
	uint64_t b, per = ALIGN / BLK, count = 0, run = 0;

	for (b = 0; b < m->nblocks; b++) {
		if ((m->base + b * BLK) % ALIGN == 0)
			run = 0;
		run = m->owned[b] ? 0 : run + 1;
		if (run == per)
			count++;
	}
	return count;
}

/* Large requests land on align boundaries; small ones pack and stay small. */
static void test_alignment_and_packing(void **state)
{
	struct extent_list big = { 0 }, small[256], big2 = { 0 };
	struct stats st = { 0 };
	uint64_t before, total = 0;
	struct model m;
	unsigned int i;

	(void)state;
	memset(small, 0, sizeof(small));
	/* Base 64 KiB past an align boundary so the first 2 MiB is partial. */
	model_init(&m, 64 * KiB, 128 * MiB);
	assert_int_equal(model_get(&m, &big, 32 * MiB, &st), 0);
	assert_int_equal(big.n, 1);
	assert_int_equal(big.v[0].off % ALIGN, 0);
	before = free_aligned_blocks(&m);
	for (i = 0; i < 256; i++) {
		assert_int_equal(model_get(&m, &small[i], (i % 4 + 1) * BLK - 100, &st), 0);
		assert_int_equal(small[i].n, 1);
		total += small[i].v[0].len;
	}
	/* 2.5 MiB of small pieces may cost at most that many aligned blocks + 1. */
	assert_true(before - free_aligned_blocks(&m) <= total / ALIGN + 1);
	check_model(&m);
	/* And a large request still gets one aligned extent. */
	assert_int_equal(model_get(&m, &big2, 64 * MiB + 1, &st), 0);
	assert_int_equal(big2.n, 1);
	assert_int_equal(big2.v[0].off % ALIGN, 0);
	assert_int_equal(big2.v[0].len, 64 * MiB + BLK);
	model_free(&m, &big);
	model_free(&m, &big2);
	for (i = 0; i < 256; i++)
		model_free(&m, &small[i]);
	check_model(&m);
	assert_int_equal(alloc_free_ranges(m.a), 1);
	model_fini(&m);
}

/* Whole pool allocated, then the given holes given back. */
static void punch_holes(struct model *m, struct extent_list *all,
			const struct extent *holes, unsigned int n)
{
	unsigned int i;

	assert_int_equal(alloc_get(m->a, m->size, all), 0);
	mark_extents(m, all->v, all->n, 1);
	for (i = 0; i < n; i++) {
		alloc_put(m->a, holes[i].off, holes[i].len);
		mark_extent(m, holes[i].off, holes[i].len, 0);
	}
	check_model(m);
}

static void test_small_prefers_small_holes(void **state)
{
	static const struct extent holes[] = {
		{ 10 * MiB, 2 * MiB }, { 22 * MiB - 8 * KiB, 8 * KiB },
	};
	struct extent_list all = { 0 }, l[4];
	struct stats st = { 0 };
	int i;
	struct model m;

	(void)state;
	memset(l, 0, sizeof(l));
	model_init(&m, 0, 64 * MiB);
	punch_holes(&m, &all, holes, 2);
	/* Best fit: the 8 KiB hole, twice, before the aligned 2 MiB hole. */
	assert_int_equal(model_get(&m, &l[0], 4 * KiB, &st), 0);
	assert_int_equal(l[0].v[0].off, 22 * MiB - 8 * KiB);
	assert_int_equal(model_get(&m, &l[1], 4 * KiB, &st), 0);
	assert_int_equal(l[1].v[0].off, 22 * MiB - 4 * KiB);
	assert_int_equal(model_get(&m, &l[2], 12 * KiB, &st), 0);
	assert_int_equal(l[2].n, 1);
	assert_true(l[2].v[0].off >= 10 * MiB && l[2].v[0].off < 12 * MiB);
	assert_int_equal(alloc_largest_free(m.a), 2 * MiB - 12 * KiB);
	assert_int_equal(model_get(&m, &l[3], 2 * MiB, &st), -ENOSPC);
	check_model(&m);
	alloc_extent_list_free(&all);
	for (i = 0; i < 4; i++)
		alloc_extent_list_free(&l[i]);
	model_fini(&m);
}

/* Small pieces use a big range's unaligned head and tail before its blocks. */
static void test_small_uses_slack_first(void **state)
{
	static const struct extent hole = { 2 * MiB - 8 * KiB, 6 * MiB + 72 * KiB };
	struct extent_list all = { 0 }, l[6];
	struct stats st = { 0 };
	struct model m;
	int i;

	(void)state;
	memset(l, 0, sizeof(l));
	model_init(&m, 0, 64 * MiB);
	punch_holes(&m, &all, &hole, 1);
	assert_int_equal(free_aligned_blocks(&m), 3);
	/* 16 KiB does not fit the 8 KiB head, so the end of the 64 KiB tail. */
	assert_int_equal(model_get(&m, &l[0], 16 * KiB, &st), 0);
	assert_int_equal(l[0].v[0].off, 8 * MiB + 48 * KiB);
	assert_int_equal(alloc_free_ranges(m.a), 1);
	assert_int_equal(model_get(&m, &l[1], 8 * KiB, &st), 0);
	assert_int_equal(l[1].v[0].off, 2 * MiB - 8 * KiB);
	for (i = 2; i < 5; i++)
		assert_int_equal(model_get(&m, &l[i], 16 * KiB, &st), 0);
	assert_int_equal(free_aligned_blocks(&m), 3);
	/* Slack used up: break the last aligned block, from its end. */
	assert_int_equal(model_get(&m, &l[5], 16 * KiB, &st), 0);
	assert_int_equal(l[5].v[0].off, 8 * MiB - 16 * KiB);
	assert_int_equal(free_aligned_blocks(&m), 2);
	check_model(&m);
	alloc_extent_list_free(&all);
	for (i = 0; i < 6; i++)
		alloc_extent_list_free(&l[i]);
	model_fini(&m);
}

static void test_large_prefers_aligned(void **state)
{
	static const struct extent holes[] = {
		{ 1 * MiB, 4 * MiB }, { 8 * MiB, 4 * MiB }, { 20 * MiB, 20 * MiB },
	};
	struct extent_list all = { 0 }, l[3];
	struct stats st = { 0 };
	int i;
	struct model m;

	(void)state;
	memset(l, 0, sizeof(l));
	model_init(&m, 0, 64 * MiB);
	punch_holes(&m, &all, holes, 3);
	/* The unaligned exact fit loses to the aligned exact fit. */
	assert_int_equal(model_get(&m, &l[0], 4 * MiB, &st), 0);
	assert_int_equal(l[0].n, 1);
	assert_int_equal(l[0].v[0].off, 8 * MiB);
	/* Then to the big range, aligned, rather than the unaligned 4 MiB. */
	assert_int_equal(model_get(&m, &l[1], 4 * MiB, &st), 0);
	assert_int_equal(l[1].n, 1);
	assert_int_equal(l[1].v[0].off % ALIGN, 0);
	assert_true(l[1].v[0].off >= 20 * MiB);
	/* 3 MiB would fit the unaligned hole, but it is >= align: aligned. */
	assert_int_equal(model_get(&m, &l[2], 3 * MiB, &st), 0);
	assert_int_equal(l[2].v[0].off % ALIGN, 0);
	check_model(&m);
	alloc_extent_list_free(&all);
	for (i = 0; i < 3; i++)
		alloc_extent_list_free(&l[i]);
	model_fini(&m);
}

/* No single range fits: aligned 2 MiB pieces come first, one per hole. */
static void test_large_fragmented_takes_aligned_pieces(void **state)
{
	struct extent holes[8];
	struct extent_list all = { 0 }, l = { 0 };
	struct stats st = { 0 };
	struct model m;
	unsigned int i;

	(void)state;
	for (i = 0; i < 8; i++) {
		holes[i].off = i * 8 * MiB + 1 * MiB;
		holes[i].len = 4 * MiB;
	}
	model_init(&m, 0, 64 * MiB);
	punch_holes(&m, &all, holes, 8);
	assert_int_equal(model_get(&m, &l, 8 * MiB, &st), 0);
	assert_int_equal(l.n, 4);
	for (i = 0; i < l.n; i++) {
		assert_int_equal(l.v[i].off % ALIGN, 0);
		assert_int_equal(l.v[i].len, ALIGN);
	}
	/* Each hole was split around its aligned middle. */
	assert_int_equal(alloc_free_ranges(m.a), 4 * 2 + 4);
	check_model(&m);
	alloc_extent_list_free(&all);
	alloc_extent_list_free(&l);
	model_fini(&m);
}

static void test_trim_and_merge(void **state)
{
	struct extent_list l = { 0 };
	struct stats st = { 0 };
	struct model m;

	(void)state;
	model_init(&m, 0, 64 * MiB);
	/* Growing a list in place: contiguous pieces merge into one extent. */
	assert_int_equal(model_get(&m, &l, 4 * MiB, &st), 0);
	assert_int_equal(model_get(&m, &l, 4 * MiB, &st), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.v[0].len, 8 * MiB);
	/* keep rounds up to a block; keep >= size frees nothing. */
	assert_int_equal(alloc_trim(m.a, &l, 16 * MiB), 0);
	model_trim(&m, &l, 5 * MiB + 1);
	assert_int_equal(alloc_extent_list_bytes(&l), 5 * MiB + BLK);
	model_trim(&m, &l, 0);
	assert_int_equal(l.n, 0);
	check_model(&m);
	assert_int_equal(alloc_free_ranges(m.a), 1);
	alloc_extent_list_free(&l);
	model_fini(&m);
}

static void test_invalid_arguments(void **state)
{
	struct extent_list l = { 0 };
	struct alloc *a = NULL;
	uint64_t free0, ranges0;

	(void)state;
	assert_int_equal(alloc_new(0, 64 * MiB, 2048, ALIGN, &a), -EINVAL);
	assert_int_equal(alloc_new(0, 64 * MiB, 12288, 3 * 12288 * 4, &a), -EINVAL);
	assert_int_equal(alloc_new(0, 64 * MiB, BLK, BLK / 2, &a), -EINVAL);
	assert_int_equal(alloc_new(0, 64 * MiB, BLK, 3 * MiB, &a), -EINVAL);
	assert_int_equal(alloc_new(100, 64 * MiB, BLK, ALIGN, &a), -EINVAL);
	assert_int_equal(alloc_new(0, 64 * MiB + 1, BLK, ALIGN, &a), -EINVAL);
	assert_int_equal(alloc_new(0, 0, BLK, ALIGN, &a), -EINVAL);
	assert_int_equal(alloc_new(UINT64_MAX - BLK + 1, 2 * BLK, BLK, BLK, &a), -EINVAL);
	assert_int_equal(alloc_new(0, 64 * MiB, BLK, ALIGN, NULL), -EINVAL);
	assert_null(a);

	assert_int_equal(alloc_new(8 * MiB, 64 * MiB, BLK, ALIGN, &a), 0);
	assert_int_equal(alloc_block(a), BLK);
	assert_int_equal(alloc_get(a, 1, NULL), -EINVAL);
	assert_int_equal(alloc_get(a, 0, &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(alloc_get(a, 64 * MiB + 1, &l), -ENOSPC);
	assert_int_equal(alloc_get(a, UINT64_MAX, &l), -ENOSPC);
	assert_int_equal(l.n, 0);
	assert_int_equal(alloc_get(a, 64 * MiB, &l), 0);
	assert_int_equal(alloc_free_bytes(a), 0);
	alloc_put(a, 8 * MiB, 1 * MiB);
	free0 = alloc_free_bytes(a);
	ranges0 = alloc_free_ranges(a);
	/* Refused puts change nothing: unaligned, outside, empty, double. */
	alloc_put(a, 9 * MiB + 1, BLK);
	alloc_put(a, 9 * MiB, BLK + 1);
	alloc_put(a, 0, BLK);
	alloc_put(a, 72 * MiB, BLK);
	alloc_put(a, 72 * MiB - BLK, 2 * BLK);
	alloc_put(a, 9 * MiB, 0);
	alloc_put(a, 8 * MiB, BLK);
	alloc_put(a, 9 * MiB - BLK, 2 * BLK);
	alloc_put(a, 7 * MiB, 4 * MiB);
	assert_int_equal(alloc_free_bytes(a), free0);
	assert_int_equal(alloc_free_ranges(a), ranges0);
	alloc_extent_list_free(&l);
	alloc_destroy(a);
	alloc_destroy(NULL);
}

/*
 * Fail each malloc/realloc of a many-extent allocation in turn: every
 * failure must leave the allocator and the list exactly as they were.
 */
static void test_enomem_rolls_back(void **state)
{
	struct extent holes[32];
	struct extent_list all = { 0 }, l = { 0 };
	struct extent first;
	uint64_t free0, ranges0, largest0;
	struct model m;
	unsigned long k;
	unsigned int i;
	int rc = -ENOMEM;

	(void)state;
	if (!injection_works())
		skip();
	for (i = 0; i < 32; i++) {
		holes[i].off = i * 8 * MiB + BLK;
		holes[i].len = 8 * MiB - 2 * BLK;
	}
	model_init(&m, 0, 256 * MiB);
	punch_holes(&m, &all, holes, 32);
	/* A list with one extent already, so rollback of a merge is covered. */
	alloc_put(m.a, 8 * MiB - BLK, BLK);
	mark_extent(&m, 8 * MiB - BLK, BLK, 0);
	assert_int_equal(alloc_get(m.a, BLK, &l), 0);
	mark_extents(&m, l.v, l.n, 1);
	first = l.v[0];
	free0 = alloc_free_bytes(m.a);
	ranges0 = alloc_free_ranges(m.a);
	largest0 = alloc_largest_free(m.a);
	fail_injected = 0;
	for (k = 1; rc == -ENOMEM; k++) {
		fail_countdown = k;
		rc = alloc_get(m.a, 100 * MiB, &l);
		fail_countdown = 0;
		if (rc == 0)
			break;
		assert_int_equal(rc, -ENOMEM);
		assert_int_equal(l.n, 1);
		assert_memory_equal(&l.v[0], &first, sizeof(first));
		assert_int_equal(alloc_free_bytes(m.a), free0);
		assert_int_equal(alloc_free_ranges(m.a), ranges0);
		assert_int_equal(alloc_largest_free(m.a), largest0);
		check_model(&m);
	}
	assert_int_equal(rc, 0);
	/*
	 * 25 splits and list growths; nodes parked by each rollback serve the
	 * next attempt, so fewer distinct points fail than there are mallocs.
	 */
	assert_true(fail_injected > 5);
	mark_extent(&m, first.off, first.len, 0);
	mark_extents(&m, l.v, l.n, 1);
	assert_int_equal(alloc_extent_list_bytes(&l), 100 * MiB + BLK);
	check_model(&m);
	alloc_extent_list_free(&all);
	alloc_extent_list_free(&l);
	model_fini(&m);
}

/* The same for alloc_grow, whose shaped passes and fallback all roll back. */
static void test_grow_enomem_rolls_back(void **state)
{
	struct extent holes[32];
	struct extent_list all = { 0 }, l = { 0 };
	uint64_t free0, ranges0;
	struct extent first;
	struct model m;
	unsigned long k;
	unsigned int i;
	int rc = -ENOMEM;

	(void)state;
	if (!injection_works())
		skip();
	for (i = 0; i < 32; i++) {
		holes[i].off = i * 8 * MiB + BLK;
		holes[i].len = 8 * MiB - 2 * BLK;
	}
	model_init(&m, 0, 256 * MiB);
	punch_holes(&m, &all, holes, 32);
	alloc_put(m.a, 8 * MiB - BLK, BLK);
	mark_extent(&m, 8 * MiB - BLK, BLK, 0);
	assert_int_equal(alloc_grow(m.a, BLK, &l), 0);
	mark_extents(&m, l.v, l.n, 1);
	first = l.v[0];
	free0 = alloc_free_bytes(m.a);
	ranges0 = alloc_free_ranges(m.a);
	fail_injected = 0;
	for (k = 1; rc == -ENOMEM; k++) {
		fail_countdown = k;
		rc = alloc_grow(m.a, 100 * MiB, &l);
		fail_countdown = 0;
		if (rc == 0)
			break;
		assert_int_equal(rc, -ENOMEM);
		assert_int_equal(l.n, 1);
		assert_memory_equal(&l.v[0], &first, sizeof(first));
		assert_int_equal(alloc_free_bytes(m.a), free0);
		assert_int_equal(alloc_free_ranges(m.a), ranges0);
		check_model(&m);
	}
	assert_int_equal(rc, 0);
	assert_true(fail_injected > 5);
	mark_extent(&m, first.off, first.len, 0);
	mark_extents(&m, l.v, l.n, 1);
	assert_true(alloc_extent_list_bytes(&l) >= 100 * MiB + BLK);
	check_model(&m);
	alloc_extent_list_free(&all);
	alloc_extent_list_free(&l);
	model_fini(&m);
}

/* 1M small allocations, then frees in random order: must stay O(log n). */
static void test_scale_million(void **state)
{
	const uint32_t n = 1000000;
	struct extent_list l = { 0 };
	struct extent *v, t;
	struct alloc *a;
	uint64_t used = 0;
	uint32_t i, j, got = 0;

	(void)state;
	rng_state = 4242;
	v = calloc(n * 2, sizeof(*v));
	assert_non_null(v);
	assert_int_equal(alloc_new(0, 16 * GiB, BLK, ALIGN, &a), 0);
	for (i = 0; i < n; i++) {
		l.n = 0;
		assert_int_equal(alloc_get(a, rnd_range(1, 4) * BLK, &l), 0);
		for (j = 0; j < l.n; j++) {
			v[got++] = l.v[j];
			used += l.v[j].len;
		}
		/* Churn: free a random earlier piece now and then. */
		if (i % 4 == 3) {
			j = (uint32_t)(rnd() % got);
			alloc_put(a, v[j].off, v[j].len);
			used -= v[j].len;
			v[j] = v[--got];
		}
	}
	assert_int_equal(alloc_free_bytes(a), 16 * GiB - used);
	for (i = got; i > 1; i--) {
		j = (uint32_t)(rnd() % i);
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
	for (i = 0; i < got; i++)
		alloc_put(a, v[i].off, v[i].len);
	assert_int_equal(alloc_free_bytes(a), 16 * GiB);
	assert_int_equal(alloc_free_ranges(a), 1);
	alloc_extent_list_free(&l);
	alloc_destroy(a);
	free(v);
}

/* File offsets map through the list in order, piece by piece. */
static void test_extent_list_at(void **state)
{
	struct extent v[] = { { 8192, 4096 }, { 65536, 8192 }, { 4096, 4096 } };
	struct extent_list l = { .v = v, .n = 3, .cap = 3 };
	uint64_t at = 0;

	(void)state;
	assert_int_equal(alloc_extent_list_at(&l, 0, &at), 4096);
	assert_int_equal(at, 8192);
	assert_int_equal(alloc_extent_list_at(&l, 4095, &at), 1);
	assert_int_equal(at, 8192 + 4095);
	assert_int_equal(alloc_extent_list_at(&l, 4096, &at), 8192);
	assert_int_equal(at, 65536);
	assert_int_equal(alloc_extent_list_at(&l, 12288 + 10, &at), 4096 - 10);
	assert_int_equal(at, 4096 + 10);
	assert_int_equal(alloc_extent_list_at(&l, 16384, &at), 0);	/* past the end */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_sequences),
		cmocka_unit_test(test_no_false_enospc_fragmented),
		cmocka_unit_test(test_alignment_and_packing),
		cmocka_unit_test(test_small_prefers_small_holes),
		cmocka_unit_test(test_small_uses_slack_first),
		cmocka_unit_test(test_large_prefers_aligned),
		cmocka_unit_test(test_large_fragmented_takes_aligned_pieces),
		cmocka_unit_test(test_trim_and_merge),
		cmocka_unit_test(test_invalid_arguments),
		cmocka_unit_test(test_enomem_rolls_back),
		cmocka_unit_test(test_grow_enomem_rolls_back),
		cmocka_unit_test(test_scale_million),
		cmocka_unit_test(test_extent_list_at),
	};

	return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
