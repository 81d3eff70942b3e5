/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_hint_test.c: lib/cluster/route_hint.c,
 * through the public maru_hint(), maru_hint_actions() and maru_ns_usage()
 * of a routed client: the actions offered are any pool's; a hint's ranges
 * reach the pools holding their versions, each with that pool's own ids,
 * in one call per pool; a pool that does not take the action is left out,
 * and a hint no pool takes is EOPNOTSUPP; a hint without ranges reaches
 * every pool that takes it; a directory's id is EISDIR. A directory's
 * usage is the sum over the pools (quota none when one pool has none), a
 * pool out of reach left out.
 * Real: route*.c, members.c over loopback, lib/hint.c and lib/stats.c.
 * Faked: etcd (fake_etcd.c) and the pools (route_fixture.c's route_ops).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cmocka.h>

#include "route_fixture.h"
#include "route_priv.h"

#define BIT(a)	(1u << (a))

/* A file on pool i; its tagged id (as the routed client hands it out). */
static uint64_t file_on(struct rf *f, int i, const char *prefix, uint64_t *local)
{
	struct maru_attr a;
	char n[32];

	rf_name_on(f, "", prefix, i, n, sizeof(n));
	*local = rf_add(f, i, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_equal(maru_lookup(f->c, MARU_ROOT_ID, n, &a), 0);
	assert_int_equal(route_slot_of(a.ino), i);
	return a.ino;
}

static void test_ranges_to_owners(void **state)
{
	uint64_t l0, l1, l2, id0, id1, id2;
	struct maru_hint_range v[3];
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 0);
	f.pool[0].hint_actions = BIT(MARU_HINT_READ) | BIT(MARU_HINT_READ_END);
	f.pool[2].hint_actions = BIT(MARU_HINT_READ);
	assert_int_equal(maru_hint_actions(f.c), BIT(MARU_HINT_READ) | BIT(MARU_HINT_READ_END));
	id0 = file_on(&f, 0, "a", &l0);
	id1 = file_on(&f, 1, "b", &l1);
	id2 = file_on(&f, 2, "c", &l2);

	/* ranges of pools 2, 0, 2: pool 2 gets both of its own, pool 1 none */
	v[0] = (struct maru_hint_range){ id2, 0, 4096 };
	v[1] = (struct maru_hint_range){ id0, 8192, 0 };
	v[2] = (struct maru_hint_range){ id2, 4096, 4096 };
	assert_int_equal(maru_hint(f.c, MARU_HINT_READ, "req1", v, 3), 0);
	assert_int_equal(f.pool[2].hints, 1);
	assert_int_equal(f.pool[2].nhint, 2);
	assert_int_equal(f.pool[2].hint[0].ino, l2);
	assert_int_equal(f.pool[2].hint[1].ino, l2);
	assert_int_equal(f.pool[2].hint[1].off, 4096);
	assert_int_equal(f.pool[0].hints, 1);
	assert_int_equal(f.pool[0].nhint, 1);
	assert_int_equal(f.pool[0].hint[0].ino, l0);
	assert_int_equal(f.pool[0].hint[0].off, 8192);
	assert_int_equal(f.pool[1].hints, 0);

	/* only pool 1's version, and pool 1 takes no hints */
	v[0] = (struct maru_hint_range){ id1, 0, 0 };
	assert_int_equal(maru_hint(f.c, MARU_HINT_READ, "req1", v, 1), -EOPNOTSUPP);
	/* a mix: pool 1 left out, the others' sent */
	v[1] = (struct maru_hint_range){ id0, 0, 0 };
	assert_int_equal(maru_hint(f.c, MARU_HINT_READ, "req1", v, 2), 0);
	assert_int_equal(f.pool[0].hints, 2);
	assert_int_equal(f.pool[1].hints, 0);

	/* no ranges: every pool that takes it */
	assert_int_equal(maru_hint(f.c, MARU_HINT_READ_END, "req1", NULL, 0), 0);
	assert_int_equal(f.pool[0].hints, 3);
	assert_int_equal(f.pool[2].hints, 1);
	assert_int_equal(maru_hint(f.c, MARU_HINT_PROMOTE, "req1", NULL, 0), -EOPNOTSUPP);

	/* a directory has no bytes; bad arguments stay EINVAL */
	v[0] = (struct maru_hint_range){ MARU_ROOT_ID, 0, 0 };
	assert_int_equal(maru_hint(f.c, MARU_HINT_READ, "req1", v, 1), -EISDIR);
	assert_int_equal(maru_hint(f.c, MARU_HINT_READ, "", v, 1), -EINVAL);
	(void)l1;
	rf_teardown(&f);
}

static void test_usage_sums(void **state)
{
	struct maru_ns_usage u;
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 0);
	f.pool[0].quota = 100;
	f.pool[1].quota = 200;
	f.pool[2].quota = 300;
	assert_int_equal(maru_ns_usage(f.c, MARU_ROOT_ID, &u), 0);
	assert_string_equal(u.tenant, "t");
	assert_int_equal(u.quota, 600);
	assert_int_equal(u.used, 1 + 11 + 21);
	assert_int_equal(u.enospc, 0 + 1 + 2);
	/* one pool without a quota for the tenant: no quota in all */
	f.pool[1].quota = 0;
	assert_int_equal(maru_ns_usage(f.c, MARU_ROOT_ID, &u), 0);
	assert_int_equal(u.quota, 0);
	/* a file's id is not a directory; an unknown directory is ENOENT */
	assert_int_equal(maru_ns_usage(f.c, route_tag(0, 5), &u), -ENOTDIR);
	assert_int_equal(maru_ns_usage(f.c, 4242, &u), -ENOENT);
	rf_teardown(&f);
}

static void test_usage_pool_away(void **state)
{
	struct maru_ns_usage u;
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 2u);
	f.pool[0].quota = 100;
	f.pool[2].quota = 300;
	assert_int_equal(maru_ns_usage(f.c, MARU_ROOT_ID, &u), 0);
	assert_int_equal(u.quota, 400);
	assert_int_equal(u.used, 1 + 21);
	rf_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges_to_owners),
		cmocka_unit_test(test_usage_sums),
		cmocka_unit_test(test_usage_pool_away),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
