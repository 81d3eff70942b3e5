/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/ns_test.c: the namespace calls (daemon/dir/ns.c):
 * mkdir, rmdir, name rules, unlink of pending names, rename of files,
 * directories and pending versions, setattr and paginated readdir.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fixture.h"


/* ---- namespace ---- */

static void test_mkdir_nested(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t a, b, c, e;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "model_r0");
	b = do_mkdir(&f, a, "abc");
	c = do_mkdir(&f, b, "de_g0");
	e = do_mkdir(&f, c, "leaf");
	assert_true(a >= 2 && a < b && b < c && c < e);
	assert_int_equal(lookup(&f, NULL, c, "leaf", &at), 0);
	assert_int_equal(at.ino, e);
	assert_int_equal(at.parent, c);
	assert_int_equal(at.mode, S_IFDIR | 0755);
	assert_int_equal(at.uid, 1);
	assert_int_equal(at.gid, 2);
	assert_int_equal(dir_getattr(f.d, NULL, a, &at), 0);
	assert_int_equal(at.nlink, 3);
	assert_int_equal(at.size, 1);
	assert_int_equal(dir_mkdir(f.d, a, "abc", 3, 0755, 0, 0, &at), -EEXIST);
	assert_int_equal(dir_mkdir(f.d, 999, "x", 1, 0755, 0, 0, &at), -ENOENT);
	put_file(&f, f.s1, a, "file", "x");
	assert_int_equal(lookup(&f, NULL, a, "file", &at), 0);
	assert_int_equal(dir_mkdir(f.d, at.ino, "x", 1, 0755, 0, 0, NULL), -ENOTDIR);
	assert_int_equal(dir_mkdir(f.d, a, "file", 4, 0755, 0, 0, NULL), -EEXIST);
	assert_int_equal(dir_exists(f.d, b, "de_g0", 5), 1);
	assert_int_equal(dir_exists(f.d, b, "nope", 4), 0);
	assert_int_equal(stats(&f).dirs, 4);
	fx_close(&f);
}

/* dir_exists_n answers like dir_exists, name by name, in one call. */
static void test_exists_n(void **state)
{
	const struct dir_name names[] = { { "file", 4 }, { "nope", 4 }, { "sub", 3 } };
	const struct dir_name bad[] = { { "file", 4 }, { "a/b", 3 }, { "sub", 3 } };
	uint8_t yes[3];
	struct dir_attr at;
	struct fx f;

	fx_open(&f, 8, DIR_EVICT_LRU, 0);
	put_file(&f, f.s1, ROOT, "file", "x");
	assert_int_equal(dir_mkdir(f.d, ROOT, "sub", 3, 0755, 0, 0, &at), 0);
	memset(yes, 7, sizeof(yes));
	assert_int_equal(dir_exists_n(f.d, ROOT, names, 3, yes), 0);
	assert_int_equal(yes[0], 1);
	assert_int_equal(yes[1], 0);
	assert_int_equal(yes[2], 1);
	/* A missing or non-directory parent: every name is "no". */
	assert_int_equal(dir_exists_n(f.d, 999, names, 3, yes), 0);
	assert_int_equal(yes[0] | yes[1] | yes[2], 0);
	assert_int_equal(dir_exists_n(f.d, ROOT, names, 0, yes), 0);
	/* A bad name stops the walk with its error, the names before answered. */
	memset(yes, 7, sizeof(yes));
	assert_int_equal(dir_exists(f.d, ROOT, "a/b", 3), -EINVAL);
	assert_int_equal(dir_exists_n(f.d, ROOT, bad, 3, yes), -EINVAL);
	assert_int_equal(yes[0], 1);
	assert_int_equal(yes[2], 7);
	fx_close(&f);
}


static void test_rmdir(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t a;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "a");
	do_mkdir(&f, a, "sub");
	assert_int_equal(dir_rmdir(f.d, ROOT, "a", 1), -ENOTEMPTY);
	assert_int_equal(dir_rmdir(f.d, a, "sub", 3), 0);
	assert_int_equal(dir_rmdir(f.d, a, "sub", 3), -ENOENT);
	put_file(&f, f.s1, a, "f", "data");
	assert_int_equal(dir_rmdir(f.d, a, "f", 1), -ENOTDIR);
	assert_int_equal(dir_rmdir(f.d, ROOT, "a", 1), -ENOTEMPTY);
	assert_int_equal(dir_unlink(f.d, NULL, a, "f", 1), 0);
	assert_int_equal(dir_rmdir(f.d, ROOT, "a", 1), 0);
	assert_int_equal(dir_getattr(f.d, NULL, a, &at), -ENOENT);
	assert_int_equal(dir_rmdir(f.d, ROOT, "..", 2), -EINVAL);
	assert_int_equal(stats(&f).dirs, 0);
	fx_close(&f);
}


