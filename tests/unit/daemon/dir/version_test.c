/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/version_test.c: pending versions (daemon/dir/
 * version.c): create, EXCL, copy-on-write, zero-fill, publish over a leased
 * version (and the directory's attributes as it left them), publish racing
 * an unlink, and the *_ext calls that return the extents under the same
 * lock hold; files growing a few blocks at a time, interleaved, keep
 * extents that join on the pool's alignment (the fixture's is 64 KiB) and
 * the pad that takes never passes the per-session pending limit.
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


/* ---- versions ---- */

static void test_create_publish_lookup(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t ino, dirid;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	dirid = do_mkdir(&f, ROOT, "ns");
	ino = do_create(&f, f.s1, dirid, "k.bin", 0, 0);
	/* Pending: only its owner sees it. */
	assert_int_equal(lookup(&f, f.s1, dirid, "k.bin", &at), 0);
	assert_int_equal(at.ino, ino);
	assert_int_equal(at.state, DIR_ST_PENDING);
	assert_int_equal(lookup(&f, NULL, dirid, "k.bin", &at), -ENOENT);
	assert_int_equal(lookup(&f, f.s2, dirid, "k.bin", &at), -ENOENT);
	assert_int_equal(dir_getattr(f.d, f.s2, ino, &at), -ENOENT);
	assert_int_equal(dir_exists(f.d, dirid, "k.bin", 5), 0);
	assert_int_equal(dir_reserve(f.d, f.s2, ino, 10, &at), -EPERM);
	assert_int_equal(dir_extents(f.d, f.s2, ino, 0, &(struct extent_list){ 0 }, &at),
			 -EPERM);
	do_pwrite(&f, f.s1, ino, "hello pool", 10, 0);
	st = stats(&f);
	assert_int_equal(st.pending, BLK);
	assert_int_equal(dir_wrote(f.d, f.s1, ino, 0, BLK + 1, &at), -EINVAL);
	assert_int_equal(dir_publish(f.d, f.s1, ino, BLK + 1, 0, &at, NULL), -EINVAL);
	assert_int_equal(dir_publish(f.d, f.s2, ino, 10, 0, &at, NULL), -EPERM);
	assert_int_equal(dir_publish(f.d, f.s1, ino, 10, 0xabcdef, &at, NULL), 0);
	assert_int_equal(at.leases, 1);
	assert_int_equal(at.parent, dirid);
	assert_int_equal(dir_release(f.d, f.s1, ino), 0);
	assert_int_equal(dir_release(f.d, f.s1, ino), -EINVAL);
	assert_int_equal(lookup(&f, f.s2, dirid, "k.bin", &at), 0);
	assert_int_equal(at.ino, ino);
	assert_int_equal(at.size, 10);
	assert_int_equal(at.xxh3, 0xabcdef);
	assert_int_equal(at.state, DIR_ST_PUBLISHED);
	assert_int_equal(at.mode, S_IFREG | 0644);
	assert_int_equal(at.nlink, 1);
	assert_int_equal(dir_exists(f.d, dirid, "k.bin", 5), 1);
	expect_content(&f, f.s2, dirid, "k.bin", "hello pool");
	/* Open by ino while bound; a reader cannot write. */
	assert_int_equal(dir_open(f.d, f.s2, 0, NULL, 0, ino, &at), 0);
	assert_int_equal(dir_extents(f.d, f.s2, ino, 1, &(struct extent_list){ 0 }, &at),
			 -EPERM);
	assert_int_equal(dir_release(f.d, f.s2, ino), 0);
	assert_int_equal(dir_open(f.d, f.s2, 0, NULL, 0, dirid, &at), -EISDIR);
	assert_int_equal(dir_open(f.d, f.s2, dirid, "none", 4, 0, &at), -ENOENT);
	st = stats(&f);
	assert_int_equal(st.used, BLK);
	assert_int_equal(st.evictable, BLK);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.names, 1);
	assert_int_equal(st.publishes, 1);
	assert_int_equal(st.creates, 1);
	fx_close(&f);
}


