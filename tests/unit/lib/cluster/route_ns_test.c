/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_ns_test.c: lib/cluster/route_ns.c, the
 * namespace calls of a routed client. A name is looked up, unlinked and
 * its attributes read at its owner (a file elsewhere is a miss); a
 * directory is also found on the first pool; mkdir makes a directory on
 * every pool under one router id, rmdir removes it from every pool and is
 * refused while any pool holds a name under it; setattr of a directory
 * reaches every pool; file ids go to their pool untagged and come back
 * tagged; bad names are refused before any pool is asked; after a pool
 * joins, a name is still found (and unlinked) where it was placed before;
 * a first pool out of reach leaves a miss at the owner a miss (ENOENT, not
 * its error) and is not asked again within ROUTE_RETRY_MS; a directory
 * whose owner is out of reach is found on another pool.
 * Real: route*.c, members.c over loopback. Faked: etcd (fake_etcd.c) and
 * the pools (route_fixture.c's route_ops on in-memory trees).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "client_priv.h"
#include "route_fixture.h"
#include "route_priv.h"

static int setup(void **state)
{
	static struct rf f;

	rf_setup(&f, 3, 0);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	rf_teardown(*state);
	return 0;
}

static void test_mkdir_every_pool(void **state)
{
	struct rf *f = *state;
	struct maru_attr a, b;
	struct rf_ent *e;
	int i;

	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "d", 0750, 0, 0, &a), 0);
	assert_int_equal(a.state, MARU_STATE_DIR);
	assert_int_equal(route_slot_of(a.ino), -1);
	assert_true(a.ino != MARU_ROOT_ID);
	assert_int_equal(a.parent, MARU_ROOT_ID);
	for (i = 0; i < 3; i++) {
		e = rf_find(f, i, MARU_ROOT_ID, "d");
		assert_non_null(e);
		assert_true(S_ISDIR(e->mode));
	}
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, "d", &b), 0);
	assert_int_equal(b.ino, a.ino);
	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "d", 0750, 0, 0, NULL), -EEXIST);
	/* a sub-directory is made under each pool's own id of d */
	assert_int_equal(route_mkdir(f->c, a.ino, "e", 0755, 0, 0, &b), 0);
	for (i = 0; i < 3; i++)
		assert_non_null(rf_find(f, i, rf_find(f, i, MARU_ROOT_ID, "d")->ino, "e"));
}

static void test_lookup_at_owner(void **state)
{
	struct rf *f = *state;
	char n1[32], n2[32];
	struct maru_attr a;
	uint64_t l;

	rf_name_on(f, "", "f", 1, n1, sizeof(n1));
	rf_name_on(f, "", "g", 2, n2, sizeof(n2));
	l = rf_add(f, 1, MARU_ROOT_ID, n1, S_IFREG | 0644);
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, n1, &a), 0);
	assert_int_equal(route_slot_of(a.ino), 1);
	assert_int_equal(a.ino & ROUTE_LOCAL_MASK, l);
	assert_int_equal(a.parent, MARU_ROOT_ID);
	/* a file on a pool that does not own its name is not seen */
	rf_add(f, 1, MARU_ROOT_ID, n2, S_IFREG | 0644);
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, n2, &a), -ENOENT);
	assert_int_equal(route_getattr(f->c, route_tag(1, l), &a), 0);
	assert_int_equal(a.ino, route_tag(1, l));
	assert_int_equal(route_getattr(f->c, route_tag(1, 9999), &a), -ENOENT);
	assert_int_equal(route_getattr(f->c, route_tag(9, l), &a), -ESTALE);
}

static void test_dir_on_first_pool(void **state)
{
	struct rf *f = *state;
	struct maru_attr a;
	char n[32];

	/* a directory only the first pool has (made before the others joined) */
	rf_name_on(f, "", "old", 2, n, sizeof(n));
	rf_add(f, 0, MARU_ROOT_ID, n, S_IFDIR | 0755);
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, n, &a), 0);
	assert_int_equal(a.state, MARU_STATE_DIR);
	assert_int_equal(route_slot_of(a.ino), -1);
	assert_int_equal(route_getattr(f->c, a.ino, &a), 0);
	assert_int_equal(a.parent, MARU_ROOT_ID);
}

