/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/hint_test.c: what hint requests may see
 * (daemon/dir/hint.c). Any session may read the extents of a published
 * version; only the owner reads or writes its pending version; a write
 * hint on a published version is refused; an unknown id is -ENOENT; the
 * extents and attributes handed back are the version's.
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

#include "dir_priv.h"
#include "fixture.h"

static void test_hint_extents(void **state)
{
	struct extent_list l = { 0 };
	struct dir_attr at;
	uint64_t pub, pend;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	pub = put_file(&f, f.s1, ROOT, "pub", "published bytes");
	pend = do_create(&f, f.s1, ROOT, "pend", 0, 0);
	do_pwrite(&f, f.s1, pend, "abc", 3, 0);

	assert_int_equal(dir_hint_extents(f.d, f.s2, pub, 0, &l, &at), 0);
	assert_int_equal(at.ino, pub);
	assert_int_equal(at.size, 15);
	assert_int_equal(at.parent, ROOT);
	assert_true(l.n >= 1);
	assert_true(l.v[0].len >= 15);
	alloc_extent_list_free(&l);
	assert_int_equal(dir_hint_extents(f.d, f.s2, pub, 1, &l, &at), -EPERM);

	assert_int_equal(dir_hint_extents(f.d, f.s1, pend, 1, &l, &at), 0);
	assert_int_equal(at.state, DIR_ST_PENDING);
	assert_true(l.n >= 1);
	alloc_extent_list_free(&l);
	assert_int_equal(dir_hint_extents(f.d, f.s1, pend, 0, &l, &at), 0);
	alloc_extent_list_free(&l);
	assert_int_equal(dir_hint_extents(f.d, f.s2, pend, 0, &l, &at), -EPERM);
	assert_int_equal(dir_hint_extents(f.d, f.s2, pend, 1, &l, &at), -EPERM);
	assert_int_equal(dir_hint_extents(f.d, f.s1, 987654, 0, &l, &at), -ENOENT);
	assert_int_equal(dir_abandon(f.d, f.s1, pend), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hint_extents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
