/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/dcache_test.c: fs/dcache.c, the dentry table: entries kept
 * once per name with the later expiry, non-positive timeouts ignored, growth,
 * expired entries pruned by later inserts, take_all, and the per-directory change counters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "dcache.h"

static int setup(void **state)
{
	struct dcache *dc;

	assert_int_equal(dcache_new(&dc), 0);
	*state = dc;
	return 0;
}

static int teardown(void **state)
{
	dcache_free(*state);
	return 0;
}

static void test_note_once(void **state)
{
	struct dcache *dc = *state;
	struct dent *d, *next, *a1 = NULL;
	uint64_t now = mono_ns();
	size_t n = 0;

	dcache_note(dc, 1, "a", 1.0);
	dcache_note(dc, 1, "a", 30.0);
	dcache_note(dc, 2, "a", 1.0);
	dcache_note(dc, 1, "zero", 0);
	dcache_note(dc, 1, "neg", -1);
	assert_int_equal(dcache_count(dc), 2);
	for (d = dcache_take_all(dc); d; d = next) {
		next = d->next;
		if (d->parent == 1 && strcmp(d->name, "a") == 0)
			a1 = d;
		else
			free(d);
		n++;
	}
	assert_int_equal(n, 2);
	assert_non_null(a1);
	/* the later of the two expiries is kept */
	assert_true(a1->expiry >= now + 30000000000ULL);
	free(a1);
	assert_int_equal(dcache_count(dc), 0);
}

static void test_take_all_frees(void **state)
{
	struct dcache *dc = *state;
	struct dent *d, *next, *a = NULL, *b = NULL;

	dcache_note(dc, 5, "x", 1.0);
	dcache_note(dc, 5, "y", 100.0);
	for (d = dcache_take_all(dc); d; d = next) {
		next = d->next;
		if (strcmp(d->name, "x") == 0)
			a = d;
		else
			b = d;
	}
	assert_non_null(a);
	assert_non_null(b);
	assert_true(b->expiry > a->expiry);
	free(a);
	free(b);
	assert_null(dcache_take_all(dc));
}

static void test_grow(void **state)
{
	struct dcache *dc = *state;
	struct dent *d, *next;
	char name[16];
	size_t i, n = 0;

	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "n%zu", i);
		dcache_note(dc, 9, name, 60.0);
	}
	assert_int_equal(dcache_count(dc), 20000);
	for (d = dcache_take_all(dc); d; d = next) {
		next = d->next;
		n++;
		free(d);
	}
	assert_int_equal(n, 20000);
}

/*
 * Expired entries are swept out a few slots per insert: 5000 names whose
 * time is up are gone after 2000 new notes, without a take_all.
 */
static void test_prune(void **state)
{
	struct dcache *dc = *state;
	char name[16];
	size_t i;

	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "old%zu", i);
		dcache_note(dc, 3, name, 1e-9);	/* expires after the 1 s slack */
	}
	assert_int_equal(dcache_count(dc), 5000);
	usleep(1100 * 1000);
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "new%zu", i);
		dcache_note(dc, 3, name, 60.0);
	}
	assert_true(dcache_count(dc) >= 2000);
	assert_true(dcache_count(dc) < 2000 + 50);
}

static void test_dir_seq(void **state)
{
	struct dcache *dc = *state;
	uint64_t a = dcache_dir_seq(dc, 42), b = dcache_dir_seq(dc, 43);

	dcache_dir_changed(dc, 42);
	assert_int_equal(dcache_dir_seq(dc, 42), a + 1);
	if (dcache_dir_seq(dc, 43) != b)	/* may share 42's slot */
		assert_int_equal(dcache_dir_seq(dc, 43), b + 1);
	assert_int_equal(dcache_dir_seq(NULL, 42), 0);
	dcache_note(NULL, 1, "a", 1.0);	/* no table yet: ignored */
	assert_int_equal(dcache_count(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_note_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_all_frees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_seq, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/dcache", tests, NULL, NULL);
}
