/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/fill_test.c: copies and zero-fills outside the
 * directory lock (daemon/dir/fill.c). The fake pool's copy hook runs other
 * directory calls from a second thread in the middle of dir_fill_run(): if
 * the lock were held they would never return (the join times out and the
 * test fails). Under that: eviction pressure and an unlink or replace of the
 * copy source must leave its bytes intact (pinned), calls changing the
 * filling version and the session's end wait for dir_fill_done(), an error
 * abandons a created version, and every case ends with dir_check().
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"

/* Run fn(arg) on another thread; fail if it does not end within 10 s. */
static void run_elsewhere(void *(*fn)(void *), void *arg)
{
	struct timespec ts;
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, fn, arg), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (pthread_timedjoin_np(th, NULL, &ts))
		fail_msg("a dir call from the copy did not return: lock held?");
}

static void fill_pattern(char *buf, size_t n, char seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (char)('a' + (seed + i * 7) % 26);
	buf[n] = '\0';
}

/* The source "src": published by s2, n bytes of pattern. */
static uint64_t put_src(struct fx *f, char *content, size_t n)
{
	fill_pattern(content, n, 3);
	return put_file(f, f->s2, ROOT, "src", content);
}

static int begin_copy(struct fx *f, struct dir_attr *at, struct dir_fill *fl)
{
	return dir_create_begin(f->d, f->s1, ROOT, "src", 3, 0, DIR_CREATE_COPY,
				0644, 1, 2, 0, at, fl);
}

/* s1's pending holds exactly want. */
static void expect_pending(struct fx *f, uint64_t ino, const char *want)
{
	static uint8_t buf[16 * 4096];
	uint64_t n = do_read(f, f->s1, ino, buf, sizeof(buf));

	assert_int_equal(n, strlen(want));
	assert_memory_equal(buf, want, n);
}

static void test_create_copy(void **state)
{
	static char content[8000 + 1];
	struct extent_list ext;
	struct dir_attr at;
	struct dir_fill fl;
	struct dir_stats st;
	struct fx f;
	uint64_t src;

	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	src = put_src(&f, content, sizeof(content) - 1);
	assert_int_equal(begin_copy(&f, &at, &fl), 0);
	assert_int_equal(at.state, DIR_ST_PENDING);
	assert_int_equal(at.size, 0);			/* not filled yet */
	assert_true(at.reserved >= sizeof(content) - 1);
	assert_int_equal(fl.ino, at.ino);
	assert_int_equal(fl.src_ino, src);
	assert_int_equal(fl.len, sizeof(content) - 1);
	assert_int_equal(fl.dst_off, 0);
	st = stats(&f);
	assert_int_equal(st.leases, 1);			/* the pin */
	assert_int_equal(st.evictable, 0);		/* src is pinned */
	assert_int_equal(dir_check(f.d), 0);
	dir_fill_run(f.d, &fl);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, 0, &at, &ext), 0);
	assert_int_equal(at.size, sizeof(content) - 1);
	assert_true(ext.n >= 1);
	assert_int_equal(alloc_extent_list_bytes(&ext), at.reserved);
	alloc_extent_list_free(&ext);
	expect_pending(&f, at.ino, content);
	st = stats(&f);
	assert_int_equal(st.leases, 0);
	assert_true(st.evictable > 0);			/* src back on the LRU */
	assert_int_equal(dir_publish(f.d, f.s1, at.ino, at.size, 0, NULL, NULL), 0);
	assert_int_equal(dir_release(f.d, f.s1, at.ino), 0);
	expect_content(&f, f.s2, ROOT, "src", content);
	fx_close(&f);
}

/* ---- pressure from inside the copy ---- */

struct pressure {
	struct fx *f;
	int unlink, replace;
	int enospc_rc;
};