static void test_excl(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t p1;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	put_file(&f, f.s1, ROOT, "pub", "1");
	do_mkdir(&f, ROOT, "adir");
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "pub", 3, 0, DIR_CREATE_EXCL, 0644,
				    0, 0, 0, &at), -EEXIST);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "adir", 4, 0, DIR_CREATE_EXCL, 0644,
				    0, 0, 0, &at), -EEXIST);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "adir", 4, 0, 0, 0644, 0, 0, 0, &at),
			 -EISDIR);
	p1 = do_create(&f, f.s1, ROOT, "new", DIR_CREATE_EXCL, 0);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "new", 3, 0, DIR_CREATE_EXCL, 0644,
				    0, 0, 0, &at), -EEXIST);
	/* Another session's pending version does not count. */
	do_create(&f, f.s2, ROOT, "new", DIR_CREATE_EXCL, 0);
	assert_int_equal(dir_abandon(f.d, f.s1, p1), 0);
	assert_int_equal(dir_abandon(f.d, f.s1, p1), -ENOENT);
	assert_int_equal(stats(&f).abandons, 1);
	fx_close(&f);
}


static void test_copy(void **state)
{
	struct fx f;
	struct dir_attr at, da, root;
	uint64_t v1, v2;
	char big[6000];

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v1 = put_file(&f, f.s1, ROOT, "c", "hello world");
	/* Rewrite the middle without truncation: the rest is kept. */
	v2 = do_create(&f, f.s1, ROOT, "c", DIR_CREATE_COPY, 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v2, &at), 0);
	assert_int_equal(at.size, 11);
	do_pwrite(&f, f.s1, v2, "W", 1, 6);
	/* the directory as the publish (a replace: one entry still) left it */
	assert_int_equal(dir_publish(f.d, f.s1, v2, 11, 0, &at, &da), 0);
	assert_int_equal(dir_getattr(f.d, NULL, ROOT, &root), 0);
	assert_int_equal(da.ino, ROOT);
	assert_int_equal(da.size, 1);
	assert_int_equal(da.mtime_ns, root.mtime_ns);
	assert_int_equal(da.ctime_ns, root.ctime_ns);
	assert_int_equal(dir_release(f.d, f.s1, v2), 0);
	expect_content(&f, f.s2, ROOT, "c", "hello World");
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), -ENOENT);
	/* By ino, growing past a block. */
	memset(big, 'b', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(dir_create(f.d, f.s2, 0, NULL, 0, v2, DIR_CREATE_COPY, 0, 0, 0, 0,
				    &at), 0);
	v1 = at.ino;
	assert_int_equal(at.size, 11);
	assert_int_equal(at.parent, ROOT);
	assert_int_equal(at.mode, S_IFREG | 0644);
	do_pwrite(&f, f.s2, v1, big + 11, sizeof(big) - 12, 11);
	assert_int_equal(dir_publish(f.d, f.s2, v1, sizeof(big) - 1, 0, &at, NULL), 0);
	assert_int_equal(dir_release(f.d, f.s2, v1), 0);
	memcpy(big, "hello World", 11);
	expect_content(&f, f.s1, ROOT, "c", big);
	/* The old version is gone: -ESTALE. */
	assert_int_equal(dir_create(f.d, f.s2, 0, NULL, 0, v2, DIR_CREATE_COPY, 0, 0, 0, 0,
				    &at), -ESTALE);
	/* COPY of a name with nothing published starts empty. */
	v2 = do_create(&f, f.s1, ROOT, "fresh", DIR_CREATE_COPY, 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v2, &at), 0);
	assert_int_equal(at.size, 0);
	fx_close(&f);
}


