/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/node_test.c: records (daemon/dir/node.c). A node
 * made by hand and attached under the root is found by name with its
 * parent's times touched; what a name binds (version, primary node,
 * shared) for a plain name, a primary with links and a link; a trim gives
 * back exactly the bytes past the kept blocks and a copy of the extents
 * matches the version's; a version's attributes name its parent.
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

static void test_attach_by_hand(void **state)
{
	struct dir_attr at;
	struct node *n;
	struct nkey k;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	pthread_mutex_lock(&f.d->lock);
	n = dir_node_alloc(4);
	assert_non_null(n);
	dir_nkey_set(&k, ROOT, "hand", 4);
	dir_node_set_name(n, &k);
	n->kind = NODE_DIR;
	n->u.d = (struct dnode){ .id = f.d->next_id++, .mode = 040700 };
	dir_id_place_dir(f.d, n);
	n->cookie = f.d->next_cookie++;
	dir_node_attach(f.d, f.d->root, n);
	f.d->ndirs++;
	pthread_mutex_unlock(&f.d->lock);
	assert_int_equal(lookup(&f, f.s1, ROOT, "hand", &at), 0);
	assert_int_equal(at.ino, n->u.d.id);
	assert_int_equal(at.state, DIR_ST_DIR);
	assert_int_equal(at.mode, 040700);
	assert_int_equal(dir_rmdir(f.d, ROOT, "hand", 4), 0);
	fx_close(&f);
}

static void test_what_a_name_binds(void **state)
{
	struct node *prim, *plain, *link;
	struct dir_attr at;
	struct nkey k;
	uint64_t a;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = put_file(&f, f.s1, ROOT, "a", "A");
	put_file(&f, f.s1, ROOT, "plain", "P");
	assert_int_equal(dir_link(f.d, f.s1, a, ROOT, "a2", 2, &at), 0);
	dir_nkey_set(&k, ROOT, "a", 1);
	prim = dir_name_find(f.d, &k);
	dir_nkey_set(&k, ROOT, "a2", 2);
	link = dir_name_find(f.d, &k);
	dir_nkey_set(&k, ROOT, "plain", 5);
	plain = dir_name_find(f.d, &k);
	assert_ptr_equal(dir_node_ver(f.d, link), &prim->u.v);
	assert_ptr_equal(dir_node_primary(f.d, link), prim);
	assert_ptr_equal(dir_node_primary(f.d, prim), prim);
	assert_true(dir_node_shared(f.d, link));
	assert_true(dir_node_shared(f.d, prim));
	assert_false(dir_node_shared(f.d, plain));
	assert_null(dir_node_ver(f.d, f.d->root));
	dir_ver_attr(&prim->u.v, ROOT, &at);
	assert_int_equal(at.ino, a);
	assert_int_equal(at.parent, ROOT);
	assert_int_equal(dir_ver_parent(&prim->u.v), ROOT);
	fx_close(&f);
}

static void test_trim_and_copy(void **state)
{
	struct extent_list l = { 0 };
	uint64_t ino, used, freed;
	struct ver *v;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	ino = do_create(&f, f.s1, ROOT, "big", 0, 5 * BLK);
	v = dir_id_ver(f.d, ino);
	assert_non_null(v);
	used = ver_reserved(v);
	assert_true(used >= 5 * BLK);
	assert_int_equal(dir_ver_extents_copy(v, &l), 0);
	assert_int_equal(alloc_extent_list_bytes(&l), used);
	alloc_extent_list_free(&l);
	pthread_mutex_lock(&f.d->lock);
	freed = dir_ver_trim(f.d, v, BLK + 1);		/* keeps 2 blocks */
	f.d->pending -= freed;
	ver_tq(f.d, v)->pending -= freed;	/* the tenant slot's count too (quota.c) */
	ver_pend(v)->owner->pending_bytes -= freed;
	pthread_mutex_unlock(&f.d->lock);
	assert_int_equal(freed, used - 2 * BLK);
	assert_int_equal(ver_reserved(v), 2 * BLK);
	assert_int_equal(dir_abandon(f.d, f.s1, ino), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_by_hand),
		cmocka_unit_test(test_what_a_name_binds),
		cmocka_unit_test(test_trim_and_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
