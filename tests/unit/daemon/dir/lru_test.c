/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/lru_test.c: the LRU and eviction (daemon/dir/lru.c).
 * Small cases over the shared fixture: eviction order, what is never
 * evicted (leased, ".tmp", a copy source), eviction off, and the LRU touch
 * of dir_touch / dir_read_extents. Then the directory at scale: one million small
 * published names fill a pool exactly; the test checks the daemon memory
 * per name (mallinfo2, budget 256 B including the version and its extent),
 * that every name is still found after the tables grew, that readdir
 * streams a big directory, and that evicting k versions touches exactly k
 * of them (the LRU holds only evictable versions, so stats.evictions counts
 * every version the eviction path visited), oldest first, skipping leased
 * and ".tmp" names without visiting them. No pool memory is needed: the
 * copy callback must never run (nothing is copied or zero-filled here).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <malloc.h>
#include <cmocka.h>

#include "fixture.h"

#define BLK		4096ull
#define NDIRS		256u
#define PER_DIR		4096u
#define NAMES		((uint64_t)NDIRS * PER_DIR)
#define BUDGET		256u

static unsigned long copies;

static void no_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		    const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	copies++;
}

struct big {
	struct alloc *a;
	struct dir *d;
	struct dir_session *s;
	uint64_t dirs[NDIRS];
};

static int name_of(char *buf, size_t size, uint64_t i)
{
	return snprintf(buf, size, "%016llx.bin",
			(unsigned long long)(i * 0x9e3779b97f4a7c15ULL));
}

static void put(struct dir *d, struct dir_session *s, uint64_t parent, const char *name)
{
	struct dir_attr at;

	assert_int_equal(dir_create(d, s, parent, name, strlen(name), 0, 0, 0644, 0, 0,
				    BLK, &at), 0);
	assert_int_equal(dir_publish(d, s, at.ino, BLK, 0, NULL, NULL), 0);
	assert_int_equal(dir_release(d, s, at.ino), 0);
}

/* Fill a pool of exactly NAMES blocks with NAMES names; measure the heap. */
static int setup(void **state)
{
	struct dir_opts o = { 0 };
	struct mallinfo2 m0, m1;
	struct big *b = calloc(1, sizeof(*b));
	char name[32];
	uint64_t i, per;

	if (!b || alloc_new(BLK, NAMES * BLK, BLK, 512 * BLK, &b->a))
		return -1;
	o.alloc = b->a;
	o.copy = no_copy;
	m0 = mallinfo2();
	if (dir_new(&o, &b->d) || dir_session_new(b->d, &b->s))
		return -1;
	for (i = 0; i < NDIRS; i++) {
		struct dir_attr at;

		snprintf(name, sizeof(name), "ns%03llu", (unsigned long long)i);
		if (dir_mkdir(b->d, DIR_ROOT_ID, name, strlen(name), 0755, 0, 0, &at))
			return -1;
		b->dirs[i] = at.ino;
	}
	for (i = 0; i < NAMES; i++) {
		name_of(name, sizeof(name), i);
		put(b->d, b->s, b->dirs[i % NDIRS], name);
	}
	m1 = mallinfo2();
	/* Large blocks (the hash tables) are mmapped: hblkhd counts them. */
	per = (m1.uordblks + m1.hblkhd - m0.uordblks - m0.hblkhd) / NAMES;
	print_message("heap per published name: %llu bytes (budget %u)\n",
		      (unsigned long long)per, BUDGET);
	if (per > BUDGET) {
		print_error("over budget: %llu B per name\n", (unsigned long long)per);
		return -1;
	}
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct big *b = *state;

	if (!b)
		return 0;
	dir_session_end(b->d, b->s);
	dir_destroy(b->d);
	alloc_destroy(b->a);
	free(b);
	return 0;
}

static void test_full_and_found(void **state)
{
	struct big *b = *state;
	struct dir_stats st;
	struct dir_attr at;
	char name[32];
	uint64_t i;

	dir_stats(b->d, &st);
	assert_int_equal(st.names, NAMES);
	assert_int_equal(st.free, 0);
	assert_int_equal(st.used, NAMES * BLK);
	assert_int_equal(st.evictable, NAMES * BLK);
	assert_int_equal(st.evictions, 0);
	for (i = 0; i < NAMES; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(dir_lookup(b->d, NULL, b->dirs[i % NDIRS], name,
					    strlen(name), &at), 0);
		assert_int_equal(at.size, BLK);
	}
	assert_int_equal(dir_check(b->d), 0);
}

