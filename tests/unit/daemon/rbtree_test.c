/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rbtree_test.c: the red-black tree against a sorted array.
 * Random inserts (with many duplicate keys) and erases; after every step the
 * red-black properties, parent links and in-order sequence are checked, and
 * find/lower/upper bound/floor/next/prev are compared with a linear scan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rbtree.h"

struct item {
	int key;
	unsigned int seq;	/* insertion order, to check tie placement */
	int in_tree;
	struct rb_node node;
};

#define NITEMS	1200
#define KEYS	300

static struct item items[NITEMS];
static struct item *ref[NITEMS];	/* in-tree items sorted by (key, seq) */
static unsigned int nref;
static unsigned int next_seq;
static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64*: deterministic per seed, no libc rand() state */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static int item_cmp(const struct rb_node *a, const struct rb_node *b)
{
	int ka = rb_entry(a, struct item, node)->key;
	int kb = rb_entry(b, struct item, node)->key;

	return (ka > kb) - (ka < kb);
}

static int key_cmp(const void *key, const struct rb_node *n)
{
	int k = *(const int *)key;
	int kn = rb_entry(n, struct item, node)->key;

	return (k > kn) - (k < kn);
}

static struct rb_node *node_parent(const struct rb_node *n)
{
	return (struct rb_node *)(n->parent_color & ~(uintptr_t)1);
}

static int node_black(const struct rb_node *n)
{
	return !n || (n->parent_color & 1);
}

/* Returns the black height of the subtree; fails the test on a violation. */
static int check_subtree(const struct rb_node *n, const struct rb_node *parent,
			 unsigned int *count)
{
	int lh, rh;

	if (!n)
		return 1;
	assert_ptr_equal(node_parent(n), parent);
	if (!node_black(n)) {
		assert_true(node_black(n->left));
		assert_true(node_black(n->right));
	}
	lh = check_subtree(n->left, n, count);
	rh = check_subtree(n->right, n, count);
	assert_int_equal(lh, rh);
	(*count)++;
	return lh + node_black(n);
}

static void check_tree(const struct rb_root *root)
{
	unsigned int count = 0, i = 0;
	struct rb_node *n;

	if (root->node)
		assert_true(node_black(root->node));
	check_subtree(root->node, NULL, &count);
	assert_int_equal(count, nref);
	for (n = rb_first(root); n; n = rb_next(n), i++)
		assert_ptr_equal(rb_entry(n, struct item, node), ref[i]);
	assert_int_equal(i, nref);
	for (n = rb_last(root); n; n = rb_prev(n))
		assert_ptr_equal(rb_entry(n, struct item, node), ref[--i]);
	assert_int_equal(i, 0);
}

static void ref_insert(struct item *it)
{
	unsigned int pos = nref;

	/* Equal keys go after existing ones: insert after the last <= key. */
	while (pos > 0 && ref[pos - 1]->key > it->key) {
		ref[pos] = ref[pos - 1];
		pos--;
	}
	ref[pos] = it;
	nref++;
}

static void ref_erase(struct item *it)
{
	unsigned int i;

	for (i = 0; i < nref && ref[i] != it; i++)
		;
	assert_true(i < nref);
	memmove(&ref[i], &ref[i + 1], (nref - i - 1) * sizeof(ref[0]));
	nref--;
}

static struct item *nth_entry(struct rb_node *n)
{
	return n ? rb_entry(n, struct item, node) : NULL;
}

static void check_queries(const struct rb_root *root)
{
	struct item *lb, *ub, *fl, *found;
	unsigned int i;
	int q;

	for (q = -1; q <= KEYS; q++) {
		lb = ub = fl = found = NULL;
		for (i = 0; i < nref; i++) {
			if (!lb && ref[i]->key >= q)
				lb = ref[i];
			if (!ub && ref[i]->key > q)
				ub = ref[i];
			if (ref[i]->key <= q)
				fl = ref[i];
			if (ref[i]->key == q)
				found = ref[i];
		}
		assert_ptr_equal(nth_entry(rb_lower_bound(root, &q, key_cmp)), lb);
		assert_ptr_equal(nth_entry(rb_upper_bound(root, &q, key_cmp)), ub);
		assert_ptr_equal(nth_entry(rb_floor(root, &q, key_cmp)), fl);
		if (found)
			assert_int_equal(nth_entry(rb_find(root, &q, key_cmp))->key, q);
		else
			assert_null(rb_find(root, &q, key_cmp));
	}
}

