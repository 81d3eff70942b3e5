/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_io_test.c: lib/cluster/route_io.c: create
 * and open go to the name's owner, calls by id (open, rewrite, pin) to the
 * id's pool with the tag taken off; the lease cache counts and clears on
 * every pool; readdir merges the pools (files of every pool tagged,
 * directories once in router ids) and resumes at any cookie without
 * losing or repeating an entry; rename within one owner is that pool's
 * rename, across owners a move (here of a symlink: made at the new owner,
 * then the old name unlinked, replacing what the new name held), a
 * directory's rename -EXDEV; while placement settles after a join, the
 * new name's binding where it was placed before is unlinked.
 * Not here: moving a regular file's bytes between pools (it needs real
 * maru_file leases; the fake pools hand out opaque files).
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

static void test_create_open_at_owner(void **state)
{
	struct rf *f = *state;
	struct maru_file *w, *r;
	char n[32];

	rf_name_on(f, "", "c", 2, n, sizeof(n));
	assert_int_equal(route_file_create(f->c, MARU_ROOT_ID, n, 0644, 0, 0, 0, 0, &w), 0);
	assert_ptr_equal(w, rf_find(f, 2, MARU_ROOT_ID, n));
	assert_null(rf_find(f, 0, MARU_ROOT_ID, n));
	assert_null(rf_find(f, 1, MARU_ROOT_ID, n));
	assert_int_equal(route_file_open(f->c, MARU_ROOT_ID, n, &r), 0);
	assert_ptr_equal(r, w);
	/* a file on a pool that does not own the name is not opened */
	rf_name_on(f, "", "o", 0, n, sizeof(n));
	rf_add(f, 1, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_equal(route_file_open(f->c, MARU_ROOT_ID, n, &r), -ENOENT);
	assert_int_equal(route_file_create(f->c, MARU_ROOT_ID, "a/b", 0644, 0, 0, 0, 0, &w),
			 -EINVAL);
}

static void test_by_id(void **state)
{
	struct rf *f = *state;
	struct maru_file *x;
	char n[32];
	uint64_t l;

	rf_name_on(f, "", "i", 1, n, sizeof(n));
	l = rf_add(f, 1, MARU_ROOT_ID, n, S_IFREG | 0644);
	assert_int_equal(route_file_open_ino(f->c, route_tag(1, l), &x), 0);
	assert_ptr_equal(x, rf_find(f, 1, MARU_ROOT_ID, n));
	assert_int_equal(route_file_rewrite(f->c, route_tag(1, l), 0, 0, &x), 0);
	assert_ptr_equal(x, rf_find(f, 1, MARU_ROOT_ID, n));
	assert_int_equal(route_file_open_ino(f->c, route_tag(0, l), &x), -ENOENT);
	assert_int_equal(route_file_open_ino(f->c, MARU_ROOT_ID, &x), -EISDIR);
	assert_int_equal(route_file_rewrite(f->c, MARU_ROOT_ID, 0, 0, &x), -EISDIR);
	assert_int_equal(route_file_open_ino(f->c, route_tag(7, l), &x), -ESTALE);
	assert_int_equal(route_pin(f->c, route_tag(1, l), 30, 0), 0);
	assert_int_equal(f->pool[1].pinned, 30);
	assert_int_equal(route_pin(f->c, route_tag(1, l), 0, 1), 30);
	assert_int_equal(route_pin(f->c, MARU_ROOT_ID, 30, 0), -EISDIR);
}

static void test_lease_cache(void **state)
{
	struct rf *f = *state;
	struct maru_file *x;
	int i;

	assert_int_equal(route_lease_cache(f->c, ROUTE_LC_COUNT, 0, NULL), 1 + 2 + 3);
	assert_int_equal(route_lease_cache(f->c, ROUTE_LC_CLEAR, 0, NULL), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(f->pool[i].lc_clears, 1);
	assert_int_equal(route_lease_cache(f->c, ROUTE_LC_TAKE, MARU_ROOT_ID, &x), -ENOENT);
	assert_int_equal(route_lease_cache(f->c, ROUTE_LC_DROP, route_tag(9, 3), NULL), -ENOENT);
	assert_int_equal(route_lease_cache(f->c, ROUTE_LC_DROP, route_tag(1, 3), NULL), 0);
}

#define MAXE 16

struct seen {
	char name[MAXE][32];
	uint64_t ino[MAXE], cookie[MAXE];
	int n, stop_at;
};

static int collect(void *arg, const struct maru_dirent *de)
{
	struct seen *s = arg;

	assert_true(s->n < MAXE);
	snprintf(s->name[s->n], sizeof(s->name[0]), "%.*s", de->namelen, de->name);
	s->ino[s->n] = de->ino;
	s->cookie[s->n] = de->cookie;
	s->n++;
	return s->n == s->stop_at;
}

static int has(const struct seen *s, const char *name)
{
	int i, k = 0;

	for (i = 0; i < s->n; i++)
		k += !strcmp(s->name[i], name);
	return k;
}

/* d holds a file of each pool and a sub-directory (on every pool) */
static uint64_t fill_dir(struct rf *f, char names[3][32])
{
	struct maru_attr d, a;
	int i;

	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "d", 0755, 0, 0, &d), 0);
	assert_int_equal(route_mkdir(f->c, d.ino, "sub", 0755, 0, 0, &a), 0);
	for (i = 0; i < 3; i++) {
		rf_name_on(f, "d", "f", i, names[i], sizeof(names[i]));
		rf_add(f, i, rf_find(f, i, MARU_ROOT_ID, "d")->ino, names[i], S_IFREG | 0644);
	}
	return d.ino;
}