struct last_cookie {
	uint64_t cookie, n;
};

static int last_cb(void *arg, const struct dir_dirent *de)
{
	struct last_cookie *l = arg;

	assert_true(de->cookie > l->cookie);
	l->cookie = de->cookie;
	l->n++;
	return 0;
}

static void test_readdir_big_dir(void **state)
{
	struct big *b = *state;
	struct last_cookie l = { 0, 0 };
	int eof = 0, rc, calls = 0;

	while (!eof) {
		rc = dir_readdir(b->d, NULL, b->dirs[7], l.cookie, 500, last_cb, &l, &eof);
		assert_true(rc >= 0 && rc <= 500);
		calls++;
	}
	assert_int_equal(l.n, PER_DIR);
	assert_int_equal(calls, (PER_DIR + 499) / 500);
}

/* Names [from, to) were evicted (LRU order is creation order), name `to` was not. */
static void expect_gone(struct big *b, uint64_t from, uint64_t to)
{
	struct dir_attr at;
	char name[32];
	uint64_t i;

	for (i = from; i < to; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(dir_lookup(b->d, NULL, b->dirs[i % NDIRS], name,
					    strlen(name), &at), -ENOENT);
	}
	name_of(name, sizeof(name), to);
	assert_int_equal(dir_lookup(b->d, NULL, b->dirs[to % NDIRS], name, strlen(name),
				    &at), 0);
}

static void test_evict_k_costs_k(void **state)
{
	struct big *b = *state;
	struct dir_stats st0, st;
	struct dir_attr at;
	uint64_t k, gone = 0;
	char name[32];

	for (k = 1; k <= 64; k *= 4) {
		dir_stats(b->d, &st0);
		snprintf(name, sizeof(name), "new%llu", (unsigned long long)k);
		assert_int_equal(dir_create(b->d, b->s, DIR_ROOT_ID, name, strlen(name), 0,
					    0, 0644, 0, 0, k * BLK, &at), 0);
		dir_stats(b->d, &st);
		/* Exactly k versions visited and evicted, oldest first. */
		assert_int_equal(st.evictions - st0.evictions, k);
		assert_int_equal(st.evicted_bytes - st0.evicted_bytes, k * BLK);
		assert_int_equal(st.free, 0);
		expect_gone(b, gone, gone + k);
		gone += k;
		assert_int_equal(dir_publish(b->d, b->s, at.ino, k * BLK, 0, NULL, NULL), 0);
		assert_int_equal(dir_release(b->d, b->s, at.ino), 0);
	}
	assert_int_equal(dir_check(b->d), 0);
}

static void test_evict_skips_leased_and_tmp(void **state)
{
	struct big *b = *state;
	struct dir_stats st0, st;
	struct dir_attr at, lat;
	uint64_t i, first;
	char name[32];

	/* Find the LRU head: the oldest surviving original name. */
	for (first = 0;; first++) {
		name_of(name, sizeof(name), first);
		if (!dir_lookup(b->d, NULL, b->dirs[first % NDIRS], name, strlen(name), &at))
			break;
	}
	/* Lease the next 1000: eviction must pass them without visiting. */
	for (i = first; i < first + 1000; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(dir_open(b->d, b->s, b->dirs[i % NDIRS], name,
					  strlen(name), 0, &lat), 0);
	}
	dir_stats(b->d, &st0);
	assert_int_equal(dir_create(b->d, b->s, DIR_ROOT_ID, "x.tmp", 5, 0, 0, 0644, 0, 0,
				    2 * BLK, &at), 0);
	dir_stats(b->d, &st);
	assert_int_equal(st.evictions - st0.evictions, 2);
	expect_gone(b, first + 1000, first + 1002);
	assert_int_equal(dir_publish(b->d, b->s, at.ino, 2 * BLK, 0, NULL, NULL), 0);
	assert_int_equal(dir_release(b->d, b->s, at.ino), 0);
	for (i = first; i < first + 1000; i++) {
		name_of(name, sizeof(name), i);
		assert_int_equal(dir_lookup(b->d, NULL, b->dirs[i % NDIRS], name,
					    strlen(name), &lat), 0);
		assert_int_equal(dir_release(b->d, b->s, lat.ino), 0);
	}
	/* Released leases go to the MRU end; x.tmp never joins the LRU. */
	dir_stats(b->d, &st0);
	assert_int_equal(dir_create(b->d, b->s, DIR_ROOT_ID, "y", 1, 0, 0, 0644, 0, 0,
				    BLK, &at), 0);
	dir_stats(b->d, &st);
	assert_int_equal(st.evictions - st0.evictions, 1);
	expect_gone(b, first + 1002, first + 1003);
	assert_int_equal(dir_lookup(b->d, NULL, DIR_ROOT_ID, "x.tmp", 5, &lat), 0);
	assert_int_equal(dir_abandon(b->d, b->s, at.ino), 0);
	assert_int_equal(copies, 0);
	assert_int_equal(dir_check(b->d), 0);
}