static void test_rmdir(void **state)
{
	struct rf *f = *state;
	struct maru_attr a;
	char n[32];
	int i;

	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "r", 0755, 0, 0, &a), 0);
	/* one pool holds a name under it: refused, nothing removed */
	rf_name_on(f, "r", "x", 2, n, sizeof(n));
	rf_add(f, 2, rf_find(f, 2, MARU_ROOT_ID, "r")->ino, n, S_IFREG | 0644);
	assert_int_equal(route_rmdir(f->c, MARU_ROOT_ID, "r"), -ENOTEMPTY);
	for (i = 0; i < 3; i++)
		assert_non_null(rf_find(f, i, MARU_ROOT_ID, "r"));
	assert_int_equal(route_unlink(f->c, a.ino, n), 0);
	assert_null(rf_find(f, 2, rf_find(f, 2, MARU_ROOT_ID, "r")->ino, n));
	assert_int_equal(route_rmdir(f->c, MARU_ROOT_ID, "r"), 0);
	for (i = 0; i < 3; i++)
		assert_null(rf_find(f, i, MARU_ROOT_ID, "r"));
	assert_int_equal(route_getattr(f->c, a.ino, &a), -ENOENT);
	assert_int_equal(route_rmdir(f->c, MARU_ROOT_ID, "r"), -ENOENT);
	rf_name_on(f, "", "file", 0, n, sizeof(n));
	rf_add(f, 0, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_equal(route_rmdir(f->c, MARU_ROOT_ID, n), -ENOTDIR);
}

/* A name made on the last pool between the check and its rmdir. */
static void test_rmdir_race(void **state)
{
	struct rf *f = *state;
	struct maru_file *w;
	struct maru_attr a, b;
	char n[32], late[32];
	int i;

	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "q", 0750, 0, 0, &a), 0);
	rf_name_on(f, "q", "late", 2, late, sizeof(late));
	snprintf(f->pool[2].rmdir_race, sizeof(f->pool[2].rmdir_race), "%s", late);
	assert_int_equal(route_rmdir(f->c, MARU_ROOT_ID, "q"), -ENOTEMPTY);
	/* whole again: on every pool, with its mode, the late name in it */
	for (i = 0; i < 3; i++) {
		assert_non_null(rf_find(f, i, MARU_ROOT_ID, "q"));
		assert_int_equal(rf_find(f, i, MARU_ROOT_ID, "q")->mode, S_IFDIR | 0750);
	}
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, "q", &b), 0);
	assert_int_equal(b.ino, a.ino);
	assert_int_equal(route_lookup(f->c, a.ino, late, &b), 0);
	/* a new name on a pool where it was made again lands in it */
	rf_name_on(f, "q", "y", 0, n, sizeof(n));
	assert_int_equal(route_file_create(f->c, a.ino, n, 0644, 0, 0, 0, 0, &w), 0);
	assert_non_null(rf_find(f, 0, rf_find(f, 0, MARU_ROOT_ID, "q")->ino, n));
}

/*
 * A publish's directory through the router: the first pool's is the
 * merged one (router ids); another pool's changed nothing (attr_size 0).
 */
static void test_publish_dir(void **state)
{
	struct rf *f = *state;
	struct maru_client *sub;
	struct maru_attr a, d, got;
	struct rf_ent *e;
	int i;

	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "pd", 0755, 0, 0, &a), 0);
	assert_int_equal(route_getattr(f->c, a.ino, &got), 0);
	for (i = 0; i < 3; i++) {
		e = rf_find(f, i, MARU_ROOT_ID, "pd");
		memset(&d, 0, sizeof(d));
		d.attr_size = sizeof(d);
		d.ino = e->ino;
		d.state = MARU_STATE_DIR;
		d.mode = S_IFDIR | 0755;
		d.nlink = 7;
		assert_int_equal(route_sub(f->c->route, (unsigned int)i, &sub), 0);
		route_publish_dir(f->c, sub, &d);
		assert_int_equal(d.ino, a.ino);
		if (i == 0) {
			assert_int_equal(d.attr_size, sizeof(d));
			assert_int_equal(d.parent, MARU_ROOT_ID);
			assert_int_equal(d.nlink, 7);
		} else {
			assert_int_equal(d.attr_size, 0);
		}
	}
	/* a directory the router never learnt of: nothing known */
	memset(&d, 0, sizeof(d));
	d.attr_size = sizeof(d);
	d.ino = 4242;
	route_publish_dir(f->c, sub, &d);
	assert_int_equal(d.ino, 0);
	assert_int_equal(d.attr_size, 0);
}

static void test_unlink_at_owner(void **state)
{
	struct rf *f = *state;
	char n[32];

	rf_name_on(f, "", "u", 2, n, sizeof(n));
	rf_add(f, 2, MARU_ROOT_ID, n, S_IFREG | 0644);
	rf_add(f, 0, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_equal(route_unlink(f->c, MARU_ROOT_ID, n), 0);
	assert_null(rf_find(f, 2, MARU_ROOT_ID, n));
	/* the copy on a pool that does not own the name is left alone */
	assert_non_null(rf_find(f, 0, MARU_ROOT_ID, n));
	assert_int_equal(route_unlink(f->c, MARU_ROOT_ID, n), -ENOENT);
}

static void test_setattr(void **state)
{
	struct rf *f = *state;
	struct maru_setattr sa = { .sa_size = sizeof(sa), .mask = MARU_SET_MODE, .mode = 0700 };
	struct maru_attr a;
	char n[32];
	uint64_t l;
	int i;

	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "s", 0755, 0, 0, &a), 0);
	assert_int_equal(route_setattr(f->c, a.ino, &sa, &a), 0);
	assert_int_equal(route_slot_of(a.ino), -1);
	for (i = 0; i < 3; i++)
		assert_int_equal(rf_find(f, i, MARU_ROOT_ID, "s")->mode, S_IFDIR | 0700);
	rf_name_on(f, "", "m", 1, n, sizeof(n));
	l = rf_add(f, 1, MARU_ROOT_ID, n, S_IFREG | 0644);
	sa.mode = 0600;
	assert_int_equal(route_setattr(f->c, route_tag(1, l), &sa, &a), 0);
	assert_int_equal(a.ino, route_tag(1, l));
	assert_int_equal(rf_find(f, 1, MARU_ROOT_ID, n)->mode, S_IFREG | 0600);
}

