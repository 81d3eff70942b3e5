/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/htab_test.c: the shared hash table (lib/common/
 * htab.c) against a model, with a deliberately poor hash so probe runs are
 * long and wrap around the end of the table, and with a good one: every
 * present item is found by a probe (in either array while a doubling is
 * under way), deleted ones are gone, replaced ones answer as the new item,
 * a walk sees each item once, the count matches, the table doubles at 3/4
 * load, and no call moves more than HTAB_STEP items between the arrays
 * (the incremental rehash: counted, never timed), or all at once in a bulk
 * table; and htab_find/htab_clear/htab_sweep.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hash.h"
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
	return (uint32_t)hash_mix64(key_of(it));
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
static void run_model(htab_hash_fn fn, uint64_t seed, int steps, int every,
		      enum htab_grow grow)
{
	static uint8_t in[N + 1];
	uint64_t count = 0, x = seed, migrating = 0, moved;
	struct htab t;
	int step;

	memset(in, 0, sizeof(in));
	assert_int_equal(htab_init(&t, 16, fn, grow), 0);
	for (step = 0; step < steps; step++) {
		moved = model_step(&t, in, &count, &x);
		assert_true(grow == HTAB_BULK || moved <= HTAB_STEP);
		migrating += htab_migrating(&t);
		if (step % (every * 16) == 0 || (htab_migrating(&t) && step % every == 0))
			check_model(&t, in, count);
	}
	check_model(&t, in, count);
	/* The model did run during incremental doublings; bulk ones never last. */
	if (grow == HTAB_BULK)
		assert_int_equal(migrating, 0);
	else
		assert_true(migrating > 0);
	htab_fini(&t);
}

