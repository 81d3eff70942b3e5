/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/htab_test.c: the generic hash table (daemon/dir/
 * htab.c) against a model, with a deliberately poor hash so probe runs are
 * long and wrap around the end of the table: every present item is found
 * from its home without crossing an empty slot, deleted ones are gone, the
 * count matches, and the table doubles at 3/4 load.
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

/* Items are even numbers; hash them into few buckets, most near the end. */
static uint32_t bad_hash(uintptr_t it)
{
	return (uint32_t)(0xfffffff0u + (it / 2) % 13);
}

/* Is item findable the way the directory's lookups probe? */
static int probe_finds(const struct htab *t, uintptr_t item)
{
	uint32_t h = t->hash(item);
	uint16_t f = htab_fp(h);
	uint64_t i;

	for (i = htab_home(t, h); t->fp[i]; i = htab_next(t, i))
		if (t->fp[i] == f && t->slot[i] == item)
			return 1;
	return 0;
}

static void check_model(const struct htab *t, const uint8_t *in, uint64_t count)
{
	uintptr_t k;

	assert_int_equal(t->count, count);
	for (k = 1; k <= N; k++)
		assert_int_equal(probe_finds(t, k * 2), in[k]);
}

static void test_model(void **state)
{
	static uint8_t in[N + 1];
	uint64_t count = 0, x = 88172645463325252ull;
	struct htab t;
	int step;

	assert_int_equal(htab_init(&t, 16, bad_hash), 0);
	for (step = 0; step < 20000; step++) {
		uintptr_t k;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		k = 1 + x % N;
		if (in[k]) {
			assert_int_equal(t.slot[htab_slot_of(&t, k * 2)], k * 2);
			htab_del(&t, k * 2);
			in[k] = 0;
			count--;
		} else {
			assert_int_equal(htab_reserve(&t), 0);
			htab_place(&t, k * 2, bad_hash(k * 2));
			in[k] = 1;
			count++;
		}
		/* Never over 3/4 full. */
		assert_true(t.count * 4 <= (t.mask + 1) * 3);
		if (step % 997 == 0)
			check_model(&t, in, count);
	}
	check_model(&t, in, count);
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
	assert_int_equal(t.mask + 1, 4);	/* 3 of 4: still fits */
	assert_int_equal(htab_reserve(&t), 0);
	assert_int_equal(t.mask + 1, 8);	/* the 4th doubles it */
	for (k = 1; k <= 3; k++)
		assert_true(probe_finds(&t, k * 2));
	htab_fini(&t);
	assert_null(t.slot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_grow_and_fp),
	};

	return cmocka_run_group_tests_name("htab", tests, NULL, NULL);
}
