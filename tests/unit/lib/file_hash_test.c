/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/file_hash_test.c: the publish digest of lib/file_hash.c:
 * a stream starts only at byte 0 of a path that hashes, follows writes in
 * order (the path feeds it), and gives PUBLISH the one-shot xxh3 of the
 * bytes only when it covers the whole size; a write out of order, a failed
 * one, a path that does not hash or a handle marked hash_off drop it for
 * good (digest 0: marud hashes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dp/datapath.h"
#include "file_hash.h"
#include "hash.h"

static const struct dp_ops hashing = { .kind = MARU_DATA_SHM, .hashes = 1 };
static const struct dp_ops plain = { .kind = MARU_DATA_TCP };

/* One write of n bytes of src at off, as file.c and a hashing path do it. */
static void write_at(struct maru_file *f, const struct dp_ops *dp, const uint8_t *src,
		     size_t n, uint64_t off)
{
	file_hash_before_write(f, dp, off);
	if (f->hs)
		hash_stream_update(f->hs, src, n);
	file_hash_after_write(f, (ssize_t)n);
	if (off + n > f->size)
		f->size = off + n;
}

static void test_in_order(void **state)
{
	struct maru_file f = { 0 };
	uint8_t src[3000];

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 31);
	write_at(&f, &hashing, src, 1000, 0);
	assert_non_null(f.hs);
	write_at(&f, &hashing, src + 1000, 2000, 1000);
	assert_int_equal(f.hashed, 3000);
	assert_true(file_hash_for_publish(&f) == hash_xxh3(src, sizeof(src)));
	/* a size beyond what was hashed (a truncate up): no digest */
	f.size = 4000;
	assert_true(file_hash_for_publish(&f) == 0);
	file_hash_drop(&f);
	assert_null(f.hs);
	assert_true(f.hash_off);
}

static void test_dropped(void **state)
{
	struct maru_file f = { 0 };
	uint8_t src[100] = { 1 };

	(void)state;
	/* not from byte 0: never starts */
	write_at(&f, &hashing, src, 100, 50);
	assert_null(f.hs);
	/* out of order after a start */
	memset(&f, 0, sizeof(f));
	write_at(&f, &hashing, src, 100, 0);
	write_at(&f, &hashing, src, 100, 300);
	assert_null(f.hs);
	assert_true(f.hash_off);
	write_at(&f, &hashing, src, 100, 100);	/* never again */
	assert_null(f.hs);
	assert_true(file_hash_for_publish(&f) == 0);
	/* a failed write */
	memset(&f, 0, sizeof(f));
	write_at(&f, &hashing, src, 100, 0);
	file_hash_before_write(&f, &hashing, 100);
	file_hash_after_write(&f, -5);
	assert_null(f.hs);
	assert_true(f.hash_off);
	/* a path that does not hash */
	memset(&f, 0, sizeof(f));
	write_at(&f, &plain, src, 100, 0);
	assert_null(f.hs);
	assert_true(f.hash_off);
	/* extents handed out (file.c sets hash_off) */
	memset(&f, 0, sizeof(f));
	f.hash_off = 1;
	write_at(&f, &hashing, src, 100, 0);
	assert_null(f.hs);
	assert_true(file_hash_for_publish(&f) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_dropped),
	};

	return cmocka_run_group_tests_name("file_hash", tests, NULL, NULL);
}