/* ---- eviction ---- */

static void test_evict_lru_order(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	struct dir_event ev[16];
	char name[16];
	uint64_t v, seq;
	int i, n;

	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		put_sized(&f, f.s1, ROOT, name, BLK);
	}
	assert_int_equal(stats(&f).free, 0);
	assert_int_equal(stats(&f).evictable, 16 * BLK);
	/* f0 read recently, f1 leased and released (back at the MRU end). */
	assert_int_equal(lookup(&f, NULL, ROOT, "f0", &at), 0);
	dir_touch(f.d, at.ino);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "f1", 2, 0, &at), 0);
	assert_int_equal(dir_release(f.d, f.s2, at.ino), 0);
	seq = dir_event_seq(f.d);
	v = do_create(&f, f.s2, ROOT, "big", 0, 3 * BLK);
	st = stats(&f);
	assert_int_equal(st.evictions, 3);
	assert_int_equal(st.evicted_bytes, 3 * BLK);
	assert_int_equal(st.pending, 3 * BLK);
	n = dir_events_wait(f.d, seq, ev, 16, 0);
	assert_int_equal(n, 3);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "/f%d", i + 2);
		assert_int_equal(ev[i].type, DEV_EVICT);
		assert_string_equal(ev[i].path, name);
	}
	assert_int_equal(lookup(&f, NULL, ROOT, "f0", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "f1", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "f2", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "f5", &at), 0);
	/* Growing the pending version evicts the next in line. */
	assert_int_equal(dir_truncate(f.d, f.s2, v, 4 * BLK, &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "f5", &at), -ENOENT);
	assert_int_equal(stats(&f).evictions, 4);
	fx_close(&f);
}


static void test_evict_spares_tmp_and_leased(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t v;

	fx_open(&f, 8, DIR_EVICT_LRU, 0);
	put_sized(&f, f.s1, ROOT, "a.tmp", BLK);
	put_sized(&f, f.s1, ROOT, "b.tmp.x", BLK);
	put_sized(&f, f.s1, ROOT, "leased", BLK);
	put_sized(&f, f.s1, ROOT, "victim", BLK);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "leased", 6, 0, &at), 0);
	do_create(&f, f.s1, ROOT, "pend", 0, 3 * BLK);
	st = stats(&f);
	assert_int_equal(st.free, BLK);
	assert_int_equal(st.evictable, BLK);
	/* 3 blocks needed, 2 obtainable: refused, and nothing was evicted. */
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "n", 1, 0, 0, 0644, 0, 0, 3 * BLK,
				    &at), -ENOSPC);
	st = stats(&f);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.enospc, 1);
	assert_int_equal(lookup(&f, f.s2, ROOT, "n", &at), -ENOENT);
	/* 2 blocks: only "victim" goes. */
	v = do_create(&f, f.s2, ROOT, "n", 0, 2 * BLK);
	st = stats(&f);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(lookup(&f, NULL, ROOT, "victim", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "a.tmp", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "b.tmp.x", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "leased", &at), 0);
	assert_int_equal(dir_reserve(f.d, f.s2, v, 3 * BLK, &at), -ENOSPC);
	assert_int_equal(dir_getattr(f.d, f.s2, v, &at), 0);
	assert_int_equal(at.reserved, 2 * BLK);
	assert_int_equal(stats(&f).enospc, 2);
	fx_close(&f);
}