static void test_names(void **state)
{
	struct fx f;
	char longname[PROTO_NAME_MAX + 2];
	struct dir_event *ev = malloc(sizeof(*ev));
	struct dir_attr at;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	memset(longname, 'n', sizeof(longname));
	assert_int_equal(dir_mkdir(f.d, ROOT, longname, 255, 0755, 0, 0, &at), 0);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, longname, 255, &at), 0);
	assert_int_equal(dir_create(f.d, f.s1, at.ino, longname, 255, 0, 0, 0644, 0, 0,
				    0, &at), 0);
	assert_int_equal(dir_mkdir(f.d, ROOT, longname, 256, 0755, 0, 0, &at), -ENAMETOOLONG);
	assert_int_equal(dir_mkdir(f.d, ROOT, "", 0, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, ".", 1, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "..", 2, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "a/b", 3, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "a\0b", 3, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "x/y", 3, 0, 0, 0644, 0, 0, 0, &at),
			 -EINVAL);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "..", 2, &at), -EINVAL);
	assert_int_equal(dir_rename(f.d, NULL, ROOT, longname, 255, ROOT, "a/", 2, 0),
			 -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "...", 3, 0755, 0, 0, &at), 0);
	/* Names of 255 bytes survive into event paths. */
	assert_int_equal(dir_events_wait(f.d, 0, ev, 1, 0), 1);
	assert_int_equal(strlen(ev->path), 256);
	assert_memory_equal(ev->path + 1, longname, 255);
	assert_int_equal(strlen(ev->name), 255);
	free(ev);
	fx_close(&f);
}


static void test_unlink_detaches_pending(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t v, dirid;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	/* Owner unlinks the name it is writing: publish is refused, the
	 * version stays pending (its bytes readable) until abandoned. */
	v = do_create(&f, f.s1, ROOT, "p", 0, 100);
	do_pwrite(&f, f.s1, v, "kept", 4, 0);
	assert_int_equal(dir_unlink(f.d, f.s2, ROOT, "p", 1), -ENOENT);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "p", 1), 0);
	assert_int_equal(lookup(&f, f.s1, ROOT, "p", &at), -ENOENT);
	assert_int_equal(dir_publish(f.d, f.s1, v, 4, 0, &at, NULL), -ENOENT);
	assert_int_equal(dir_getattr(f.d, f.s1, v, &at), 0);
	assert_int_equal(at.state, DIR_ST_PENDING);
	{
		uint8_t b[8];

		assert_int_equal(do_read(&f, f.s1, v, b, sizeof(b)), 4);
		assert_memory_equal(b, "kept", 4);
	}
	assert_int_not_equal(stats(&f).pending, 0);
	assert_int_equal(dir_abandon(f.d, f.s1, v), 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v, &at), -ENOENT);
	assert_int_equal(stats(&f).pending, 0);
	/* Another session's unlink of the published name does not detach it. */
	put_file(&f, f.s2, ROOT, "q", "v1");
	v = do_create(&f, f.s1, ROOT, "q", 0, 0);
	assert_int_equal(dir_unlink(f.d, f.s2, ROOT, "q", 1), 0);
	assert_int_equal(dir_publish(f.d, f.s1, v, 0, 0, &at, NULL), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "q", &at), 0);
	assert_int_equal(at.ino, v);
	/* rmdir of the target directory: publish refused, abandon frees. */
	dirid = do_mkdir(&f, ROOT, "gone");
	v = do_create(&f, f.s2, dirid, "x", 0, 10);
	assert_int_equal(dir_rmdir(f.d, ROOT, "gone", 4), 0);
	assert_int_equal(dir_publish(f.d, f.s2, v, 0, 0, &at, NULL), -ENOENT);
	assert_int_equal(dir_abandon(f.d, f.s2, v), 0);
	assert_int_equal(stats(&f).pending, 0);
	assert_int_equal(dir_check(f.d), 0);
	/* A directory that took the name. */
	v = do_create(&f, f.s2, ROOT, "late", 0, 10);
	do_mkdir(&f, ROOT, "late");
	assert_int_equal(dir_publish(f.d, f.s2, v, 0, 0, &at, NULL), -EISDIR);
	fx_close(&f);
}