static void *pressure_thread(void *arg)
{
	static char junk[3 * 4096 + 1];
	struct pressure *p = arg;
	struct fx *f = p->f;
	struct dir_attr at;
	char name[16];
	int i;

	memset(junk, 'Z', sizeof(junk) - 1);
	if (p->unlink)
		assert_int_equal(dir_unlink(f->d, f->s2, ROOT, "src", 3), 0);
	if (p->replace)
		put_file(f, f->s2, ROOT, "src", junk);
	/* Fill the pool with junk: evicts whatever is evictable. */
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "junk%d", i);
		if (dir_create(f->d, f->s2, ROOT, name, strlen(name), 0, 0, 0644, 0, 0,
			       3 * BLK, &at))
			break;
		do_pwrite(f, f->s2, at.ino, junk, 3 * BLK, 0);
		assert_int_equal(dir_publish(f->d, f->s2, at.ino, 3 * BLK, 0, NULL, NULL), 0);
		assert_int_equal(dir_release(f->d, f->s2, at.ino), 0);
	}
	/* More than free + evictable: refused at once. */
	p->enospc_rc = dir_create(f->d, f->s2, ROOT, "huge", 4, 0, 0, 0644, 0, 0,
				  64 * BLK, &at);
	assert_int_equal(dir_check(f->d), 0);
	return NULL;
}

static void pressure_hook(void *arg)
{
	copy_hook = NULL;	/* one shot: the helpers copy too */
	run_elsewhere(pressure_thread, arg);
}

static void copy_under(int unlink, int replace)
{
	static char content[8000 + 1];
	struct pressure p = { 0 };
	struct dir_attr at;
	struct dir_fill fl;
	struct dir_stats st;
	struct fx f;

	fx_open(&f, 24, DIR_EVICT_LRU, 0);
	put_src(&f, content, sizeof(content) - 1);
	put_sized(&f, f.s2, ROOT, "old", 4 * BLK);	/* evictable, unlike src */
	assert_int_equal(begin_copy(&f, &at, &fl), 0);
	p = (struct pressure){ &f, unlink, replace, 0 };
	copy_hook = pressure_hook;
	copy_hook_arg = &p;
	dir_fill_run(f.d, &fl);
	assert_null(copy_hook);
	assert_int_equal(p.enospc_rc, -ENOSPC);
	st = stats(&f);
	assert_true(st.evictions >= 1);			/* "old" went */
	assert_int_equal(lookup(&f, NULL, ROOT, "old", NULL), -ENOENT);
	if (unlink || replace)
		assert_true(st.orphaned >= sizeof(content) - 1);	/* src kept */
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, 0, &at, NULL), 0);
	st = stats(&f);
	assert_int_equal(st.orphaned, 0);		/* the pin was the last user */
	expect_pending(&f, at.ino, content);
	if (!unlink && !replace)
		expect_content(&f, f.s2, ROOT, "src", content);
	assert_int_equal(dir_publish(f.d, f.s1, at.ino, at.size, 0, NULL, NULL), 0);
	assert_int_equal(dir_release(f.d, f.s1, at.ino), 0);
	expect_content(&f, f.s2, ROOT, "src", content);
	fx_close(&f);
}

static void test_copy_under_eviction(void **state)
{
	copy_under(0, 0);
}

static void test_copy_races_unlink(void **state)
{
	copy_under(1, 0);
}

static void test_copy_races_replace(void **state)
{
	copy_under(0, 1);
}

/* ---- errors and the filling state ---- */

static void test_done_error_abandons(void **state)
{
	static char content[4096 + 1];
	struct dir_attr at;
	struct dir_fill fl;
	struct dir_stats st;
	struct fx f;
	uint64_t abandons;

	fx_open(&f, 8, DIR_EVICT_LRU, 0);
	put_src(&f, content, sizeof(content) - 1);
	abandons = stats(&f).abandons;
	assert_int_equal(begin_copy(&f, &at, &fl), 0);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, -EIO, NULL, NULL), -EIO);
	assert_null(fl.dst.v);
	assert_null(fl.src.v);
	assert_int_equal(dir_getattr(f.d, f.s1, at.ino, &at), -ENOENT);
	st = stats(&f);
	assert_int_equal(st.abandons, abandons + 1);
	assert_int_equal(st.leases, 0);
	assert_int_equal(st.pending, 0);
	assert_true(st.evictable > 0);
	expect_content(&f, f.s2, ROOT, "src", content);
	fx_close(&f);
}

