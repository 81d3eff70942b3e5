/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/links_test.c: the index of hard-link nodes
 * (daemon/dir/links.c). A version's extra names are found by its id and
 * not by another's; unhooking takes one out of the index and hooking puts
 * it back; dropping all of a version's links removes every extra name
 * (each with an event) and leaves the primary name bound.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dir_priv.h"
#include "fixture.h"

static void test_index(void **state)
{
	struct dir_attr at;
	struct node *l, *l2;
	uint64_t a, b;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = put_file(&f, f.s1, ROOT, "a", "A");
	b = put_file(&f, f.s1, ROOT, "b", "B");
	assert_null(dir_link_first(f.d, a));
	assert_int_equal(dir_link(f.d, f.s1, a, ROOT, "a2", 2, &at), 0);
	assert_int_equal(dir_link(f.d, f.s1, a, ROOT, "a3", 2, &at), 0);
	l = dir_link_first(f.d, a);
	assert_non_null(l);
	assert_int_equal(l->kind, NODE_LINK);
	assert_int_equal(l->u.l.target, a);
	assert_null(dir_link_first(f.d, b));
	dir_link_unhook(f.d, l);
	l2 = dir_link_first(f.d, a);
	assert_non_null(l2);
	assert_ptr_not_equal(l2, l);
	dir_link_unhook(f.d, l2);
	assert_null(dir_link_first(f.d, a));
	dir_link_hook(f.d, l2);
	dir_link_hook(f.d, l);
	assert_ptr_equal(dir_link_first(f.d, a), l->cookie < l2->cookie ? l : l2);
	fx_close(&f);
}

static void test_drop_all(void **state)
{
	uint64_t seq0, a;
	struct dir_attr at;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = put_file(&f, f.s1, ROOT, "a", "A");
	assert_int_equal(dir_link(f.d, f.s1, a, ROOT, "a2", 2, &at), 0);
	assert_int_equal(dir_link(f.d, f.s1, a, ROOT, "a3", 2, &at), 0);
	assert_int_equal(stats(&f).names, 3);
	seq0 = dir_event_seq(f.d);
	pthread_mutex_lock(&f.d->lock);
	dir_link_drop_all(f.d, dir_id_ver(f.d, a), DEV_EVICT);
	pthread_mutex_unlock(&f.d->lock);
	assert_int_equal(dir_event_seq(f.d), seq0 + 2);
	assert_null(dir_link_first(f.d, a));
	assert_int_equal(stats(&f).names, 1);
	assert_int_equal(lookup(&f, f.s1, ROOT, "a", &at), 0);
	assert_int_equal(at.nlink, 1);
	assert_int_equal(lookup(&f, f.s1, ROOT, "a2", &at), -ENOENT);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_drop_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
