/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_link_test.c: lib/cluster/route_link.c:
 * symlinks and special files are made at their name's owner (which gets
 * the directory made if it lacked it) and come back with the owner's tag;
 * readlink goes to the id's pool; a hard link is made only when the new
 * name's owner is the version's pool (-EXDEV otherwise, nothing made) and
 * never to a directory; the existence check answers per name across pools.
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

#include <cmocka.h>

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

static void test_symlink_readlink(void **state)
{
	struct rf *f = *state;
	struct maru_attr a;
	char n[32], buf[64];
	int o;

	rf_name_on(f, "", "s", 2, n, sizeof(n));
	assert_int_equal(route_symlink(f->c, MARU_ROOT_ID, n, "/to/there", 0, 0, &a), 0);
	assert_int_equal(route_slot_of(a.ino), 2);
	assert_int_equal(a.parent, MARU_ROOT_ID);
	assert_non_null(rf_find(f, 2, MARU_ROOT_ID, n));
	for (o = 0; o < 2; o++)
		assert_null(rf_find(f, o, MARU_ROOT_ID, n));
	assert_int_equal(route_readlink(f->c, a.ino, buf, sizeof(buf)), 9);
	assert_string_equal(buf, "/to/there");
	assert_int_equal(route_readlink(f->c, MARU_ROOT_ID, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(route_symlink(f->c, MARU_ROOT_ID, n, "x", 0, 0, &a), -EEXIST);
}

static void test_new_name_makes_dir_on_owner(void **state)
{
	struct rf *f = *state;
	struct maru_attr d, a;
	struct rf_ent *e;
	char n[32];

	/* only the first pool has "sub" */
	rf_add(f, 0, MARU_ROOT_ID, "sub", S_IFDIR | 0755);
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, "sub", &d), 0);
	rf_name_on(f, "sub", "n", 1, n, sizeof(n));
	assert_int_equal(route_mknod(f->c, d.ino, n, S_IFIFO | 0600, 0, 0, 0, &a), 0);
	assert_int_equal(route_slot_of(a.ino), 1);
	assert_int_equal(a.parent, d.ino);
	e = rf_find(f, 1, MARU_ROOT_ID, "sub");
	assert_non_null(e);
	assert_true(S_ISDIR(e->mode));
	e = rf_find(f, 1, e->ino, n);
	assert_non_null(e);
	assert_true(S_ISFIFO(e->mode));
}

static void test_hard_link(void **state)
{
	struct rf *f = *state;
	char n[32], same[32], other[32];
	struct maru_attr a;
	uint64_t l;
	struct rf_ent *e;

	rf_name_on(f, "", "h", 1, n, sizeof(n));
	rf_name_on(f, "", "same", 1, same, sizeof(same));
	rf_name_on(f, "", "other", 0, other, sizeof(other));
	l = rf_add(f, 1, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_equal(route_link(f->c, route_tag(1, l), MARU_ROOT_ID, same, &a), 0);
	assert_int_equal(a.ino, route_tag(1, l));
	e = rf_find(f, 1, MARU_ROOT_ID, same);
	assert_non_null(e);
	assert_int_equal(e->ino, l);
	assert_int_equal(route_link(f->c, route_tag(1, l), MARU_ROOT_ID, other, &a), -EXDEV);
	assert_null(rf_find(f, 0, MARU_ROOT_ID, other));
	assert_null(rf_find(f, 1, MARU_ROOT_ID, other));
	assert_int_equal(route_link(f->c, MARU_ROOT_ID, MARU_ROOT_ID, "z", &a), -EPERM);
}

static void test_exists(void **state)
{
	struct rf *f = *state;
	char n0[32], n1[32], n2[32], m2[32];
	const char *names[4] = { n0, n1, n2, m2 };
	uint8_t out[4] = { 9, 9, 9, 9 };

	rf_name_on(f, "", "e", 0, n0, sizeof(n0));
	rf_name_on(f, "", "e", 1, n1, sizeof(n1));
	rf_name_on(f, "", "e", 2, n2, sizeof(n2));
	rf_name_on(f, "", "miss", 2, m2, sizeof(m2));
	rf_add(f, 0, MARU_ROOT_ID, n0, S_IFREG | 0644);
	rf_add(f, 2, MARU_ROOT_ID, n2, S_IFREG | 0644);
	/* on a pool that does not own it: not there */
	rf_add(f, 0, MARU_ROOT_ID, n1, S_IFREG | 0644);
	assert_int_equal(route_exists(f->c, MARU_ROOT_ID, names, 4, out), 0);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[2], 1);
	assert_int_equal(out[3], 0);
	assert_int_equal(route_exists(f->c, route_tag(0, 5), names, 4, out), -ENOTDIR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_symlink_readlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_name_makes_dir_on_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exists, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
