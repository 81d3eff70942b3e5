/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/inode_test.c: fs/inode.c, the kernel inode table: lookup
 * counts and forget, names and renames, hints, the payload's hold/drop
 * protocol, growth past the first bucket array, and foreach.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "inode.h"

struct obj {
	int refs;
};

static void hold(void *o)
{
	((struct obj *)o)->refs++;
}

static void drop(void *o)
{
	((struct obj *)o)->refs--;
}

static const struct itab_payload_ops ops = { hold, drop };

static int setup(void **state)
{
	struct itab *t;

	assert_int_equal(itab_new(&ops, &t), 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	itab_free(*state);
	return 0;
}

static void test_remember_forget(void **state)
{
	struct itab *t = *state;
	char name[16];
	uint64_t parent;

	itab_remember(t, 10, 1, "a");
	itab_remember(t, 10, 1, "a");
	assert_int_equal(itab_count(t), 1);
	assert_int_equal(itab_name(t, 10, &parent, name, sizeof(name)), 0);
	assert_int_equal(parent, 1);
	assert_string_equal(name, "a");
	itab_forget(t, 10, 1);	/* one lookup left */
	assert_int_equal(itab_count(t), 1);
	itab_forget(t, 10, 1);
	assert_int_equal(itab_count(t), 0);
	assert_int_equal(itab_name(t, 10, &parent, name, sizeof(name)), -ENOENT);
	itab_forget(t, 99, 1);	/* unknown: ignored */
	itab_remember(t, 1, 0, "root");	/* the root is never counted */
	assert_int_equal(itab_count(t), 0);
}

static void test_name_too_long_for_buffer(void **state)
{
	struct itab *t = *state;
	char name[4];
	uint64_t parent;

	itab_remember(t, 11, 1, "longname");
	assert_int_equal(itab_name(t, 11, &parent, name, sizeof(name)), -ENOENT);
}

static void test_rename(void **state)
{
	struct itab *t = *state;
	char name[16];
	uint64_t parent;

	itab_remember(t, 20, 1, "old");
	itab_remember(t, 21, 1, "other");
	itab_rename(t, 1, "old", 5, "new");
	assert_int_equal(itab_name(t, 20, &parent, name, sizeof(name)), 0);
	assert_int_equal(parent, 5);
	assert_string_equal(name, "new");
	assert_int_equal(itab_name(t, 21, &parent, name, sizeof(name)), 0);
	assert_string_equal(name, "other");
	itab_remember(t, 20, 7, "moved");	/* a new lookup renames it too */
	assert_int_equal(itab_name(t, 20, &parent, name, sizeof(name)), 0);
	assert_string_equal(name, "moved");
}

static void test_hint(void **state)
{
	struct itab *t = *state;

	assert_int_equal(itab_get_hint(t, 30), 0);
	itab_set_hint(t, 30, 2);	/* unknown inode: nothing kept */
	assert_int_equal(itab_get_hint(t, 30), 0);
	itab_remember(t, 30, 1, "h");
	itab_set_hint(t, 30, 3);
	assert_int_equal(itab_get_hint(t, 30), 3);
}

static void test_payload(void **state)
{
	struct itab *t = *state;
	struct obj a = { 1 }, b = { 1 }, *got;

	assert_null(itab_payload(t, 40));
	itab_link(t, 40, &a);	/* unknown inode: not linked */
	assert_int_equal(a.refs, 1);
	itab_remember(t, 40, 1, "p");
	itab_link(t, 40, &a);
	assert_int_equal(a.refs, 2);
	itab_link(t, 40, &a);	/* same object: no second hold */
	assert_int_equal(a.refs, 2);
	got = itab_payload(t, 40);
	assert_ptr_equal(got, &a);
	assert_int_equal(a.refs, 3);
	drop(got);
	itab_link(t, 40, &b);	/* the old one is dropped */
	assert_int_equal(a.refs, 1);
	assert_int_equal(b.refs, 2);
	itab_forget(t, 40, 1);	/* forget drops the payload */
	assert_int_equal(b.refs, 1);
}

static void count_cb(void *arg, uint64_t ino)
{
	(*(size_t *)arg)++;
}

static void test_grow_and_foreach(void **state)
{
	struct itab *t = *state;
	char name[16];
	uint64_t parent, i;
	size_t n = 0;

	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "f%llu", (unsigned long long)i);
		itab_remember(t, 1000 + i, 2, name);
	}
	assert_int_equal(itab_count(t), 5000);
	assert_int_equal(itab_name(t, 1000 + 4321, &parent, name, sizeof(name)), 0);
	assert_string_equal(name, "f4321");
	itab_foreach(t, count_cb, &n);
	assert_int_equal(n, 5000);
	itab_rename(t, 2, "f17", 3, "g17");
	assert_int_equal(itab_name(t, 1017, &parent, name, sizeof(name)), 0);
	assert_string_equal(name, "g17");
}

/*
 * Two inodes last seen under one name (a replaced file the kernel still
 * holds) are both renamed; with thousands of nodes moving between the
 * indexes while they double, every name stays findable and forgetting them
 * all empties the table.
 */
static void test_shared_name_and_churn(void **state)
{
	struct itab *t = *state;
	char name[16], want[16];
	uint64_t parent, i;

	itab_remember(t, 60, 4, "same");
	itab_remember(t, 61, 4, "same");
	itab_rename(t, 4, "same", 4, "after");
	assert_int_equal(itab_name(t, 60, &parent, name, sizeof(name)), 0);
	assert_string_equal(name, "after");
	assert_int_equal(itab_name(t, 61, &parent, name, sizeof(name)), 0);
	assert_string_equal(name, "after");
	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "c%llu", (unsigned long long)i);
		itab_remember(t, 100000 + i, 9, name);
		if (i % 3 == 0) {
			snprintf(want, sizeof(want), "r%llu", (unsigned long long)i);
			itab_rename(t, 9, name, 10, want);
		}
	}
	for (i = 0; i < 20000; i++) {
		assert_int_equal(itab_name(t, 100000 + i, &parent, name, sizeof(name)), 0);
		snprintf(want, sizeof(want), "%c%llu", i % 3 ? 'c' : 'r', (unsigned long long)i);
		assert_string_equal(name, want);
		assert_int_equal(parent, i % 3 ? 9 : 10);
	}
	assert_int_equal(itab_count(t), 20002);
	for (i = 0; i < 20000; i++)
		itab_forget(t, 100000 + i, 1);
	itab_forget(t, 60, 1);
	itab_forget(t, 61, 1);
	assert_int_equal(itab_count(t), 0);
	assert_int_equal(itab_name(t, 100005, &parent, name, sizeof(name)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_remember_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_name_too_long_for_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_payload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grow_and_foreach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_name_and_churn, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/inode", tests, NULL, NULL);
}
