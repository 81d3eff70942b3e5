/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_ids_test.c: lib/cluster/route_ids.c, the
 * tables of a routed client. A file id carries its pool's slot + 1 in the
 * top 8 bits, a directory id none; paths join with '/' and refuse to
 * overflow; a directory path gets one id, kept until it (or a directory
 * above it) is dropped, never reused; its id per pool is kept and forgotten
 * per slot. Pools: the membership gives slots in order, a pool's client is
 * connected once, a slot never given is -ESTALE, a pool that failed to
 * connect is not tried again within ROUTE_RETRY_MS, a pool read as gone
 * is asked of the membership again before its ids are -ESTALE, and a
 * pool's restart
 * forgets its directory ids, moves the epoch of its own files and of the
 * directories (not of the other pools' files) and tells the caller of a new
 * generation.
 * Real: route*.c, members.c over loopback. Faked: etcd (fake_etcd.c) and
 * the pools (route_fixture.c's route_ops on in-memory trees).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "route_fixture.h"
#include "route_priv.h"

static void test_tags(void **state)
{
	uint64_t t = route_tag(0, 5), u = route_tag(63, ROUTE_LOCAL_MASK);

	(void)state;
	assert_int_equal(t >> 56, 1);
	assert_int_equal(t & ROUTE_LOCAL_MASK, 5);
	assert_int_equal(route_slot_of(t), 0);
	assert_int_equal(u >> 56, 64);
	assert_int_equal(route_slot_of(u), 63);
	assert_true((u & ROUTE_LOCAL_MASK) == ROUTE_LOCAL_MASK);
	assert_int_equal(route_slot_of(MARU_ROOT_ID), -1);
	assert_int_equal(route_slot_of(12345), -1);
}

static void test_join(void **state)
{
	char buf[8];

	(void)state;
	assert_int_equal(route_join("", "a", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a");
	assert_int_equal(route_join("a", "bc", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a/bc");
	assert_int_equal(route_join("abc", "defg", buf, sizeof(buf)), -ENAMETOOLONG);
	assert_int_equal(route_join("", "abcdefgh", buf, sizeof(buf)), -ENAMETOOLONG);
}

static struct route *new_tables(void)
{
	struct route *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	pthread_mutex_init(&r->lock, NULL);
	assert_int_equal(route_dirs_init(r), 0);
	return r;
}

static void free_tables(struct route *r)
{
	route_dirs_fini(r);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static void test_dirs(void **state)
{
	struct route *r = new_tables();
	uint64_t a, ab, x;
	char buf[64];

	(void)state;
	assert_int_equal(route_dir_intern(r, ""), MARU_ROOT_ID);
	a = route_dir_intern(r, "a");
	ab = route_dir_intern(r, "a/b");
	x = route_dir_intern(r, "ab");
	assert_true(a > MARU_ROOT_ID && ab > a && x > ab);
	assert_int_equal(route_slot_of(ab), -1);
	assert_int_equal(route_dir_intern(r, "a"), a);
	assert_int_equal(route_dir_find(r, "a/b"), ab);
	assert_int_equal(route_dir_find(r, "zz"), 0);
	assert_int_equal(route_dir_path(r, ab, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a/b");
	assert_int_equal(route_dir_path(r, ab, buf, 3), -ENAMETOOLONG);
	assert_int_equal(route_dir_path(r, route_tag(0, 2), buf, sizeof(buf)), -ENOTDIR);
	assert_int_equal(route_dir_path(r, 999, buf, sizeof(buf)), -ENOENT);
	/* dropping a drops a/b, not ab; the ids are never given again */
	route_dir_drop(r, "a");
	assert_int_equal(route_dir_find(r, "a"), 0);
	assert_int_equal(route_dir_find(r, "a/b"), 0);
	assert_int_equal(route_dir_find(r, "ab"), x);
	assert_int_equal(route_dir_path(r, ab, buf, sizeof(buf)), -ENOENT);
	assert_true(route_dir_intern(r, "a") > x);
	/* the root is never dropped */
	route_dir_drop(r, "");
	assert_int_equal(route_dir_find(r, ""), MARU_ROOT_ID);
	free_tables(r);
}

static void test_dir_locals(void **state)
{
	struct route *r = new_tables();
	uint64_t a = route_dir_intern(r, "a"), b = route_dir_intern(r, "b");

	(void)state;
	assert_int_equal(route_dir_local_get(r, a, 3), 0);
	route_dir_local_set(r, a, 3, 77);
	route_dir_local_set(r, a, 4, 78);
	route_dir_local_set(r, b, 3, 79);
	assert_int_equal(route_dir_local_get(r, a, 3), 77);
	assert_int_equal(route_dir_local_get(r, a, 4), 78);
	route_dir_forget_slot(r, 3);
	assert_int_equal(route_dir_local_get(r, a, 3), 0);
	assert_int_equal(route_dir_local_get(r, b, 3), 0);
	assert_int_equal(route_dir_local_get(r, a, 4), 78);
	/* unknown or file ids: nothing kept, nothing written */
	route_dir_local_set(r, route_tag(1, a), 3, 5);
	assert_int_equal(route_dir_local_get(r, route_tag(1, a), 3), 0);
	assert_int_equal(route_dir_local_get(r, 999, 3), 0);
	free_tables(r);
}

static void test_members_and_sub(void **state)
{
	struct rf f;
	struct route *r;
	struct maru_client *c1, *c2;
	unsigned int s[ROUTE_POOLS];
	int i;

	(void)state;
	rf_setup(&f, 3, 0);
	r = f.c->route;
	assert_int_equal(route_members(r, s, ROUTE_POOLS), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(s[i], (unsigned int)i);
		assert_string_equal(r->pool[i].rec.uri, f.pool[i].uri);
		assert_int_equal(f.pool[i].connects, 1);
	}
	assert_int_equal(route_sub(r, 1, &c1), 0);
	assert_int_equal(route_sub(r, 1, &c2), 0);
	assert_ptr_equal(c1, c2);
	assert_int_equal(f.pool[1].connects, 1);
	assert_ptr_equal(c1->up, f.c);
	assert_int_equal(c1->slot, 1);
	assert_int_equal(route_sub(r, 3, &c2), -ESTALE);
	assert_int_equal(route_sub(r, ROUTE_POOLS + 5, &c2), -ESTALE);
	rf_teardown(&f);
}

/*
 * A pool last read as gone but in the membership now (back from a warm
 * restart): its client is given at once, not -ESTALE until the states are
 * read again; a pool that did leave is -ESTALE.
 */
static void test_back_from_gone(void **state)
{
	struct maru_cluster_pool p[ROUTE_POOLS];
	unsigned int s[ROUTE_POOLS];
	struct maru_client *c;
	struct route *r;
	struct rf f;
	char key[128];
	int i;

	(void)state;
	rf_setup(&f, 3, 0);
	r = f.c->route;
	assert_int_equal(route_members(r, s, ROUTE_POOLS), 3);
	r->pool[1].state = ROUTE_GONE;	/* as read while it was away */
	assert_int_equal(route_sub(r, 1, &c), 0);
	assert_int_equal(r->pool[1].state, ROUTE_ACTIVE);
	snprintf(key, sizeof(key), "/marufs/kv/pools/%s", f.pool[2].uuid);
	fe_del(&f.e, key);
	for (i = 0; i < 500 && maru_cluster_pools(r->cl, p, ROUTE_POOLS) != 2; i++)
		usleep(10000);
	assert_int_equal(maru_cluster_pools(r->cl, p, ROUTE_POOLS), 2);
	r->pool[2].state = ROUTE_GONE;	/* read so: asked again, still gone */
	assert_int_equal(route_sub(r, 2, &c), -ESTALE);
	assert_int_equal(r->pool[2].state, ROUTE_GONE);
	rf_teardown(&f);
}

static void test_retry_after_failure(void **state)
{
	struct rf f;
	struct maru_client *c;
	struct route *r;

	(void)state;
	rf_setup(&f, 2, 2u);
	r = f.c->route;
	assert_int_equal(f.pool[1].connects, 0);
	/* it failed at open: not tried again within ROUTE_RETRY_MS */
	f.pool[1].down = 0;
	assert_int_equal(route_sub(r, 1, &c), -EHOSTUNREACH);
	assert_int_equal(f.pool[1].connects, 0);
	atomic_store(&r->members_ms, 0);
	r->pool[1].retry_ms = 0;
	assert_int_equal(route_sub(r, 1, &c), 0);
	assert_int_equal(f.pool[1].connects, 1);
	rf_teardown(&f);
}

struct gen_seen {
	int n;
	uint64_t old_gen, new_gen;
};

static void on_gen(void *arg, uint64_t old_gen, uint64_t new_gen)
{
	struct gen_seen *g = arg;

	g->n++;
	g->old_gen = old_gen;
	g->new_gen = new_gen;
}

static void test_pool_restart(void **state)
{
	struct gen_seen g = { 0 };
	struct maru_client *sub;
	struct route *r;
	struct rf f;
	uint64_t a;

	(void)state;
	rf_setup(&f, 2, 0);
	r = f.c->route;
	maru_client_on_generation(f.c, on_gen, &g);
	a = route_dir_intern(r, "a");
	route_dir_local_set(r, a, 0, 10);
	route_dir_local_set(r, a, 1, 11);
	assert_int_equal(route_sub(r, 0, &sub), 0);
	assert_non_null(sub->gen_cb);
	atomic_fetch_add(&sub->gen_epoch, 1);	/* as session_update() does */
	sub->gen_cb(sub->gen_arg, 1, 2);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.new_gen, g.old_gen + 1);
	assert_int_equal(route_dir_local_get(r, a, 0), 0);
	assert_int_equal(route_dir_local_get(r, a, 1), 11);
	/* only pool 0's files and the directories are stale */
	assert_int_equal(route_epoch(f.c, route_tag(0, 5)), 1);
	assert_int_equal(route_epoch(f.c, route_tag(1, 5)), 0);
	assert_int_equal(route_epoch(f.c, a), 1);
	assert_int_equal(route_epoch(f.c, MARU_ROOT_ID), 1);
	rf_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_dirs),
		cmocka_unit_test(test_dir_locals),
		cmocka_unit_test(test_members_and_sub),
		cmocka_unit_test(test_back_from_gone),
		cmocka_unit_test(test_retry_after_failure),
		cmocka_unit_test(test_pool_restart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