static void test_rename_files(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	struct dir_event ev[4];
	uint64_t a, b, old, src, seq;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "a");
	b = do_mkdir(&f, ROOT, "b");
	src = put_file(&f, f.s1, a, "src", "source");
	old = put_file(&f, f.s1, b, "dst", "target");
	assert_int_equal(dir_rename(f.d, NULL, a, "src", 3, b, "dst", 3,
				    PROTO_RENAME_NOREPLACE), -EEXIST);
	/* Over an existing, leased file across directories. */
	assert_int_equal(dir_open(f.d, f.s2, b, "dst", 3, 0, &at), 0);
	seq = dir_event_seq(f.d);
	assert_int_equal(dir_rename(f.d, NULL, a, "src", 3, b, "dst", 3, 0), 0);
	assert_int_equal(lookup(&f, NULL, a, "src", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, b, "dst", &at), 0);
	assert_int_equal(at.ino, src);
	assert_int_equal(at.parent, b);
	expect_content(&f, f.s1, b, "dst", "source");
	st = stats(&f);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.replaces, 1);
	assert_int_equal(st.names, 1);
	assert_int_equal(dir_events_wait(f.d, seq, ev, 4, 0), 1);
	assert_int_equal(ev[0].type, DEV_RENAME);
	assert_string_equal(ev[0].path, "/a/src");
	assert_string_equal(ev[0].path2, "/b/dst");
	assert_string_equal(ev[0].name2, "dst");
	assert_int_equal(ev[0].parent, a);
	assert_int_equal(ev[0].parent2, b);
	assert_int_equal(dir_release(f.d, f.s2, old), 0);
	/* Longer and shorter names move the node; attributes follow. */
	assert_int_equal(dir_rename(f.d, NULL, b, "dst", 3, a, "a-much-longer-name", 18, 0), 0);
	assert_int_equal(dir_rename(f.d, NULL, a, "a-much-longer-name", 18, a, "s", 1, 0), 0);
	expect_content(&f, f.s2, a, "s", "source");
	/* Same name: no-op; missing: -ENOENT; file over dir and back. */
	assert_int_equal(dir_rename(f.d, NULL, a, "s", 1, a, "s", 1, 0), 0);
	assert_int_equal(dir_rename(f.d, NULL, a, "zz", 2, a, "s", 1, 0), -ENOENT);
	do_mkdir(&f, a, "sub");
	assert_int_equal(dir_rename(f.d, NULL, a, "s", 1, a, "sub", 3, 0), -EISDIR);
	assert_int_equal(dir_rename(f.d, NULL, a, "sub", 3, a, "s", 1, 0), -ENOTDIR);
	assert_int_equal(dir_rename(f.d, NULL, 999, "s", 1, a, "t", 1, 0), -ENOENT);
	assert_int_equal(dir_rename(f.d, NULL, a, "s", 1, a, "t", 1, 4), -EINVAL);
	fx_close(&f);
}


static void test_rename_dirs(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_event ev[4];
	uint64_t a, b, c, e, seq;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "a");
	b = do_mkdir(&f, a, "b");
	c = do_mkdir(&f, b, "c");
	put_file(&f, f.s1, c, "f", "deep");
	assert_int_equal(dir_rename(f.d, NULL, ROOT, "a", 1, c, "x", 1, 0), -EINVAL);
	assert_int_equal(dir_rename(f.d, NULL, ROOT, "a", 1, a, "x", 1, 0), -EINVAL);
	e = do_mkdir(&f, ROOT, "e");
	do_mkdir(&f, e, "full");
	assert_int_equal(dir_rename(f.d, NULL, a, "b", 1, ROOT, "e", 1, 0), -ENOTEMPTY);
	/* Over an empty directory, into another parent, with a longer name. */
	assert_int_equal(dir_rename(f.d, NULL, a, "b", 1, e, "full", 4, 0), 0);
	assert_int_equal(dir_getattr(f.d, NULL, b, &at), 0);
	assert_int_equal(at.parent, e);
	assert_int_equal(lookup(&f, NULL, a, "b", &at), -ENOENT);
	expect_content(&f, f.s2, c, "f", "deep");
	seq = dir_event_seq(f.d);
	assert_int_equal(dir_rename(f.d, NULL, ROOT, "e", 1, ROOT, "renamed-e", 9, 0), 0);
	assert_int_equal(dir_unlink(f.d, NULL, c, "f", 1), 0);
	assert_int_equal(dir_events_wait(f.d, seq, ev, 4, 0), 2);
	assert_int_equal(ev[1].type, DEV_UNLINK);
	assert_string_equal(ev[1].path, "/renamed-e/full/c/f");
	assert_int_equal(dir_getattr(f.d, NULL, a, &at), 0);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(at.size, 0);
	assert_int_equal(stats(&f).dirs, 4);
	fx_close(&f);
}