static void test_readdir_merges(void **state)
{
	struct rf *f = *state;
	struct seen s = { .n = 0 };
	char names[3][32];
	struct maru_attr a;
	uint64_t d = fill_dir(f, names);
	int i, k;

	assert_int_equal(route_readdir(f->c, d, 0, collect, &s), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(has(&s, "sub"), 1);
	for (i = 0; i < 3; i++) {
		assert_int_equal(has(&s, names[i]), 1);
		for (k = 0; k < s.n; k++)
			if (!strcmp(s.name[k], names[i]))
				assert_int_equal(route_slot_of(s.ino[k]), i);
	}
	assert_int_equal(route_lookup(f->c, d, "sub", &a), 0);
	for (k = 0; k < s.n; k++)
		if (!strcmp(s.name[k], "sub"))
			assert_int_equal(s.ino[k], a.ino);
	assert_int_equal(route_readdir(f->c, route_tag(0, 2), 0, collect, &s), -ENOTDIR);
}

static void test_readdir_resumes(void **state)
{
	struct rf *f = *state;
	struct seen all = { .n = 0 }, s;
	char names[3][32];
	uint64_t d = fill_dir(f, names);
	int k, i;

	assert_int_equal(route_readdir(f->c, d, 0, collect, &all), 0);
	for (k = 1; k <= all.n; k++) {
		memset(&s, 0, sizeof(s));
		s.stop_at = k;
		assert_int_equal(route_readdir(f->c, d, 0, collect, &s), 0);
		assert_int_equal(s.n, k);
		assert_int_equal(route_readdir(f->c, d, s.cookie[k - 1], collect, &s), 0);
		assert_int_equal(s.n, all.n);
		for (i = 0; i < all.n; i++)
			assert_int_equal(has(&s, all.name[i]), 1);
	}
}

/* The first pool is out of reach: the directories are listed by the next. */
static void test_readdir_first_pool_away(void **state)
{
	struct seen s = { .n = 0 };
	struct maru_attr d, a;
	char n[32];
	struct rf f;

	(void)state;
	rf_setup(&f, 3, 1u);
	assert_int_equal(route_mkdir(f.c, MARU_ROOT_ID, "d", 0755, 0, 0, &d), 0);
	assert_int_equal(route_mkdir(f.c, d.ino, "sub", 0755, 0, 0, &a), 0);
	rf_name_on(&f, "d", "f", 2, n, sizeof(n));
	rf_add(&f, 2, rf_find(&f, 2, MARU_ROOT_ID, "d")->ino, n, S_IFREG | 0644);
	assert_int_equal(route_readdir(f.c, d.ino, 0, collect, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(has(&s, "sub"), 1);
	assert_int_equal(has(&s, n), 1);
	/* resumed after the first entry: the rest, nothing twice */
	s.n = 1;
	assert_int_equal(route_readdir(f.c, d.ino, s.cookie[0], collect, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(has(&s, "sub"), 1);
	assert_int_equal(has(&s, n), 1);
	rf_teardown(&f);
}

static void test_rename_same_owner(void **state)
{
	struct rf *f = *state;
	char a[32], b[32];
	struct maru_attr x;
	uint64_t l;

	rf_name_on(f, "", "a", 1, a, sizeof(a));
	rf_name_on(f, "", "b", 1, b, sizeof(b));
	l = rf_add(f, 1, MARU_ROOT_ID, a, S_IFREG | 0644);
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, a, MARU_ROOT_ID, b, 0, NULL), 0);
	assert_null(rf_find(f, 1, MARU_ROOT_ID, a));
	assert_int_equal(rf_find(f, 1, MARU_ROOT_ID, b)->ino, l);
	assert_int_equal(route_lookup(f->c, MARU_ROOT_ID, b, &x), 0);
	assert_int_equal(x.ino, route_tag(1, l));
	assert_int_equal(atomic_load(&f->c->route->renames_local), 1);
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, a, MARU_ROOT_ID, b, 0, NULL),
			 -ENOENT);
}

static void test_rename_across_moves(void **state)
{
	struct rf *f = *state;
	struct maru_attr x, d;
	struct rf_ent *e;
	char a[32], b[32];

	rf_name_on(f, "", "la", 0, a, sizeof(a));
	rf_name_on(f, "", "lb", 2, b, sizeof(b));
	assert_int_equal(route_symlink(f->c, MARU_ROOT_ID, a, "/t", 0, 0, &x), 0);
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, a, MARU_ROOT_ID, b, 0, NULL), 0);
	assert_null(rf_find(f, 0, MARU_ROOT_ID, a));
	e = rf_find(f, 2, MARU_ROOT_ID, b);
	assert_non_null(e);
	assert_true(S_ISLNK(e->mode));
	assert_string_equal(e->target, "/t");
	assert_int_equal(atomic_load(&f->c->route->renames_moved), 1);
	assert_int_equal(route_mkdir(f->c, MARU_ROOT_ID, "dd", 0755, 0, 0, &d), 0);
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, "dd", MARU_ROOT_ID, "ee", 0, NULL),
			 -EXDEV);
}

