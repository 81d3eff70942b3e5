/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_test.c: lib/cluster/route.c, the life of a
 * routed client: only maru+etcd:// URIs are routed; opening connects every
 * pool and fails only when none answers; a bad etcd query or a password
 * file others can read is refused; pool_info is the cluster as one pool
 * (every pool's capacity, the cluster URI); pool_at gives each pool's
 * record, state and facts, and sees a pool drain and leave; the walk
 * finds a directory on one pool, makes what it lacks when asked, and
 * stops at a file; a pool's attributes come back in the router's ids.
 * Real: route*.c, members.c over loopback. Faked: etcd (fake_etcd.c) and
 * the pools (route_fixture.c's route_ops on in-memory trees).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "route_fixture.h"
#include "route_priv.h"

static void test_uri(void **state)
{
	(void)state;
	assert_true(route_uri("maru+etcd://127.0.0.1:2379/kv"));
	assert_false(route_uri("maru://127.0.0.1:7000"));
	assert_false(route_uri("maru+etcd:/x"));
	assert_false(route_uri(NULL));
}

static void test_open(void **state)
{
	struct rf f;
	int i;

	(void)state;
	rf_setup(&f, 3, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(f.pool[i].connects, 1);
	assert_true(route_uri(f.c->uri));
	assert_ptr_equal(f.c->opts.uri, f.c->uri);
	rf_teardown(&f);
}

static int open_with(struct rf *f, const char *query, struct maru_client **c)
{
	struct maru_client_opts o;
	char uri[256], ep[64];

	fe_endpoint(&f->e, ep, sizeof(ep));
	snprintf(uri, sizeof(uri), "maru+etcd://%s/kv%s", ep, query);
	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	return route_client_new(&o, &f->ops, c);
}

static void test_open_refused(void **state)
{
	char pw[] = "/tmp/route_test_pwXXXXXX";
	struct maru_client *c = NULL;
	char q[128];
	struct rf f;
	int fd;

	(void)state;
	rf_setup(&f, 2, 0);
	assert_int_equal(open_with(&f, "?etcd_bogus=1", &c), -EINVAL);
	assert_int_equal(open_with(&f, "?etcd_ca", &c), -EINVAL);
	fd = mkstemp(pw);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "secret\n", 7), 7);
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
	snprintf(q, sizeof(q), "?etcd_password_file=%s", pw);
	assert_int_equal(open_with(&f, q, &c), -EACCES);
	unlink(pw);
	assert_int_equal(open_with(&f, q, &c), -ENOENT);
	/* no pool answers */
	f.pool[0].down = f.pool[1].down = 1;
	assert_int_equal(open_with(&f, "", &c), -ECONNREFUSED);
	/* one does: open */
	f.pool[1].down = 0;
	assert_int_equal(open_with(&f, "", &c), 0);
	route_client_free(c);
	rf_teardown(&f);
}

static void test_pool_info(void **state)
{
	struct maru_pool_info pi;
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 0);
	assert_int_equal(route_pool_info(f.c, &pi), 0);
	assert_int_equal(pi.size, 1000 + 2000 + 3000);
	assert_string_equal(pi.uri, f.c->uri);
	assert_string_equal(pi.path, "");
	assert_int_equal(pi.uuid[0], 1);	/* the first pool's */
	assert_int_equal(pi.generation, 1);
	rf_teardown(&f);
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait (up to 3 s: members.c reads etcd each second) for pool i's state. */
static int state_of(struct rf *f, unsigned int i, int want)
{
	int st = -1, k;

	for (k = 0; k < 60 && st != want; k++) {
		if (k)
			nap_ms(50);
		assert_int_equal(route_pool_at(f->c, i, NULL, NULL, &st), 0);
	}
	return st;
}

static void test_pool_at(void **state)
{
	struct maru_cluster_pool m;
	struct maru_pool_info pi;
	struct maru_client *sub;
	struct rf f;
	int st;

	(void)state;
	rf_setup(&f, 3, 0);
	assert_int_equal(route_pool_at(f.c, 1, &m, &pi, &st), 0);
	assert_string_equal(m.uuid, f.pool[1].uuid);
	assert_string_equal(m.uri, f.pool[1].uri);
	assert_int_equal(m.capacity, 2000);
	assert_int_equal(st, ROUTE_ACTIVE);
	assert_int_equal(pi.uuid[0], 2);
	assert_int_equal(route_pool_at(f.c, 3, &m, &pi, &st), -ENOENT);
	rf_put(&f, 1, "draining");
	assert_int_equal(state_of(&f, 1, ROUTE_DRAINING), ROUTE_DRAINING);
	fe_del(&f.e, "/marufs/kv/pools/00000002-aaaa-bbbb-cccc-dddddddddddd");
	assert_int_equal(state_of(&f, 2, ROUTE_GONE), ROUTE_GONE);
	/* its ids are stale */
	atomic_store(&((struct route *)f.c->route)->members_ms, 0);
	assert_int_equal(route_sub(f.c->route, 2, &sub), -ESTALE);
	rf_teardown(&f);
}

static void test_walk(void **state)
{
	struct route *r;
	uint64_t id, l, p;
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 0);
	r = f.c->route;
	id = route_dir_intern(r, "p/q");
	assert_int_equal(route_dir_on(r, MARU_ROOT_ID, 2, 0, &l), 0);
	assert_int_equal(l, MARU_ROOT_ID);
	/* pool 2 lacks p/q: not made unless asked */
	assert_int_equal(route_dir_on(r, id, 2, 0, &l), -ENOENT);
	assert_null(rf_find(&f, 2, MARU_ROOT_ID, "p"));
	assert_int_equal(route_dir_on(r, id, 2, 1, &l), 0);
	p = rf_find(&f, 2, MARU_ROOT_ID, "p")->ino;
	assert_int_equal(rf_find(&f, 2, p, "q")->ino, l);
	assert_int_equal(route_dir_local_get(r, id, 2), l);
	/* pool 1 has a file p: the walk stops there */
	rf_add(&f, 1, MARU_ROOT_ID, "p", S_IFREG | 0644);
	assert_int_equal(route_dir_on(r, id, 1, 1, &l), -ENOTDIR);
	/* pool 0 has both already: found, nothing made */
	p = rf_add(&f, 0, MARU_ROOT_ID, "p", S_IFDIR | 0755);
	p = rf_add(&f, 0, p, "q", S_IFDIR | 0755);
	assert_int_equal(route_dir_on(r, id, 0, 0, &l), 0);
	assert_int_equal(l, p);
	rf_teardown(&f);
}

static void test_fix_attr(void **state)
{
	struct maru_attr a = { .ino = 42, .state = MARU_STATE_DIR };
	struct route *r;
	struct rf f;
	uint64_t id;

	(void)state;
	rf_setup(&f, 2, 0);
	r = f.c->route;
	route_fix_attr(r, 1, MARU_ROOT_ID, "x/y", &a);
	id = route_dir_find(r, "x/y");
	assert_true(id > MARU_ROOT_ID);
	assert_int_equal(a.ino, id);
	assert_int_equal(a.parent, MARU_ROOT_ID);
	assert_int_equal(route_dir_local_get(r, id, 1), 42);
	a.ino = 43;
	a.state = MARU_STATE_PUBLISHED;
	route_fix_attr(r, 1, id, "x/y/f", &a);
	assert_int_equal(a.ino, route_tag(1, 43));
	assert_int_equal(a.parent, id);
	rf_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uri),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_open_refused),
		cmocka_unit_test(test_pool_info),
		cmocka_unit_test(test_pool_at),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_fix_attr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