static void test_rename_pending(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t v, b;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	b = do_mkdir(&f, ROOT, "b");
	/* tmp-then-rename while the writer has not published yet. */
	v = do_create(&f, f.s1, ROOT, "x.tmp", 0, 0);
	do_pwrite(&f, f.s1, v, "payload", 7, 0);
	assert_int_equal(dir_rename(f.d, f.s2, ROOT, "x.tmp", 5, b, "x", 1, 0), -ENOENT);
	assert_int_equal(dir_rename(f.d, f.s1, ROOT, "x.tmp", 5, b, "x", 1, 0), 0);
	assert_int_equal(lookup(&f, f.s1, b, "x", &at), 0);
	assert_int_equal(at.ino, v);
	assert_int_equal(lookup(&f, f.s1, ROOT, "x.tmp", &at), -ENOENT);
	assert_int_equal(dir_publish(f.d, f.s1, v, 7, 0, &at, NULL), 0);
	assert_int_equal(dir_release(f.d, f.s1, v), 0);
	expect_content(&f, f.s2, b, "x", "payload");
	/* Published x.tmp is not evictable until renamed to a plain name. */
	put_file(&f, f.s1, ROOT, "y.tmp", "t");
	st = stats(&f);
	assert_int_equal(st.evictable, BLK);
	assert_int_equal(st.used, 2 * BLK);
	v = do_create(&f, f.s1, ROOT, "y.tmp", 0, 0);
	assert_int_equal(dir_rename(f.d, f.s1, ROOT, "y.tmp", 5, ROOT, "y", 1, 0), 0);
	assert_int_equal(stats(&f).evictable, 2 * BLK);
	/* The pending version moved with the name. */
	assert_int_equal(lookup(&f, f.s1, ROOT, "y", &at), 0);
	assert_int_equal(at.ino, v);
	assert_int_equal(at.state, DIR_ST_PENDING);
	assert_int_equal(dir_publish(f.d, f.s1, v, 0, 0, &at, NULL), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "y.tmp", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "y", &at), 0);
	assert_int_equal(at.ino, v);
	assert_int_equal(stats(&f).replaces, 1);
	fx_close(&f);
}


static void test_setattr(void **state)
{
	struct fx f;
	struct dir_setattr sa = { 0 };
	struct dir_attr at;
	uint64_t dirid, v, p;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	dirid = do_mkdir(&f, ROOT, "d");
	v = put_file(&f, f.s1, dirid, "f", "x");
	p = do_create(&f, f.s1, dirid, "g", 0, 0);
	sa.mask = SETATTR_MODE | SETATTR_UID | SETATTR_ATIME | SETATTR_MTIME;
	sa.mode = 0600;
	sa.uid = 77;
	sa.atime_ns = 1000;
	sa.mtime_ns = 2000;
	assert_int_equal(dir_setattr(f.d, NULL, dirid, &sa, &at), 0);
	assert_int_equal(at.mode, S_IFDIR | 0600);
	assert_int_equal(at.uid, 77);
	assert_int_equal(at.atime_ns, 1000);
	assert_int_equal(dir_setattr(f.d, NULL, v, &sa, &at), 0);
	assert_int_equal(at.mode, S_IFREG | 0600);
	assert_int_equal(at.gid, 2);
	assert_int_equal(at.mtime_ns, 2000);
	assert_int_equal(dir_setattr(f.d, f.s2, p, &sa, &at), -ENOENT);
	assert_int_equal(dir_setattr(f.d, f.s1, p, &sa, &at), 0);
	assert_int_equal(at.uid, 77);
	/* An orphaned version keeps taking metadata. */
	assert_int_equal(dir_open(f.d, f.s2, dirid, "f", 1, 0, &at), 0);
	assert_int_equal(dir_unlink(f.d, NULL, dirid, "f", 1), 0);
	sa.mask = SETATTR_GID;
	sa.gid = 9;
	assert_int_equal(dir_setattr(f.d, NULL, v, &sa, &at), 0);
	assert_int_equal(at.gid, 9);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	/* The metadata set while pending is published with the bytes. */
	assert_int_equal(dir_publish(f.d, f.s1, p, 0, 0, &at, NULL), 0);
	assert_int_equal(at.mode, S_IFREG | 0600);
	assert_int_equal(dir_setattr(f.d, NULL, 12345, &sa, &at), -ENOENT);
	fx_close(&f);
}


