/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/retire_test.c: the call out when pool bytes are
 * freed (daemon/dir/retire.c). Without a callback nothing happens; with
 * one, every extent of a list is retired, a trim retires only the bytes
 * past the kept (block-rounded) length, and an unlinked version's bytes
 * are retired before the allocator may hand them out again.
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

struct seen {
	uint64_t off[16], len[16];
	int n;
};

static void note(void *arg, uint64_t off, uint64_t len)
{
	struct seen *s = arg;

	assert_true(s->n < 16);
	s->off[s->n] = off;
	s->len[s->n++] = len;
}

static void test_lists_and_tails(void **state)
{
	struct extent e[3] = { { 4096, 8192 }, { 65536, 4096 }, { 131072, 8192 } };
	struct extent_list l = { e, 3, 3 };
	struct seen s = { .n = 0 };
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	dir_retire_list(f.d, &l);		/* no callback: nothing to call */
	f.d->o.retire = note;
	f.d->o.retire_arg = &s;
	dir_retire(f.d, 4096, 0);		/* nothing to retire */
	assert_int_equal(s.n, 0);
	dir_retire_list(f.d, &l);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.off[1], 65536);
	assert_int_equal(s.len[2], 8192);
	s.n = 0;
	/* keep 10000 bytes: the first extent whole, 1808 of the second */
	dir_retire_tail(f.d, &l, 10000);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.off[0], 65536 + 1808);
	assert_int_equal(s.len[0], 4096 - 1808);
	assert_int_equal(s.off[1], 131072);
	assert_int_equal(s.len[1], 8192);
	f.d->o.retire = NULL;
	fx_close(&f);
}

static void test_unlink_retires_bytes(void **state)
{
	struct seen s = { .n = 0 };
	struct extent_list l = { 0 };
	struct dir_attr at;
	uint64_t ino;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	f.d->o.retire = note;
	f.d->o.retire_arg = &s;
	ino = put_file(&f, f.s1, ROOT, "gone", "bytes to retire");
	assert_int_equal(dir_hint_extents(f.d, f.s1, ino, 0, &l, &at), 0);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "gone", 4), 0);
	assert_int_equal(s.n, (int)l.n);
	assert_int_equal(s.off[0], l.v[0].off);
	assert_int_equal(s.len[0], l.v[0].len);
	alloc_extent_list_free(&l);
	f.d->o.retire = NULL;
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists_and_tails),
		cmocka_unit_test(test_unlink_retires_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
