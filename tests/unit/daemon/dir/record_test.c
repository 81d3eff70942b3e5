/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/record_test.c: changes as journal records
 * (daemon/dir/record.c). Each namespace change writes the record kind a
 * restart needs, with the right id and name: mkdir a JR_DIR, publish and
 * replace a JR_FILE, setattr a JR_ATTR, rename a JR_RENAME, link a
 * JR_LINK, symlink and mknod a JR_SPECIAL, the unlink of one of several
 * names a JR_UNNAME, unlink and rmdir a JR_REMOVE; an eviction of a
 * linked version one JR_REMOVE for all its names; pending versions write
 * nothing; and the owner table's walk lists the live items, root first,
 * extra names last.
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

#include "../persist/journal_fixture.h"
#include "proto.h"

#define ROOT	DIR_ROOT_ID

struct log {
	uint32_t type[64];
	uint64_t id[64];
	char name[64][16];
	int n;
};

static int note(void *arg, uint32_t type, const void *body, uint32_t blen)
{
	struct log *l = arg;
	struct persist_item it;

	assert_int_equal(persist_dec(type, body, blen, &it), 0);
	assert_true(l->n < 64);
	l->type[l->n] = type;
	l->id[l->n] = it.id;
	memset(l->name[l->n], 0, 16);
	if (it.at.nlen && it.at.nlen < 16)
		memcpy(l->name[l->n], it.at.name, it.at.nlen);
	l->n++;
	return 0;
}

/* The records appended since the checkpoint, after the first `skip`. */
static void records(struct wfx *f, struct log *l)
{
	struct journal_scan sc;

	memset(l, 0, sizeof(*l));
	assert_int_equal(persist_journal_scan(f->j, note, l, &sc), 0);
}

static void expect(const struct log *l, int i, uint32_t type, uint64_t id, const char *name)
{
	assert_true(i < l->n);
	assert_int_equal(l->type[i], type);
	assert_int_equal(l->id[i], id);
	if (name)
		assert_string_equal(l->name[i], name);
}

static void test_each_change_its_record(void **state)
{
	struct dir_setattr sa = { .mask = SETATTR_MODE, .mode = 0600 };
	struct dir_attr at;
	uint64_t d, a, s, p;
	struct log l;
	struct wfx f;
	int i;

	wnew(&f, 1 << 20, 4 << 20, 1);
	records(&f, &l);
	i = l.n;				/* the checkpoint: JR_IDS, root JR_ATTR */
	assert_int_equal(i, 2);
	assert_int_equal(dir_mkdir(f.d, ROOT, "d", 1, 0755, 0, 0, &at), 0);
	d = at.ino;
	a = wfx_put(&f, d, "a", "A");
	assert_int_equal(dir_create(f.d, f.s, ROOT, "pend", 4, 0, 0, 0644, 0, 0, 0, &at), 0);
	p = at.ino;
	assert_int_equal(dir_setattr(f.d, f.s, a, &sa, &at), 0);
	assert_int_equal(dir_rename(f.d, f.s, d, "a", 1, ROOT, "b", 1, 0), 0);
	assert_int_equal(dir_link(f.d, f.s, a, ROOT, "c", 1, &at), 0);
	assert_int_equal(dir_symlink(f.d, f.s, ROOT, "s", 1, "b", 1, 0, 0, &at), 0);
	s = at.ino;
	assert_int_equal(dir_mknod(f.d, f.s, ROOT, "n", 1, S_IFIFO | 0600, 0, 0, 0, &at), 0);
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "c", 1), 0);
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "s", 1), 0);
	assert_int_equal(dir_rmdir(f.d, ROOT, "d", 1), 0);
	records(&f, &l);
	expect(&l, i++, JR_DIR, d, "d");
	expect(&l, i++, JR_FILE, a, "a");
	expect(&l, i++, JR_ATTR, a, NULL);
	expect(&l, i++, JR_RENAME, a, "a");
	expect(&l, i++, JR_LINK, a, "c");
	expect(&l, i++, JR_SPECIAL, s, "s");
	expect(&l, i++, JR_SPECIAL, s + 1, "n");
	expect(&l, i++, JR_UNNAME, a, "c");
	/* the link's going changes the version's ctime */
	while (i < l.n && l.type[i] == JR_ATTR)
		i++;
	expect(&l, i++, JR_REMOVE, s, NULL);
	expect(&l, i++, JR_REMOVE, d, NULL);
	assert_int_equal(i, l.n);		/* nothing for the pending version */
	assert_int_equal(dir_abandon(f.d, f.s, p), 0);
	wclose(&f);
	free(f.pool);
}

static int walked(void *arg, const struct persist_item *it)
{
	struct log *l = arg;

	assert_true(l->n < 64);
	l->type[l->n] = it->type;
	l->id[l->n++] = it->id;
	return 0;
}

static void test_walk_order(void **state)
{
	struct persist_owner own;
	struct dir_attr at;
	uint64_t a, d;
	struct log l = { .n = 0 };
	struct wfx f;

	wnew(&f, 1 << 20, 4 << 20, 1);
	a = wfx_put(&f, ROOT, "a", "A");
	assert_int_equal(dir_link(f.d, f.s, a, ROOT, "a2", 2, &at), 0);
	assert_int_equal(dir_mkdir(f.d, ROOT, "d", 1, 0755, 0, 0, &at), 0);
	d = at.ino;
	wfx_put(&f, d, "inner", "I");
	dir_persist_owner(f.d, &own);
	pthread_mutex_lock(own.lock);
	assert_int_equal(own.ops->walk_items(own.dir, walked, &l), 0);
	assert_int_equal(own.ops->id_next(own.dir), d + 2);
	pthread_mutex_unlock(own.lock);
	assert_int_equal(l.n, 5);
	expect(&l, 0, JR_ATTR, ROOT, NULL);
	expect(&l, 1, JR_FILE, a, NULL);
	expect(&l, 2, JR_DIR, d, NULL);
	expect(&l, 3, JR_FILE, d + 1, NULL);
	expect(&l, 4, JR_LINK, a, NULL);
	wclose(&f);
	free(f.pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_change_its_record),
		cmocka_unit_test(test_walk_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