static void reset(uint64_t seed)
{
	memset(items, 0, sizeof(items));
	nref = 0;
	next_seq = 0;
	rng_state = seed;
}

static void do_insert(struct rb_root *root, struct item *it, int key)
{
	it->key = key;
	it->seq = next_seq++;
	it->in_tree = 1;
	rb_insert(root, &it->node, item_cmp);
	ref_insert(it);
}

static void do_erase(struct rb_root *root, struct item *it)
{
	rb_erase(root, &it->node);
	it->in_tree = 0;
	ref_erase(it);
}

static void run_random(uint64_t seed, unsigned int ops, unsigned int query_every)
{
	struct rb_root root = RB_ROOT_INIT;
	struct item *it;
	unsigned int op;

	reset(seed);
	for (op = 0; op < ops; op++) {
		it = &items[rnd() % NITEMS];
		/* Bias towards growth early, towards shrinking late. */
		if (!it->in_tree && (rnd() % ops) >= op / 2)
			do_insert(&root, it, (int)(rnd() % KEYS));
		else if (it->in_tree)
			do_erase(&root, it);
		check_tree(&root);
		if (op % query_every == 0)
			check_queries(&root);
	}
	while (nref) {
		do_erase(&root, ref[rnd() % nref]);
		check_tree(&root);
	}
	assert_true(rb_empty(&root));
}

static void test_empty(void **state)
{
	struct rb_root root = RB_ROOT_INIT;
	int q = 5;

	(void)state;
	assert_true(rb_empty(&root));
	assert_null(rb_first(&root));
	assert_null(rb_last(&root));
	assert_null(rb_find(&root, &q, key_cmp));
	assert_null(rb_lower_bound(&root, &q, key_cmp));
	assert_null(rb_upper_bound(&root, &q, key_cmp));
	assert_null(rb_floor(&root, &q, key_cmp));
}

static void test_sequential(void **state)
{
	struct rb_root root = RB_ROOT_INIT;
	int i;

	(void)state;
	reset(1);
	/* Ascending then descending inserts are the classic worst cases. */
	for (i = 0; i < NITEMS / 2; i++) {
		do_insert(&root, &items[i], i);
		check_tree(&root);
	}
	for (i = NITEMS / 2; i < NITEMS; i++) {
		do_insert(&root, &items[i], NITEMS - i);
		check_tree(&root);
	}
	check_queries(&root);
	for (i = 0; i < NITEMS; i++) {
		do_erase(&root, &items[i]);
		check_tree(&root);
	}
	assert_true(rb_empty(&root));
}

static void test_duplicates_keep_order(void **state)
{
	struct rb_root root = RB_ROOT_INIT;
	struct rb_node *n;
	int i, k = 7;

	(void)state;
	reset(2);
	for (i = 0; i < 50; i++)
		do_insert(&root, &items[i], i % 2 ? 7 : (i % 5));
	check_tree(&root);
	/* lower_bound is the oldest 7, floor the newest 7. */
	n = rb_lower_bound(&root, &k, key_cmp);
	assert_ptr_equal(nth_entry(n), &items[1]);
	assert_ptr_equal(nth_entry(rb_floor(&root, &k, key_cmp)), &items[49]);
	assert_null(rb_upper_bound(&root, &k, key_cmp));
	for (i = 1; i < 50; i += 2, n = rb_next(n))
		assert_ptr_equal(nth_entry(n), &items[i]);
	assert_null(n);
}

static void test_random_seeds(void **state)
{
	uint64_t seeds[] = { 0x9e3779b97f4a7c15ull, 12345, 987654321, 42, 7 };
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		run_random(seeds[i], 6000, 97);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_sequential),
		cmocka_unit_test(test_duplicates_keep_order),
		cmocka_unit_test(test_random_seeds),
	};

	return cmocka_run_group_tests_name("rbtree", tests, NULL, NULL);
}
