/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/within_test.c: is an id inside a subtree
 * (daemon/dir/within.c), over the dir tests' fixture (a real directory,
 * nothing faked). Cases: the namespace root holds everything that exists;
 * a root holds itself, its files and directories at any depth, and its
 * named pending versions; a sibling's and an ancestor's ids are outside;
 * versions with no name (pending and unlinked, orphaned under a lease)
 * are UNNAMED; ids that never existed or are gone are -ENOENT; a subtree
 * renamed across follows its directory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

struct tree {
	uint64_t t, a, b, ad, add, fa, fadd, fb;
};

/* /t/a/f, /t/a/d/dd/g, /t/b/f */
static void grow(struct fx *f, struct tree *w)
{
	w->t = do_mkdir(f, ROOT, "t");
	w->a = do_mkdir(f, w->t, "a");
	w->b = do_mkdir(f, w->t, "b");
	w->ad = do_mkdir(f, w->a, "d");
	w->add = do_mkdir(f, w->ad, "dd");
	w->fa = put_file(f, f->s1, w->a, "f", "x");
	w->fadd = put_file(f, f->s1, w->add, "g", "y");
	w->fb = put_file(f, f->s1, w->b, "f", "z");
}

static void test_inside_and_out(void **state)
{
	struct tree w;
	struct fx f;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	grow(&f, &w);
	/* the namespace root holds every id that exists */
	assert_int_equal(dir_within(f.d, w.fb, ROOT), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, ROOT, ROOT), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, 999999, ROOT), -ENOENT);
	/* a root holds itself and everything under it */
	assert_int_equal(dir_within(f.d, w.a, w.a), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.fa, w.a), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.ad, w.a), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.add, w.a), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.fadd, w.a), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.fadd, w.ad), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.fadd, w.t), DIR_WITHIN_YES);
	/* siblings and ancestors are outside */
	assert_int_equal(dir_within(f.d, w.fb, w.a), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, w.b, w.a), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, w.t, w.a), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, ROOT, w.a), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, w.fa, w.ad), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, w.a, w.ad), DIR_WITHIN_NO);
	/* ids that do not exist, under any root */
	assert_int_equal(dir_within(f.d, 999999, w.a), -ENOENT);
	assert_int_equal(dir_within(f.d, w.a, 999999), DIR_WITHIN_NO);
	fx_close(&f);
}

/* Pending versions: named ones are where their name is; unnamed ones are UNNAMED. */
static void test_pending_and_orphans(void **state)
{
	struct dir_attr at;
	struct tree w;
	uint64_t p, gone;
	struct fx f;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	grow(&f, &w);
	p = do_create(&f, f.s1, w.ad, "p", 0, 0);
	assert_int_equal(dir_within(f.d, p, w.a), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, p, w.b), DIR_WITHIN_NO);
	assert_int_equal(dir_unlink(f.d, f.s1, w.ad, "p", 1), 0);
	assert_int_equal(dir_within(f.d, p, w.a), DIR_WITHIN_UNNAMED);
	assert_int_equal(dir_within(f.d, p, w.b), DIR_WITHIN_UNNAMED);
	assert_int_equal(dir_abandon(f.d, f.s1, p), 0);
	assert_int_equal(dir_within(f.d, p, w.a), -ENOENT);
	/* published, leased, unlinked: orphaned, no name */
	assert_int_equal(dir_open(f.d, f.s2, w.b, "f", 1, 0, &at), 0);
	assert_int_equal(dir_unlink(f.d, f.s1, w.b, "f", 1), 0);
	assert_int_equal(dir_within(f.d, w.fb, w.b), DIR_WITHIN_UNNAMED);
	assert_int_equal(dir_release(f.d, f.s2, w.fb), 0);
	assert_int_equal(dir_within(f.d, w.fb, w.b), -ENOENT);
	/* a removed directory is gone too */
	gone = do_mkdir(&f, w.a, "e");
	assert_int_equal(dir_rmdir(f.d, w.a, "e", 1), 0);
	assert_int_equal(dir_within(f.d, gone, w.a), -ENOENT);
	fx_close(&f);
}

/* A subtree renamed from one root to another follows its directory. */
static void test_rename_across(void **state)
{
	struct tree w;
	struct fx f;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	grow(&f, &w);
	assert_int_equal(dir_rename(f.d, f.s1, w.a, "d", 1, w.b, "moved", 5, 0), 0);
	assert_int_equal(dir_within(f.d, w.fadd, w.b), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.add, w.b), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, w.fadd, w.a), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, w.ad, w.a), DIR_WITHIN_NO);
	/* a file renamed out of a */
	assert_int_equal(dir_rename(f.d, f.s1, w.a, "f", 1, ROOT, "top", 3, 0), 0);
	assert_int_equal(dir_within(f.d, w.fa, w.a), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, w.fa, w.t), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, w.fa, ROOT), DIR_WITHIN_YES);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inside_and_out),
		cmocka_unit_test(test_pending_and_orphans),
		cmocka_unit_test(test_rename_across),
	};

	return cmocka_run_group_tests_name("dir_within", tests, NULL, NULL);
}
