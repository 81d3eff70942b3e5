/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/place_test.c: placement (lib/cluster/place.c), the
 * figures issue 24 asks of it: 10k names over 3 pools each within 15% of
 * its weighted share; a fourth pool joining takes about a quarter of them
 * and no name moves between the three that stay; a draining pool takes
 * none; each engine's temporary name lands on its final name's pool
 * (vLLM, SGLang's older form, LMCache), and SGLang's newest temporary name
 * is reported as saying nothing of its final one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "place.h"

#define NAMES 10000

static struct place_pool pools[4];

static void make_pools(const uint32_t *w, unsigned int n)
{
	uint8_t uuid[16];
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(uuid, 0, sizeof(uuid));
		uuid[0] = (uint8_t)(0x40 + i);
		uuid[15] = (uint8_t)(7 * i + 1);
		pools[i].seed = place_seed(uuid);
		pools[i].weight = (double)w[i];
	}
}

/* a vLLM-like final name: <hash hex>.bin */
static void final_name(unsigned int k, char *buf, size_t len)
{
	snprintf(buf, len, "%016llx%08x.bin", (unsigned long long)(k * 0x9e3779b97f4a7c15ull), k);
}

static int owner_of(const char *name, unsigned int n)
{
	return place_owner(pools, n, place_hash(42, name, strlen(name)));
}

static void spread(const uint32_t *w, unsigned int n)
{
	unsigned int count[4] = { 0 }, k, i, total = 0;
	char name[64];

	make_pools(w, n);
	for (i = 0; i < n; i++)
		total += w[i];
	for (k = 0; k < NAMES; k++) {
		final_name(k, name, sizeof(name));
		count[owner_of(name, n)]++;
	}
	for (i = 0; i < n; i++) {
		double share = (double)NAMES * w[i] / total;

		printf("# pool %u weight %u: %u names, %.1f%% of its share\n", i, w[i], count[i],
		       100.0 * count[i] / share);
		assert_true(count[i] > share * 0.85 && count[i] < share * 1.15);
	}
}

static void test_spread(void **state)
{
	static const uint32_t even[] = { 1, 1, 1 }, weighted[] = { 1, 2, 1 };

	spread(even, 3);
	spread(weighted, 3);
}

static void test_join_moves_a_quarter(void **state)
{
	static const uint32_t w[] = { 1, 1, 1, 1 };
	unsigned int k, moved = 0;
	int before, after;
	char name[64];

	make_pools(w, 4);
	for (k = 0; k < NAMES; k++) {
		final_name(k, name, sizeof(name));
		before = owner_of(name, 3);
		after = owner_of(name, 4);
		if (before != after) {
			assert_int_equal(after, 3);	/* only to the new pool */
			moved++;
		}
	}
	printf("# a fourth pool joining moved %u of %u names (%.1f%%)\n", moved, NAMES,
	       100.0 * moved / NAMES);
	assert_true(moved > NAMES * 0.20 && moved < NAMES * 0.30);
}

static void test_draining_takes_none(void **state)
{
	static const uint32_t w[] = { 1, 0, 1 };
	unsigned int k;
	char name[64];

	make_pools(w, 3);
	for (k = 0; k < 2000; k++) {
		final_name(k, name, sizeof(name));
		assert_int_not_equal(owner_of(name, 3), 1);
	}
	pools[0].weight = pools[2].weight = 0;
	assert_int_equal(place_owner(pools, 3, 1), -1);
}

static void test_engine_temp_names(void **state)
{
	static const uint32_t w[] = { 1, 1, 1 };
	char fin[64], tmp[160];
	unsigned int k;
	size_t klen;

	make_pools(w, 3);
	for (k = 0; k < NAMES; k++) {
		final_name(k, fin, sizeof(fin));
		/* vLLM */
		snprintf(tmp, sizeof(tmp), "%s_%08x.tmp", fin, k * 2654435761u);
		assert_int_equal(owner_of(tmp, 3), owner_of(fin, 3));
		/* SGLang, older */
		snprintf(tmp, sizeof(tmp), "%s.tmp.%u.%u.%08x-1111-4222-8333-%012x", fin, 4242 + k,
			 k % 32, k, k);
		assert_int_equal(owner_of(tmp, 3), owner_of(fin, 3));
		/* LMCache: <key>.data and <key>.data.tmp */
		snprintf(fin, sizeof(fin), "model@%u@0@abc%%%u.data", k, k);
		snprintf(tmp, sizeof(tmp), "%s.tmp", fin);
		assert_int_equal(owner_of(tmp, 3), owner_of(fin, 3));
	}
	/* SGLang, newest: nothing of the final name */
	assert_int_equal(place_key(".0123456789abcdef0123456789abcdef.tmp", 37, &klen),
			 PLACE_UNKNOWN);
	assert_int_equal(place_key(".01234567-89ab-cdef-0123-456789abcdef.tmp", 41, &klen),
			 PLACE_UNKNOWN);
	/* ordinary names are their own key */
	assert_int_equal(place_key("config.json", 11, &klen), PLACE_KEYED);
	assert_int_equal(klen, 11);
	assert_int_equal(place_key(".tmp", 4, &klen), PLACE_KEYED);
	assert_int_equal(klen, 4);
	assert_int_equal(place_key("a_b.tmp", 7, &klen), PLACE_KEYED);
	assert_int_equal(klen, 3);	/* no extension before the '_': LMCache's form */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_join_moves_a_quarter),
		cmocka_unit_test(test_draining_takes_none),
		cmocka_unit_test(test_engine_temp_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