static void test_zero_fill(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint8_t buf[3 * 4096];
	uint64_t ino, i;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	ino = do_create(&f, f.s1, ROOT, "z", 0, 0);
	do_pwrite(&f, f.s1, ino, "abc", 3, 0);
	/* A write at 8192 leaves a hole [3, 8192) that must read as zeros. */
	do_pwrite(&f, f.s1, ino, "end", 3, 8192);
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 9000, &at), 0);
	assert_int_equal(at.size, 9000);
	assert_int_equal(do_read(&f, f.s1, ino, buf, sizeof(buf)), 9000);
	assert_memory_equal(buf, "abc", 3);
	for (i = 3; i < 8192; i++)
		assert_int_equal(buf[i], 0);
	assert_memory_equal(buf + 8192, "end", 3);
	for (i = 8195; i < 9000; i++)
		assert_int_equal(buf[i], 0);
	/* Shrink then grow: the cut bytes come back as zeros. */
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 1, &at), 0);
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 5, &at), 0);
	assert_int_equal(do_read(&f, f.s1, ino, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "a\0\0\0\0", 5);
	assert_int_equal(dir_wrote(f.d, f.s1, ino, 5, 4, &at), -EINVAL);
	assert_int_equal(dir_publish(f.d, f.s1, ino, 5, 0, &at, NULL), 0);
	/* Publish trimmed the reservation to one block. */
	assert_int_equal(at.reserved, BLK);
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 5, &at), -EPERM);
	fx_close(&f);
}


static void test_publish_over_leased(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	struct dir_event ev[8];
	uint8_t buf[64];
	uint64_t v1, v2, seq;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v1 = put_file(&f, f.s1, ROOT, "kv", "old bytes");
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "kv", 2, 0, &at), 0);
	assert_int_equal(at.leases, 1);
	assert_int_equal(stats(&f).evictable, 0);
	seq = dir_event_seq(f.d);
	v2 = do_create(&f, f.s1, ROOT, "kv", 0, 0);
	do_pwrite(&f, f.s1, v2, "new bytes!", 10, 0);
	assert_int_equal(dir_publish(f.d, f.s1, v2, 10, 0, &at, NULL), 0);
	assert_int_equal(dir_release(f.d, f.s1, v2), 0);
	/* The reader keeps the old bytes. */
	assert_int_equal(do_read(&f, f.s2, v1, buf, sizeof(buf)), 9);
	assert_memory_equal(buf, "old bytes", 9);
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), 0);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	assert_int_equal(at.nlink, 0);
	assert_int_equal(at.leases, 1);
	/* Opened by id (a kernel that looked the name up before the
	 * replace): the old bytes, while they are still leased. */
	assert_int_equal(dir_open(f.d, f.s1, 0, NULL, 0, v1, &at), 0);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	assert_int_equal(at.leases, 2);
	assert_int_equal(at.size, 9);
	assert_int_equal(do_read(&f, f.s1, v1, buf, sizeof(buf)), 9);
	assert_memory_equal(buf, "old bytes", 9);
	assert_int_equal(dir_release(f.d, f.s1, v1), 0);
	st = stats(&f);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.used, BLK);
	assert_int_equal(st.replaces, 1);
	assert_int_equal(st.versions, 2);
	assert_int_equal(dir_check(f.d), 0);
	assert_int_equal(dir_events_wait(f.d, seq, ev, 8, 0), 1);
	assert_int_equal(ev[0].type, DEV_REPLACE);
	assert_string_equal(ev[0].path, "/kv");
	assert_string_equal(ev[0].name, "kv");
	assert_int_equal(ev[0].ino, v2);
	assert_int_equal(dir_release(f.d, f.s2, v1), 0);
	st = stats(&f);
	assert_int_equal(st.orphaned, 0);
	assert_int_equal(st.versions, 1);
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), -ENOENT);
	/* gone with its last lease: opening it by id now says so */
	assert_int_equal(dir_open(f.d, f.s1, 0, NULL, 0, v1, &at), -ESTALE);
	expect_content(&f, f.s2, ROOT, "kv", "new bytes!");
	fx_close(&f);
}


