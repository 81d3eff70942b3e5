/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/htab_test.c: the generic hash table (daemon/dir/
 * htab.c) against a model, with a deliberately poor hash so probe runs are
 * long and wrap around the end of the table, and with a good one: every
 * present item is found by a probe (in either array while a doubling is
 * under way), deleted ones are gone, replaced ones answer as the new item,
 * a walk sees each item once, the count matches, the table doubles at 3/4
 * load, and no call moves more than HTAB_STEP items between the arrays
 * (the incremental rehash: counted, never timed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "htab.h"

#define N 5000
/* Item 2k and its alias 2(k + ALIAS) hash alike (htab_replace swaps them). */
#define ALIAS 13000000u

static uintptr_t key_of(uintptr_t it)
{
	return (it / 2) % ALIAS;
}

/* Hash keys into few buckets, most near the end. */
static uint32_t bad_hash(uintptr_t it)
{
	return (uint32_t)(0xfffffff0u + key_of(it) % 13);
}

static uint32_t good_hash(uintptr_t it)
{
	return (uint32_t)htab_mix64(key_of(it));
}

/* Is item findable the way the directory's lookups probe? */
static int probe_finds(const struct htab *t, uintptr_t item)
{
	struct htab_probe p;
	uintptr_t it;

	for (it = htab_probe(t, t->hash(item), &p); it; it = htab_more(&p))
		if (it == item)
			return 1;
	return 0;
}

/* in[k]: 0 absent, 1 present as 2k, 2 present as its alias. */
static uintptr_t item_of(uintptr_t k, uint8_t form)
{
	return form == 2 ? (k + ALIAS) * 2 : k * 2;
}

static void check_model(const struct htab *t, const uint8_t *in, uint64_t count)
{
	static uint8_t seen[N + 1];
	uint64_t pos = 0, walked = 0;
	uintptr_t k, it;

	assert_int_equal(t->count, count);
	for (k = 1; k <= N; k++) {
		assert_int_equal(probe_finds(t, item_of(k, 1)), in[k] == 1);
		assert_int_equal(probe_finds(t, item_of(k, 2)), in[k] == 2);
	}
	memset(seen, 0, sizeof(seen));
	while ((it = htab_walk(t, &pos))) {
		k = key_of(it);
		assert_true(k >= 1 && k <= N);
		assert_int_equal(it, item_of(k, in[k]));
		assert_int_equal(seen[k]++, 0);
		walked++;
	}
	assert_int_equal(walked, count);
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* One random operation on t and the model; returns items it moved. */
static uint64_t model_step(struct htab *t, uint8_t *in, uint64_t *count, uint64_t *x)
{
	uint64_t moved = t->moved;
	uintptr_t k = 1 + xorshift(x) % N;

	if (in[k] && xorshift(x) % 4 == 0) {
		htab_replace(t, item_of(k, in[k]), item_of(k, 3 - in[k]));
		in[k] = 3 - in[k];
	} else if (in[k]) {
		htab_del(t, item_of(k, in[k]));
		in[k] = 0;
		(*count)--;
	} else {
		assert_int_equal(htab_reserve(t), 0);
		htab_place(t, item_of(k, 1), t->hash(item_of(k, 1)));
		in[k] = 1;
		(*count)++;
	}
	/* Never over 3/4 full. */
	assert_true(t->count * 4 <= (t->cur.mask + 1) * 3);
	return t->moved - moved;
}

/* every: check the whole model every that many steps (a poor hash probes long) */
static void run_model(hkey_fn fn, uint64_t seed, int steps, int every)
{
	static uint8_t in[N + 1];
	uint64_t count = 0, x = seed, migrating = 0;
	struct htab t;
	int step;

	memset(in, 0, sizeof(in));
	assert_int_equal(htab_init(&t, 16, fn), 0);
	for (step = 0; step < steps; step++) {
		assert_true(model_step(&t, in, &count, &x) <= HTAB_STEP);
		migrating += htab_migrating(&t);
		if (step % (every * 16) == 0 || (htab_migrating(&t) && step % every == 0))
			check_model(&t, in, count);
	}
	check_model(&t, in, count);
	/* The model did run during doublings. */
	assert_true(migrating > 0);
	htab_fini(&t);
}

static void test_model(void **state)
{
	run_model(bad_hash, 88172645463325252ull, 20000, 61);
	run_model(good_hash, 88172645463325252ull, 40000, 3);
	run_model(good_hash, 0x9e3779b97f4a7c15ull, 40000, 1);
}

/*
 * The bound on one call's work: inserting 200,000 items through four
 * doublings, no htab_reserve() moves more than HTAB_STEP items, lookups and
 * deletes move none, every doubling finishes before the next one starts,
 * and every item was moved once per doubling it lived through.
 */
static void test_moves_bounded(void **state)
{
	uint64_t k, before, doublings = 0, per_doubling = 0;
	int was = 0;
	struct htab t;

	assert_int_equal(htab_init(&t, 1u << 14, good_hash), 0);
	for (k = 1; k <= 200000; k++) {
		before = t.moved;
		if (!was && t.count + 1 > (t.cur.mask + 1) / 4 * 3) {
			doublings++;
			per_doubling += t.count;
		}
		assert_int_equal(htab_reserve(&t), 0);
		assert_true(t.moved - before <= HTAB_STEP);
		was = htab_migrating(&t);
		htab_place(&t, k * 2, good_hash(k * 2));
		before = t.moved;
		assert_true(probe_finds(&t, k * 2));
		if (k % 3 == 0) {
			htab_del(&t, (k - 1) * 2);
			htab_reserve(&t);	/* room for the one re-placed */
			htab_place(&t, (k - 1) * 2, good_hash((k - 1) * 2));
		}
		assert_true(t.moved - before <= HTAB_STEP);
	}
	while (htab_migrating(&t))
		assert_int_equal(htab_reserve(&t), 0);
	assert_int_equal(doublings, 5);	/* 16k slots to 512k */
	assert_int_equal(t.moved, per_doubling);
	htab_fini(&t);
}

static void test_grow_and_fp(void **state)
{
	struct htab t;
	uintptr_t k;
	uint32_t h;

	for (h = 0; h < 1u << 20; h++)
		assert_int_not_equal(htab_fp(h * 2654435761u), 0);
	assert_int_not_equal(htab_mix64(1), htab_mix64(2));
	assert_int_equal(htab_init(&t, 4, bad_hash), 0);
	for (k = 1; k <= 3; k++) {
		assert_int_equal(htab_reserve(&t), 0);
		htab_place(&t, k * 2, bad_hash(k * 2));
	}
	assert_int_equal(t.cur.mask + 1, 4);	/* 3 of 4: still fits */
	assert_false(htab_migrating(&t));
	assert_int_equal(htab_reserve(&t), 0);
	assert_int_equal(t.cur.mask + 1, 8);	/* the 4th doubles it */
	assert_true(htab_migrating(&t));
	for (k = 1; k <= 3; k++)
		assert_true(probe_finds(&t, k * 2));
	assert_int_equal(htab_reserve(&t), 0);	/* 4 old slots: one step */
	assert_false(htab_migrating(&t));
	assert_int_equal(t.moved, 3);
	for (k = 1; k <= 3; k++)
		assert_true(probe_finds(&t, k * 2));
	htab_fini(&t);
	assert_null(t.cur.slot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_moves_bounded),
		cmocka_unit_test(test_grow_and_fp),
	};

	return cmocka_run_group_tests_name("htab", tests, NULL, NULL);
}