static void test_model(void **state)
{
	run_model(bad_hash, 88172645463325252ull, 20000, 61, HTAB_INCREMENTAL);
	run_model(good_hash, 88172645463325252ull, 40000, 3, HTAB_INCREMENTAL);
	run_model(good_hash, 0x9e3779b97f4a7c15ull, 40000, 1, HTAB_INCREMENTAL);
	run_model(bad_hash, 88172645463325252ull, 20000, 61, HTAB_BULK);
	run_model(good_hash, 0x9e3779b97f4a7c15ull, 40000, 3, HTAB_BULK);
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

	assert_int_equal(htab_init(&t, 1u << 14, good_hash, HTAB_INCREMENTAL), 0);
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
	assert_int_not_equal(hash_mix64(1), hash_mix64(2));
	assert_int_equal(htab_init(&t, 4, bad_hash, HTAB_INCREMENTAL), 0);
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

/* The pointer items of fs/ and daemon/: a struct found by its key. */
struct obj {
	uint64_t key;
	int val;
};

static uint32_t obj_hash(uintptr_t it)
{
	return (uint32_t)hash_mix64(((const struct obj *)it)->key);
}

static int obj_is(uintptr_t it, const void *key)
{
	return ((const struct obj *)it)->key == *(const uint64_t *)key;
}

static struct obj *obj_find(const struct htab *t, uint64_t key)
{
	return (struct obj *)htab_find(t, (uint32_t)hash_mix64(key), obj_is, &key);
}

/*
 * htab_find() runs the owner's compare past fingerprint collisions (a
 * poor hash makes every key collide), misses cleanly, and finds items in
 * the old array while a doubling is under way.
 */
static void test_find(void **state)
{
	static struct obj o[300];
	struct htab t;
	uint64_t k;

	assert_int_equal(htab_init(&t, 4, obj_hash, HTAB_INCREMENTAL), 0);
	for (k = 0; k < 300; k++) {
		o[k] = (struct obj){ k * 1000 + 7, (int)k };
		assert_int_equal(htab_reserve(&t), 0);
		htab_place(&t, (uintptr_t)&o[k], obj_hash((uintptr_t)&o[k]));
		assert_ptr_equal(obj_find(&t, k * 1000 + 7), &o[k]);
	}
	assert_true(htab_migrating(&t) || t.cur.mask + 1 == 512);
	for (k = 0; k < 300; k++) {
		assert_ptr_equal(obj_find(&t, k * 1000 + 7), &o[k]);
		assert_null(obj_find(&t, k * 1000 + 8));
	}
	htab_del(&t, (uintptr_t)&o[5]);
	assert_null(obj_find(&t, 5007));
	assert_ptr_equal(obj_find(&t, 6007), &o[6]);
	htab_fini(&t);
}

/*
 * A bulk table moves every item in the reserve that doubles it: it is
 * never left migrating, and each doubling moved exactly the items it had.
 */
static void test_bulk(void **state)
{
	uint64_t k, expect = 0;
	struct htab t;

	assert_int_equal(htab_init(&t, 16, good_hash, HTAB_BULK), 0);
	for (k = 1; k <= 100000; k++) {
		if ((t.count + 1) * 4 > (t.cur.mask + 1) * 3)
			expect += t.count;
		assert_int_equal(htab_reserve(&t), 0);
		assert_false(htab_migrating(&t));
		assert_int_equal(t.moved, expect);
		htab_place(&t, k * 2, good_hash(k * 2));
	}
	assert_int_equal(t.cur.mask + 1, 1u << 18);	/* 100000 under 3/4 */
	for (k = 1; k <= 100000; k++)
		assert_true(probe_finds(&t, k * 2));
	htab_fini(&t);
}

/* Every key hashes alike: the compare alone tells them apart. */
static uint32_t same_hash(uintptr_t it)
{
	return 42;
}

static int key_is(uintptr_t it, const void *key)
{
	return it == *(const uintptr_t *)key;
}

static void test_find_collisions(void **state)
{
	struct htab t;
	uintptr_t k;

	assert_int_equal(htab_init(&t, 64, same_hash, HTAB_BULK), 0);
	for (k = 1; k <= 40; k++) {
		assert_int_equal(htab_reserve(&t), 0);
		htab_place(&t, k * 8, 42);
	}
	for (k = 1; k <= 40; k++)
		assert_int_equal(htab_find(&t, 42, key_is, &(uintptr_t){ k * 8 }), k * 8);
	assert_int_equal(htab_find(&t, 42, key_is, &(uintptr_t){ 41 * 8 }), 0);
	htab_fini(&t);
}

/* htab_clear() forgets every item, also mid-doubling, and the table works on. */
static void test_clear(void **state)
{
	uint64_t pos = 0;
	struct htab t;
	uintptr_t k;

	assert_int_equal(htab_init(&t, 16, good_hash, HTAB_INCREMENTAL), 0);
	for (k = 1; k <= 13; k++) {
		assert_int_equal(htab_reserve(&t), 0);
		htab_place(&t, k * 2, good_hash(k * 2));
	}
	assert_true(htab_migrating(&t));	/* the 13th doubled it */
	htab_clear(&t);
	assert_false(htab_migrating(&t));
	assert_int_equal(t.count, 0);
	assert_int_equal(htab_walk(&t, &pos), 0);
	assert_false(probe_finds(&t, 2));
	assert_int_equal(htab_reserve(&t), 0);
	htab_place(&t, 6, good_hash(6));
	assert_true(probe_finds(&t, 6));
	assert_int_equal(t.count, 1);
	htab_fini(&t);
}

/*
 * htab_sweep() looks at no more slots than its budget, wraps around, and
 * lets the owner delete what it returns (dcache.c's pruning): sweeping with
 * deletes, in small budgets, empties the table.
 */
static void test_sweep(void **state)
{
	uint64_t pos = 0, budget, rounds = 0, seen = 0;
	struct htab t;
	uintptr_t k, it;

	assert_int_equal(htab_init(&t, 64, good_hash, HTAB_BULK), 0);
	budget = 1000;
	assert_int_equal(htab_sweep(&t, &pos, &budget), 0);	/* empty: spends it */
	assert_int_equal(budget, 0);
	for (k = 1; k <= 40; k++) {
		assert_int_equal(htab_reserve(&t), 0);
		htab_place(&t, k * 2, good_hash(k * 2));
	}
	budget = 64;	/* every slot once: every item once */
	pos = 0;
	while ((it = htab_sweep(&t, &pos, &budget)))
		seen++;
	assert_int_equal(seen, 40);
	assert_int_equal(pos, 64);
	while (t.count && rounds++ < 1000) {
		budget = 4;
		while ((it = htab_sweep(&t, &pos, &budget)))
			htab_del(&t, it);
		assert_true(budget == 0);
	}
	assert_int_equal(t.count, 0);
	htab_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_moves_bounded),
		cmocka_unit_test(test_grow_and_fp),
		cmocka_unit_test(test_bulk),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_find_collisions),
		cmocka_unit_test(test_clear),
		cmocka_unit_test(test_sweep),
	};

	return cmocka_run_group_tests_name("htab", tests, NULL, NULL);
}
