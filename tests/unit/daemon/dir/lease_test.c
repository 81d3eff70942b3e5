/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/lease_test.c: leases (daemon/dir/lease.c): an
 * unlinked leased version stays readable as orphaned until released, the
 * per-session lease and pending limits, and dir_open_ext.
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


static void test_unlink_leased(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint8_t buf[64];
	uint64_t v;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v = put_file(&f, f.s1, ROOT, "u", "still here");
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "u", 1, 0, &at), 0);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "u", 1, 0, &at), 0);
	assert_int_equal(at.leases, 2);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "u", 1), 0);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "u", 1), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "u", &at), -ENOENT);
	assert_int_equal(stats(&f).orphaned, BLK);
	assert_int_equal(stats(&f).unlinks, 1);
	assert_int_equal(do_read(&f, f.s2, v, buf, sizeof(buf)), 10);
	assert_memory_equal(buf, "still here", 10);
	assert_int_equal(dir_release(f.d, f.s2, v), 0);
	assert_int_equal(stats(&f).orphaned, BLK);
	assert_int_equal(dir_check(f.d), 0);
	assert_int_equal(dir_release(f.d, f.s2, v), 0);
	assert_int_equal(stats(&f).orphaned, 0);
	assert_int_equal(stats(&f).free, f.size);
	do_mkdir(&f, ROOT, "d");
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "d", 1), -EISDIR);
	fx_close(&f);
}


static void test_limits(void **state)
{
	struct dir_opts o = { .max_leases = 2, .max_pending_bytes = 2 * BLK };
	struct fx f;
	struct dir *d;
	struct dir_session *s;
	struct dir_attr at;
	uint64_t v;

	fx_open_limits(&f, 64, DIR_EVICT_LRU, 0, &o);
	d = f.d;
	s = f.s1;
	assert_int_equal(dir_create(d, s, ROOT, "f", 1, 0, 0, 0644, 0, 0, BLK, &at), 0);
	v = at.ino;
	assert_int_equal(dir_publish(d, s, v, 10, 0, &at, NULL), 0);
	assert_int_equal(dir_open(d, s, ROOT, "f", 1, 0, &at), 0);
	assert_int_equal(dir_open(d, s, ROOT, "f", 1, 0, &at), -EMFILE);
	assert_int_equal(dir_release(d, s, v), 0);
	assert_int_equal(dir_create(d, s, ROOT, "g", 1, 0, 0, 0644, 0, 0, 3 * BLK, &at),
			 -EDQUOT);
	assert_int_equal(dir_create(d, s, ROOT, "g", 1, 0, 0, 0644, 0, 0, 2 * BLK, &at), 0);
	assert_int_equal(dir_reserve(d, s, at.ino, 2 * BLK + 1, &at), -EDQUOT);
	/* Limits are per session. */
	assert_int_equal(dir_open(d, f.s2, ROOT, "f", 1, 0, &at), 0);
	assert_int_equal(dir_open(d, f.s2, ROOT, "f", 1, 0, &at), 0);
	assert_int_equal(dir_create(d, f.s2, ROOT, "h", 1, 0, 0, 0644, 0, 0, 2 * BLK, &at), 0);
	fx_close(&f);
}


static void test_open_ext(void **state)
{
	struct extent_list ext, l;
	struct dir_attr at, at2;
	struct fx f;
	uint64_t ino;

	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	ino = put_file(&f, f.s1, ROOT, "f", "content");
	assert_int_equal(dir_open_ext(f.d, f.s2, ROOT, "f", 1, 0, &at, &ext), 0);
	assert_int_equal(at.ino, ino);
	assert_int_equal(at.leases, 1);
	assert_int_equal(dir_extents(f.d, f.s2, ino, 0, &l, &at2), 0);
	assert_int_equal(l.n, ext.n);
	assert_memory_equal(l.v, ext.v, l.n * sizeof(*l.v));
	alloc_extent_list_free(&l);
	alloc_extent_list_free(&ext);
	/* By id, and the leased version is not evictable. */
	assert_int_equal(dir_open_ext(f.d, f.s2, 0, NULL, 0, ino, &at, &ext), 0);
	assert_int_equal(at.leases, 2);
	alloc_extent_list_free(&ext);
	assert_int_equal(stats(&f).evictable, 0);
	/* Failures leave ext alone and take no lease. */
	memset(&ext, 0x5a, sizeof(ext));
	assert_int_equal(dir_open_ext(f.d, f.s2, ROOT, "none", 4, 0, &at, &ext), -ENOENT);
	assert_int_equal(dir_open_ext(f.d, f.s2, 0, NULL, 0, 12345, &at, &ext), -ESTALE);
	assert_int_equal(dir_open_ext(f.d, f.s2, 0, NULL, 0, ROOT, &at, &ext), -EISDIR);
	assert_int_equal(ext.n, 0x5a5a5a5a);
	assert_int_equal(stats(&f).leases, 2);
	assert_int_equal(dir_release(f.d, f.s2, ino), 0);
	assert_int_equal(dir_release(f.d, f.s2, ino), 0);
	assert_int_equal(dir_release(f.d, f.s2, ino), -EINVAL);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unlink_leased),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_open_ext),
	};

	return cmocka_run_group_tests_name("lease", tests, NULL, NULL);
}