static void test_publish_race(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t v1, v2;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v1 = do_create(&f, f.s1, ROOT, "race", 0, 0);
	v2 = do_create(&f, f.s2, ROOT, "race", 0, 0);
	do_pwrite(&f, f.s1, v1, "one", 3, 0);
	do_pwrite(&f, f.s2, v2, "two!", 4, 0);
	assert_int_equal(lookup(&f, f.s1, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v1);
	assert_int_equal(lookup(&f, f.s2, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v2);
	assert_int_equal(dir_publish(f.d, f.s1, v1, 3, 0, &at, NULL), 0);
	assert_int_equal(dir_check(f.d), 0);
	/* s2 still sees its own pending version. */
	assert_int_equal(lookup(&f, f.s2, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v2);
	assert_int_equal(dir_publish(f.d, f.s2, v2, 4, 0, &at, NULL), 0);
	/* Last publish wins; s1's publish lease keeps its bytes as orphaned. */
	assert_int_equal(lookup(&f, NULL, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v2);
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), 0);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	st = stats(&f);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.used, BLK);
	assert_int_equal(st.publishes, 2);
	assert_int_equal(st.replaces, 1);
	assert_int_equal(st.names, 1);
	assert_int_equal(dir_check(f.d), 0);
	expect_content(&f, f.s1, ROOT, "race", "two!");
	assert_int_equal(dir_release(f.d, f.s1, v1), 0);
	assert_int_equal(dir_release(f.d, f.s2, v2), 0);
	assert_int_equal(stats(&f).orphaned, 0);
	fx_close(&f);
}


/* Extents as dir_extents sees them match what an *_ext call returned. */
static void expect_same_extents(struct fx *f, uint64_t ino, const struct extent_list *got)
{
	struct extent_list l;
	struct dir_attr at;

	assert_int_equal(dir_extents(f->d, f->s1, ino, 1, &l, &at), 0);
	assert_int_equal(l.n, got->n);
	assert_memory_equal(l.v, got->v, l.n * sizeof(*l.v));
	assert_int_equal(alloc_extent_list_bytes(got), at.reserved);
	alloc_extent_list_free(&l);
}

static void test_ext_variants(void **state)
{
	struct extent_list ext;
	struct dir_attr at;
	struct fx f;
	uint64_t ino;

	fx_open(&f, 32, DIR_EVICT_LRU, 0);
	put_file(&f, f.s2, ROOT, "f", "hello");
	assert_int_equal(dir_create_ext(f.d, f.s1, ROOT, "f", 1, 0, DIR_CREATE_COPY,
					0644, 0, 0, 2 * BLK, &at, &ext), 0);
	ino = at.ino;
	assert_int_equal(at.size, 5);
	assert_int_equal(at.reserved, 2 * BLK);
	expect_same_extents(&f, ino, &ext);
	alloc_extent_list_free(&ext);
	/* Reserve: grows, and hands back extents covering the new size. */
	assert_int_equal(dir_reserve_ext(f.d, f.s1, ino, 5 * BLK, &at, &ext), 0);
	assert_int_equal(at.reserved, 5 * BLK);
	expect_same_extents(&f, ino, &ext);
	alloc_extent_list_free(&ext);
	/* Already covered: a no-op reserve, same extents. */
	assert_int_equal(dir_reserve_ext(f.d, f.s1, ino, BLK, &at, &ext), 0);
	assert_int_equal(at.reserved, 5 * BLK);
	alloc_extent_list_free(&ext);
	assert_int_equal(dir_truncate_ext(f.d, f.s1, ino, 7 * BLK, &at, &ext), 0);
	assert_int_equal(at.size, 7 * BLK);
	expect_same_extents(&f, ino, &ext);
	alloc_extent_list_free(&ext);
	/* Errors leave ext alone and change nothing. */
	memset(&ext, 0x5a, sizeof(ext));
	assert_int_equal(dir_reserve_ext(f.d, f.s2, ino, BLK, &at, &ext), -EPERM);
	assert_int_equal(dir_truncate_ext(f.d, f.s1, ino, 999 * BLK, &at, &ext), -ENOSPC);
	assert_int_equal(ext.n, 0x5a5a5a5a);
	/* NULL ext: the plain call. */
	assert_int_equal(dir_reserve_ext(f.d, f.s1, ino, 8 * BLK, &at, NULL), 0);
	assert_int_equal(at.reserved, 8 * BLK);
	assert_int_equal(dir_abandon(f.d, f.s1, ino), 0);
	fx_close(&f);
}

/* lib/map.c's rule at granule g: joins only on g boundaries. */
static int joins_on(const struct extent_list *l, uint64_t g)
{
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		if (i && l->v[i].off % g)
			return 0;
		if (i + 1 < l->n && (l->v[i].off + l->v[i].len) % g)
			return 0;
	}
	return 1;
}