/* ---- readdir ---- */

struct seen {
	int count;
	uint64_t last_cookie;
	char names[512][32];
	uint32_t states[512];
};


static int collect(void *arg, const struct dir_dirent *de)
{
	struct seen *s = arg;

	assert_true(de->cookie > s->last_cookie);
	s->last_cookie = de->cookie;
	assert_true(de->nlen < 32);
	memcpy(s->names[s->count], de->name, de->nlen);
	s->names[s->count][de->nlen] = '\0';
	s->states[s->count] = de->state;
	s->count++;
	return 0;
}


static int find_seen(const struct seen *s, const char *name)
{
	int i, hits = 0;

	for (i = 0; i < s->count; i++)
		hits += !strcmp(s->names[i], name);
	return hits;
}


static void test_readdir_pagination(void **state)
{
	struct fx f;
	struct seen *s = calloc(1, sizeof(*s));
	char name[32];
	int i, eof = 0, rc, pages = 0;

	assert_non_null(s);
	fx_open(&f, 256, DIR_EVICT_LRU, 0);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "e%03d", i);
		if (i % 10 == 0)
			do_mkdir(&f, ROOT, name);
		else
			put_sized(&f, f.s1, ROOT, name, 0);
	}
	/* s2 writes a new name and rewrites an existing one. */
	do_create(&f, f.s2, ROOT, "pending-only", 0, 0);
	do_create(&f, f.s2, ROOT, "e001", 0, 0);
	while (!eof) {
		rc = dir_readdir(f.d, f.s2, ROOT, s->last_cookie, 7, collect, s, &eof);
		assert_true(rc >= 0 && rc <= 7);
		pages++;
		/* Churn between pages: remove ahead and behind, add new names. */
		if (pages == 3) {
			assert_int_equal(dir_unlink(f.d, NULL, ROOT, "e002", 4), 0);
			assert_int_equal(dir_unlink(f.d, NULL, ROOT, "e099", 4), 0);
			put_sized(&f, f.s1, ROOT, "added", 0);
		}
	}
	/* Each name present throughout is listed exactly once. */
	for (i = 3; i < 99; i++) {
		snprintf(name, sizeof(name), "e%03d", i);
		assert_int_equal(find_seen(s, name), 1);
	}
	assert_int_equal(find_seen(s, "e099"), 0);
	assert_int_equal(find_seen(s, "added"), 1);
	assert_int_equal(find_seen(s, "pending-only"), 1);
	assert_int_equal(find_seen(s, "e001"), 1);
	for (i = 0; i < s->count; i++) {
		if (!strcmp(s->names[i], "e001") || !strcmp(s->names[i], "pending-only"))
			assert_int_equal(s->states[i], DIR_ST_PENDING);
		else if (!strcmp(s->names[i], "e010"))
			assert_int_equal(s->states[i], DIR_ST_DIR);
		else
			assert_true(s->states[i] == DIR_ST_PUBLISHED ||
				    s->states[i] == DIR_ST_DIR);
	}
	/* Another session sees neither pending entry as pending. */
	memset(s, 0, sizeof(*s));
	assert_true(dir_readdir(f.d, f.s1, ROOT, 0, 1000, collect, s, &eof) > 0);
	assert_int_equal(eof, 1);
	assert_int_equal(find_seen(s, "pending-only"), 0);
	assert_int_equal(find_seen(s, "e001"), 1);
	assert_int_equal(dir_readdir(f.d, NULL, 999, 0, 10, collect, s, &eof), -ENOENT);
	fx_close(&f);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkdir_nested),
		cmocka_unit_test(test_exists_n),
		cmocka_unit_test(test_rmdir),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_unlink_detaches_pending),
		cmocka_unit_test(test_rename_files),
		cmocka_unit_test(test_rename_dirs),
		cmocka_unit_test(test_rename_pending),
		cmocka_unit_test(test_setattr),
		cmocka_unit_test(test_readdir_pagination),
	};

	return cmocka_run_group_tests_name("ns", tests, NULL, NULL);
}