static void test_evict_copy_source_pinned(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t v;

	fx_open(&f, 4, DIR_EVICT_LRU, 0);
	put_file(&f, f.s1, ROOT, "src", "keep me");
	put_sized(&f, f.s1, ROOT, "other", 3 * BLK);
	/* src is LRU-first, yet the copy of it must evict "other" instead. */
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "src", 3, 0, DIR_CREATE_COPY, 0, 0, 0,
				    0, &at), 0);
	v = at.ino;
	assert_int_equal(stats(&f).evictions, 1);
	assert_int_equal(lookup(&f, NULL, ROOT, "other", &at), -ENOENT);
	assert_int_equal(dir_publish(f.d, f.s2, v, 7, 0, &at, NULL), 0);
	assert_int_equal(dir_release(f.d, f.s2, v), 0);
	expect_content(&f, f.s1, ROOT, "src", "keep me");
	fx_close(&f);
}


static void test_evict_none(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;

	fx_open(&f, 4, DIR_EVICT_NONE, 0);
	put_sized(&f, f.s1, ROOT, "a", 2 * BLK);
	put_sized(&f, f.s1, ROOT, "b", 2 * BLK);
	st = stats(&f);
	assert_int_equal(st.evictable, 0);
	assert_int_equal(st.free, 0);
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "c", 1, 0, 0, 0644, 0, 0, 1, &at),
			 -ENOSPC);
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "c", 1, 0, 0, 0644, 0, 0, 0, &at), 0);
	assert_int_equal(dir_truncate(f.d, f.s2, at.ino, 1, &at), -ENOSPC);
	assert_int_equal(at.size, 0);
	st = stats(&f);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.enospc, 2);
	assert_int_equal(lookup(&f, NULL, ROOT, "a", &at), 0);
	fx_close(&f);
}

/* A read through dir_read_extents moves an unleased version to the LRU tail. */
static void test_read_extents_touches(void **state)
{
	struct extent_list l;
	struct dir_attr at;
	struct fx f;
	uint64_t a, b;

	fx_open(&f, 4, DIR_EVICT_LRU, 0);
	a = put_file(&f, f.s1, ROOT, "a", "aaaa");
	b = put_file(&f, f.s1, ROOT, "b", "bbbb");
	/* Without a lease a read is refused, and nothing moves. */
	assert_int_equal(dir_read_extents(f.d, f.s2, a, &l, &at), -EPERM);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "a", 1, 0, &at), 0);
	assert_int_equal(dir_read_extents(f.d, f.s2, a, &l, &at), 0);
	assert_int_equal(at.ino, a);
	assert_int_equal(at.size, 4);
	assert_int_equal(l.n, 1);
	alloc_extent_list_free(&l);
	assert_int_equal(dir_release(f.d, f.s2, a), 0);
	/* a went back to the tail on release; b is now the oldest. */
	dir_touch(f.d, b);
	dir_touch(f.d, a);
	put_sized(&f, f.s1, ROOT, "big", 3 * BLK);
	assert_int_equal(lookup(&f, NULL, ROOT, "b", NULL), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "a", NULL), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_and_found),
		cmocka_unit_test(test_readdir_big_dir),
		cmocka_unit_test(test_evict_k_costs_k),
		cmocka_unit_test(test_evict_skips_leased_and_tmp),
	};

	const struct CMUnitTest small[] = {
		cmocka_unit_test(test_evict_lru_order),
		cmocka_unit_test(test_evict_spares_tmp_and_leased),
		cmocka_unit_test(test_evict_copy_source_pinned),
		cmocka_unit_test(test_evict_none),
		cmocka_unit_test(test_read_extents_touches),
	};
	int rc;

	rc = cmocka_run_group_tests_name("lru", small, NULL, NULL);
	return rc | cmocka_run_group_tests_name("evict", tests, setup, teardown);
}
