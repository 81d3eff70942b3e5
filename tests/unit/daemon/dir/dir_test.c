/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/dir_test.c: the directory object and its
 * sessions (daemon/dir/dir.c): creation, session ids, and what ending a
 * session releases and abandons.
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


static void test_session_end(void **state)
{
	struct fx f;
	struct dir_session *s3;
	struct dir_stats st;
	struct dir_attr at;
	uint64_t v;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(dir_session_new(f.d, &s3), 0);
	assert_int_not_equal(dir_session_id(s3), dir_session_id(f.s1));
	v = put_file(&f, f.s1, ROOT, "shared", "s");
	assert_int_equal(dir_open(f.d, s3, ROOT, "shared", 6, 0, &at), 0);
	assert_int_equal(dir_open(f.d, s3, ROOT, "shared", 6, 0, &at), 0);
	assert_int_equal(dir_unlink(f.d, NULL, ROOT, "shared", 6), 0);
	v = do_create(&f, s3, ROOT, "w1", 0, 3 * BLK);
	do_create(&f, s3, ROOT, "w2", 0, BLK);
	st = stats(&f);
	assert_int_equal(st.pending, 4 * BLK);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.leases, 2);
	assert_int_equal(st.sessions, 3);
	dir_session_end(f.d, s3);
	st = stats(&f);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.orphaned, 0);
	assert_int_equal(st.leases, 0);
	assert_int_equal(st.sessions, 2);
	assert_int_equal(st.free, f.size);
	assert_int_equal(st.versions, 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v, &at), -ENOENT);
	fx_close(&f);
}


static uint8_t noop_buf;

static void noop_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		      const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	noop_buf++;
}

static void test_new_and_sessions(void **state)
{
	struct dir_opts o = { 0 };
	struct dir_session *a, *b;
	struct dir_stats st;
	struct alloc *al;
	struct dir *d;

	assert_int_equal(alloc_new(BLK, 16 * BLK, BLK, BLK, &al), 0);
	assert_int_equal(dir_new(&o, &d), -EINVAL);		/* no allocator */
	o.alloc = al;
	assert_int_equal(dir_new(&o, &d), -EINVAL);		/* no copy callback */
	o.copy = noop_copy;
	assert_int_equal(dir_new(NULL, &d), -EINVAL);
	assert_int_equal(dir_new(&o, &d), 0);
	assert_int_equal(dir_session_new(d, &a), 0);
	assert_int_equal(dir_session_new(d, &b), 0);
	assert_true(dir_session_id(a) != dir_session_id(b));
	dir_stats(d, &st);
	assert_int_equal(st.sessions, 2);
	assert_int_equal(st.capacity, 16 * BLK);
	assert_int_equal(st.block, BLK);
	assert_int_equal(st.dirs, 0);
	dir_session_end(d, a);
	dir_session_end(d, NULL);
	dir_stats(d, &st);
	assert_int_equal(st.sessions, 1);
	assert_int_equal(dir_check(d), 0);
	/* dir_destroy frees live sessions, versions and names itself. */
	assert_int_equal(dir_mkdir(d, ROOT, "d", 1, 0755, 0, 0, NULL), 0);
	assert_int_equal(dir_create(d, b, ROOT, "p", 1, 0, 0, 0644, 0, 0, BLK, NULL), 0);
	dir_destroy(d);
	assert_int_equal(alloc_free_bytes(al), 16 * BLK);
	alloc_destroy(al);
	assert_int_equal(noop_buf, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_end),
		cmocka_unit_test(test_new_and_sessions),
	};

	return cmocka_run_group_tests_name("dir", tests, NULL, NULL);
}