static void test_grow_keeps_alignment(void **state)
{
	const uint64_t g = 16 * BLK, limit = 200 * BLK;
	struct dir_opts lim = { .max_pending_bytes = limit };
	uint64_t ino[3], want[3] = { 0 };
	struct extent_list ext;
	struct dir_attr at;
	unsigned int i, step;
	struct fx f;
	int rc;

	fx_open_limits(&f, 1024, DIR_EVICT_NONE, 0, &lim);
	/* a published file first, so the pending ones do not start at 0 */
	put_sized(&f, f.s2, ROOT, "before", 5 * BLK);
	for (i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "g%u", i);
		ino[i] = do_create(&f, f.s1, ROOT, name, 0, BLK);
	}
	for (step = 0; step < 40; step++) {
		for (i = 0; i < 3; i++) {
			want[i] += (1 + (step + i) % 2) * BLK;
			rc = dir_reserve_ext(f.d, f.s1, ino[i], want[i], &at, &ext);
			if (rc == -EDQUOT) {
				want[i] = at.reserved;
				continue;
			}
			assert_int_equal(rc, 0);
			assert_true(at.reserved >= want[i]);
			assert_true(joins_on(&ext, g));
			alloc_extent_list_free(&ext);
			assert_true(stats(&f).pending <= limit);
		}
	}
	/* the limit was reached, not passed */
	assert_true(stats(&f).pending > limit - 3 * g);
	/* one block short of the limit, a pad would pass it: the exact bytes */
	assert_int_equal(dir_reserve(f.d, f.s2, do_create(&f, f.s2, ROOT, "q", 0, BLK),
				     limit - BLK, &at), 0);
	assert_int_equal(at.reserved, limit - BLK);
	for (i = 0; i < 3; i++) {
		assert_int_equal(dir_publish(f.d, f.s1, ino[i], want[i] - BLK + 1, 0, &at, NULL), 0);
		assert_int_equal(at.reserved, want[i]);
		assert_int_equal(dir_extents(f.d, f.s1, ino[i], 0, &ext, &at), 0);
		assert_true(joins_on(&ext, g));
		alloc_extent_list_free(&ext);
	}
	fx_close(&f);
}

/* An allocation failure while copying the extents out undoes the create. */
static void test_create_ext_nomem(void **state)
{
	struct extent_list ext;
	struct dir_attr at;
	unsigned long k;
	struct fx f;
	int rc, ok = 0;

	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	for (k = 1; k < 12 && !ok; k++) {
		fail_countdown = k;
		rc = dir_create_ext(f.d, f.s1, ROOT, "n", 1, 0, 0, 0644, 0, 0, 2 * BLK,
				    &at, &ext);
		fail_countdown = 0;
		assert_int_equal(dir_check(f.d), 0);
		if (rc) {
			assert_int_equal(rc, -ENOMEM);
			assert_int_equal(stats(&f).pending, 0);
			continue;
		}
		ok = 1;
		alloc_extent_list_free(&ext);
		assert_int_equal(dir_abandon(f.d, f.s1, at.ino), 0);
	}
	assert_true(ok);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_publish_lookup),
		cmocka_unit_test(test_excl),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_zero_fill),
		cmocka_unit_test(test_publish_over_leased),
		cmocka_unit_test(test_publish_race),
		cmocka_unit_test(test_ext_variants),
		cmocka_unit_test(test_create_ext_nomem),
		cmocka_unit_test(test_grow_keeps_alignment),
	};

	return cmocka_run_group_tests_name("version", tests, NULL, NULL);
}