/* A file still being written (pending) is never copied to another pool. */
static void test_rename_across_pending(void **state)
{
	struct rf *f = *state;
	char a[32], b[32], c[32];
	uint64_t l;

	rf_name_on(f, "", "pa", 0, a, sizeof(a));
	rf_name_on(f, "", "pb", 2, b, sizeof(b));
	rf_name_on(f, "", "pc", 0, c, sizeof(c));
	l = rf_add(f, 0, MARU_ROOT_ID, a, S_IFREG | 0644);
	rf_find(f, 0, MARU_ROOT_ID, a)->state = MARU_STATE_PENDING;
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, a, MARU_ROOT_ID, b, 0, NULL),
			 -EBUSY);
	assert_int_equal(rf_find(f, 0, MARU_ROOT_ID, a)->ino, l);
	assert_null(rf_find(f, 2, MARU_ROOT_ID, b));
	assert_int_equal(atomic_load(&f->c->route->renames_moved), 0);
	/* within its pool it moves as ever */
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, a, MARU_ROOT_ID, c, 0, NULL), 0);
	assert_int_equal(rf_find(f, 0, MARU_ROOT_ID, c)->ino, l);
}

/* rename(2) replaces: a symlink moved onto an existing name at its owner */
static void test_rename_across_replaces(void **state)
{
	struct rf *f = *state;
	struct maru_attr x;
	struct rf_ent *e;
	char a[32], b[32];
	int i, k;

	rf_name_on(f, "", "ra", 0, a, sizeof(a));
	rf_name_on(f, "", "rb", 2, b, sizeof(b));
	assert_int_equal(route_symlink(f->c, MARU_ROOT_ID, a, "/t2", 0, 0, &x), 0);
	rf_add(f, 2, MARU_ROOT_ID, b, S_IFREG | 0644);
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, a, MARU_ROOT_ID, b,
					  MARU_RENAME_NOREPLACE, NULL), -EEXIST);
	assert_non_null(rf_find(f, 0, MARU_ROOT_ID, a));
	assert_true(S_ISREG(rf_find(f, 2, MARU_ROOT_ID, b)->mode));
	assert_int_equal(route_rename_seq(f->c, MARU_ROOT_ID, a, MARU_ROOT_ID, b, 0, NULL), 0);
	assert_null(rf_find(f, 0, MARU_ROOT_ID, a));
	e = rf_find(f, 2, MARU_ROOT_ID, b);
	assert_non_null(e);
	assert_true(S_ISLNK(e->mode));
	assert_string_equal(e->target, "/t2");
	/* nothing else left behind on any pool's root */
	for (i = 0; i < 3; i++)
		for (k = 0; k < RF_ENTS; k++)
			if (f->pool[i].e[k].used && f->pool[i].e[k].parent == MARU_ROOT_ID)
				assert_string_equal(f->pool[i].e[k].name, b);
}

/* While placement settles, the new name's binding where it was placed before goes. */
static void test_rename_drops_shadow(void **state)
{
	char n[32], src[32];
	struct maru_attr a;
	struct rf f;
	int j, prev = -1;
	uint64_t l;

	(void)state;
	rf_setup(&f, 2, 0);
	j = rf_join(&f, (int64_t)time(NULL));
	rf_moved_name(&f, j, n, sizeof(n), &prev);
	rf_name_on(&f, "", "src", j, src, sizeof(src));
	rf_add(&f, prev, MARU_ROOT_ID, n, S_IFREG | 0644);
	l = rf_add(&f, j, MARU_ROOT_ID, src, S_IFREG | 0644);
	assert_int_equal(route_rename_seq(f.c, MARU_ROOT_ID, src, MARU_ROOT_ID, n, 0, NULL), 0);
	assert_int_equal(rf_find(&f, j, MARU_ROOT_ID, n)->ino, l);
	assert_null(rf_find(&f, prev, MARU_ROOT_ID, n));
	assert_int_equal(route_lookup(f.c, MARU_ROOT_ID, n, &a), 0);
	assert_int_equal(a.ino, route_tag((unsigned int)j, l));
	rf_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_open_at_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_by_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_merges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_resumes, setup, teardown),
		cmocka_unit_test(test_readdir_first_pool_away),
		cmocka_unit_test_setup_teardown(test_rename_same_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_across_moves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_across_replaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_across_pending, setup, teardown),
		cmocka_unit_test(test_rename_drops_shadow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
