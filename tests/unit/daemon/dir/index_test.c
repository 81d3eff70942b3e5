/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/index_test.c: the names and ids tables
 * (daemon/dir/index.c). An id finds its directory (tagged) or version; a
 * directory id asked for as a file and the reverse give NULL, -ENOTDIR or
 * -ENOENT; a name finds its bound node, and a session's pending versions
 * of a name are found (the newest) and counted for that session only;
 * name keys refuse a bad name or a parent that is not a directory.
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

static void test_ids(void **state)
{
	struct node *n = NULL;
	uint64_t dino, fino;
	struct ver *v;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	dino = do_mkdir(&f, ROOT, "d");
	fino = put_file(&f, f.s1, dino, "f", "x");
	assert_true(dir_id_find(f.d, dino) & TAG);
	assert_non_null(dir_id_dir(f.d, dino));
	assert_null(dir_id_ver(f.d, dino));
	v = dir_id_ver(f.d, fino);
	assert_non_null(v);
	assert_int_equal(v->id, fino);
	assert_int_equal(v->state, DIR_ST_PUBLISHED);
	assert_null(dir_id_dir(f.d, fino));
	assert_int_equal(dir_id_find(f.d, 123456), 0);
	assert_int_equal(dir_get_dir(f.d, dino, &n), 0);
	assert_int_equal(n->u.d.id, dino);
	assert_int_equal(dir_get_dir(f.d, fino, &n), -ENOTDIR);
	assert_int_equal(dir_get_dir(f.d, 123456, &n), -ENOENT);
	assert_ptr_equal(dir_node_found(f.d, ver_node(v)), ver_node(v));
	fx_close(&f);
}

static void test_names_and_pending(void **state)
{
	struct node *pd, *n;
	struct nkey k;
	struct pend *p;
	uint64_t a, b, fino;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	fino = put_file(&f, f.s1, ROOT, "name", "bound");
	a = do_create(&f, f.s1, ROOT, "name", 0, 0);
	b = do_create(&f, f.s1, ROOT, "name", 0, 0);
	assert_int_equal(dir_name_key(f.d, ROOT, "name", 4, &k, &pd), 0);
	assert_ptr_equal(pd, f.d->root);
	n = dir_name_find(f.d, &k);
	assert_non_null(n);
	assert_int_equal(n->u.v.id, fino);
	p = dir_pend_find(f.d, f.s1, &k);
	assert_non_null(p);
	assert_int_equal(p->v.id, b > a ? b : a);	/* the newest */
	assert_int_equal(dir_pends_of(f.d, f.s1, &k), 2);
	assert_null(dir_pend_find(f.d, f.s2, &k));
	assert_int_equal(dir_pends_of(f.d, f.s2, &k), 0);
	assert_int_equal(dir_name_key(f.d, ROOT, "no/slash", 8, &k, &pd), -EINVAL);
	assert_int_equal(dir_name_key(f.d, fino, "x", 1, &k, &pd), -ENOTDIR);
	assert_int_equal(dir_name_key(f.d, 99999, "x", 1, &k, &pd), -ENOENT);
	assert_int_equal(dir_abandon(f.d, f.s1, a), 0);
	assert_int_equal(dir_abandon(f.d, f.s1, b), 0);
	assert_int_equal(dir_name_key(f.d, ROOT, "name", 4, &k, &pd), 0);
	assert_int_equal(dir_pends_of(f.d, f.s1, &k), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_names_and_pending),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