static void test_bad_names(void **state)
{
	struct rf *f = *state;
	unsigned int before[3];
	struct maru_attr a;
	int i;

	for (i = 0; i < 3; i++)
		before[i] = rf_calls(f, i);
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, "a/b", &a), -EINVAL);
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, "", &a), -EINVAL);
	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "x/y", 0755, 0, 0, &a), -EINVAL);
	assert_int_equal(route_unlink(f->c, MARU_ROOT_ID, NULL), -EINVAL);
	assert_int_equal(route_lookup(f->c, 4242, "a", &a), -ENOENT);
	assert_int_equal(route_lookup(f->c, route_tag(0, 5), "a", &a), -ENOTDIR);
	for (i = 0; i < 3; i++)
		assert_int_equal(rf_calls(f, i), before[i]);
}

static void test_found_where_placed_before(void **state)
{
	struct maru_attr a;
	char n[32];
	struct rf f;
	struct route *r;
	uint64_t l;
	int j, prev = -1;

	(void)state;
	rf_setup(&f, 2, 0);
	r = f.c->route;
	j = rf_join(&f, (int64_t)time(NULL));
	rf_moved_name(&f, j, n, sizeof(n), &prev);
	assert_true(prev == 0 || prev == 1);
	l = rf_add(&f, prev, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_equal(route_lookup(f.c, MARU_ROOT_ID, n, &a), 0);
	assert_int_equal(a.ino, route_tag((unsigned int)prev, l));
	assert_int_equal(atomic_load(&r->prev_hits), 1);
	assert_int_equal(route_unlink(f.c, MARU_ROOT_ID, n), 0);
	assert_null(rf_find(&f, prev, MARU_ROOT_ID, n));
	assert_int_equal(route_lookup(f.c, MARU_ROOT_ID, n, &a), -ENOENT);
	rf_teardown(&f);
}

/* the first pool out of reach: a missing name is still a miss */
static void test_first_pool_away(void **state)
{
	struct maru_attr a;
	char n[32], n2[32];
	struct rf f;
	struct route *r;

	(void)state;
	rf_setup(&f, 3, 1u << 0);
	r = f.c->route;
	assert_string_equal(r->pool[0].rec.uri, f.pool[0].uri);
	rf_name_on(&f, "", "miss", 1, n, sizeof(n));
	rf_name_on(&f, "", "miss2", 2, n2, sizeof(n2));
	assert_false(route_pool_away(r, 0));
	assert_int_equal(route_lookup(f.c, MARU_ROOT_ID, n, &a), -ENOENT);
	assert_true(route_pool_away(r, 0));
	assert_false(route_pool_away(r, 1));
	assert_int_equal(route_lookup(f.c, MARU_ROOT_ID, n2, &a), -ENOENT);
	/* a directory owned by the pool out of reach: found on another */
	rf_name_on(&f, "", "dir", 0, n, sizeof(n));
	rf_add(&f, 1, MARU_ROOT_ID, n, S_IFDIR | 0755);
	rf_add(&f, 2, MARU_ROOT_ID, n, S_IFDIR | 0755);
	assert_int_equal(route_lookup(f.c, MARU_ROOT_ID, n, &a), 0);
	assert_int_equal(a.state, MARU_STATE_DIR);
	/* a file owned by it is not found elsewhere: the pool's error */
	rf_name_on(&f, "", "file", 0, n, sizeof(n));
	rf_add(&f, 1, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_not_equal(route_lookup(f.c, MARU_ROOT_ID, n, &a), 0);
	/* what the pools answered is not an absence */
	route_pool_heard(r, 1, -ENOENT);
	route_pool_heard(r, 1, -EIO);
	assert_false(route_pool_away(r, 1));
	route_pool_heard(r, 1, -ETIMEDOUT);
	assert_true(route_pool_away(r, 1));
	rf_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mkdir_every_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lookup_at_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_on_first_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rmdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rmdir_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_publish_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_at_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_setattr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
		cmocka_unit_test(test_found_where_placed_before),
		cmocka_unit_test(test_first_pool_away),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