static void test_begin_errors(void **state)
{
	struct dir_attr at;
	struct dir_fill fl;
	struct fx f;
	uint64_t ino;

	fx_open(&f, 8, DIR_EVICT_LRU, 0);
	put_file(&f, f.s2, ROOT, "x", "xx");
	assert_int_equal(dir_create_begin(f.d, f.s1, ROOT, "x", 1, 0,
					  DIR_CREATE_EXCL | DIR_CREATE_COPY, 0644, 0, 0, 0,
					  &at, &fl), -EEXIST);
	assert_int_equal(fl.len, 0);
	assert_null(fl.dst.v);
	assert_int_equal(stats(&f).leases, 0);
	/* COPY of a name with nothing published: nothing to fill, done all the same. */
	assert_int_equal(dir_create_begin(f.d, f.s1, ROOT, "new", 3, 0, DIR_CREATE_COPY,
					  0644, 0, 0, BLK, &at, &fl), 0);
	assert_int_equal(fl.len, 0);
	assert_int_equal(fl.src_ino, 0);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, 0, &at, NULL), 0);
	assert_int_equal(at.size, 0);
	ino = at.ino;
	assert_int_equal(dir_truncate_begin(f.d, f.s2, ino, BLK, &at, &fl), -EPERM);
	assert_int_equal(dir_wrote_begin(f.d, f.s1, ino, 0, 2 * BLK, &at, &fl), -EINVAL);
	assert_int_equal(dir_wrote_begin(f.d, f.s1, 999, 0, 1, &at, &fl), -ENOENT);
	assert_int_equal(dir_truncate_begin(f.d, f.s1, ino, 64 * BLK, &at, &fl), -ENOSPC);
	assert_int_equal(dir_abandon(f.d, f.s1, ino), 0);
	fx_close(&f);
}

/* Bytes [from, to) of s1's pending ino are all zero. */
static void expect_zero(struct fx *f, uint64_t ino, uint64_t from, uint64_t to)
{
	static uint8_t buf[16 * 4096];
	uint64_t n = do_read(f, f->s1, ino, buf, sizeof(buf)), i;

	assert_true(n >= to);
	for (i = from; i < to; i++)
		if (buf[i])
			fail_msg("byte %llu is %#x, not zero", (unsigned long long)i, buf[i]);
}

static void test_zero_fill(void **state)
{
	struct dir_attr at;
	struct dir_fill fl;
	struct fx f;
	uint64_t ino;

	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	ino = do_create(&f, f.s1, ROOT, "z", 0, 0);
	do_pwrite(&f, f.s1, ino, "abc", 3, 0);
	/* Growing truncate: the pool is garbage, so only the fill makes zeros. */
	assert_int_equal(dir_truncate_begin(f.d, f.s1, ino, 2 * BLK + 5, &at, &fl), 0);
	assert_int_equal(at.size, 3);
	assert_true(at.reserved >= 2 * BLK + 5);
	assert_int_equal(fl.src_ino, 0);
	assert_int_equal(fl.dst_off, 3);
	assert_int_equal(fl.len, 2 * BLK + 2);
	dir_fill_run(f.d, &fl);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, 0, &at, NULL), 0);
	assert_int_equal(at.size, 2 * BLK + 5);
	expect_zero(&f, ino, 3, 2 * BLK + 5);
	/* Shrinking: nothing to fill, the size is set at once. */
	assert_int_equal(dir_truncate_begin(f.d, f.s1, ino, 1, &at, &fl), 0);
	assert_int_equal(fl.len, 0);
	assert_int_equal(at.size, 1);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, 0, &at, NULL), 0);
	/* A write past a hole: [1, 3 * BLK) is zeroed, the size is the end. */
	assert_int_equal(dir_reserve(f.d, f.s1, ino, 3 * BLK + 4, &at), 0);
	assert_int_equal(dir_wrote_begin(f.d, f.s1, ino, 3 * BLK, 3 * BLK + 4, &at, &fl), 0);
	assert_int_equal(fl.dst_off, 1);
	assert_int_equal(fl.len, 3 * BLK - 1);
	dir_fill_run(f.d, &fl);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, 0, &at, NULL), 0);
	assert_int_equal(at.size, 3 * BLK + 4);
	expect_zero(&f, ino, 1, 3 * BLK);
	/* A failed zero-fill keeps the old size. */
	assert_int_equal(dir_truncate_begin(f.d, f.s1, ino, 4 * BLK, &at, &fl), 0);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, -EIO, &at, NULL), -EIO);
	assert_int_equal(at.size, 3 * BLK + 4);
	assert_int_equal(dir_abandon(f.d, f.s1, ino), 0);
	fx_close(&f);
}

/* ---- waiting for a fill ---- */

struct waiter {
	struct fx *f;
	uint64_t ino;
	int op;			/* 0 publish, 1 end the session */
	int rc;
	volatile int done;
};

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;
	struct dir_attr at;

	if (w->op == 0)
		w->rc = dir_publish(w->f->d, w->f->s1, w->ino, 4096 + 1, 0, &at, NULL);
	else
		dir_session_end(w->f->d, w->f->s1);
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void wait_for_fill(int op)
{
	static char content[4096 + 2];
	struct waiter w = { 0 };
	struct dir_attr at;
	struct dir_fill fl;
	struct fx f;
	pthread_t th;

	fx_open(&f, 8, DIR_EVICT_LRU, 0);
	put_src(&f, content, sizeof(content) - 1);	/* 4097 bytes */
	assert_int_equal(begin_copy(&f, &at, &fl), 0);
	w = (struct waiter){ &f, at.ino, op, 1, 0 };
	assert_int_equal(pthread_create(&th, NULL, waiter_thread, &w), 0);
	usleep(200 * 1000);
	assert_int_equal(__atomic_load_n(&w.done, __ATOMIC_SEQ_CST), 0);
	/* Reads do not wait. */
	assert_int_equal(dir_getattr(f.d, f.s1, at.ino, &at), 0);
	assert_int_equal(at.size, 0);
	dir_fill_run(f.d, &fl);
	assert_int_equal(dir_fill_done(f.d, f.s1, &fl, 0, &at, NULL), 0);
	pthread_join(th, NULL);
	if (op == 0) {
		assert_int_equal(w.rc, 0);
		assert_int_equal(dir_release(f.d, f.s1, at.ino), 0);
		expect_content(&f, f.s2, ROOT, "src", content);
	} else {
		f.s1 = NULL;
		assert_int_equal(stats(&f).pending, 0);
	}
	fx_close(&f);
}

static void test_publish_waits(void **state)
{
	wait_for_fill(0);
}

static void test_session_end_waits(void **state)
{
	wait_for_fill(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_copy),
		cmocka_unit_test(test_copy_under_eviction),
		cmocka_unit_test(test_copy_races_unlink),
		cmocka_unit_test(test_copy_races_replace),
		cmocka_unit_test(test_done_error_abandons),
		cmocka_unit_test(test_begin_errors),
		cmocka_unit_test(test_zero_fill),
		cmocka_unit_test(test_publish_waits),
		cmocka_unit_test(test_session_end_waits),
	};

	return cmocka_run_group_tests_name("fill", tests, NULL, NULL);
}
