/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/shm_test.c: what the shm data path (lib/dp/shm.c) does
 * besides walking extents (common/extent_test covers the walk itself), on
 * the hand-built pool of common/pool_fixture.h: a superblock naming another
 * generation makes every access -ESTALE and touches nothing, no mapping is
 * -ENODEV, a write past the size zero-fills the hole, truncate zero-fills
 * what it grows and only moves the size when it shrinks, an extent beyond
 * the mapping is -EIO, and the written range is tracked for sync. A large
 * write (streamed to the pool with non-temporal stores) lands byte for byte
 * across extents at any alignment, with the same digest as a one-shot xxh3
 * of its source, and touches nothing around it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../common/pool_fixture.h"
#include "hash.h"

static uint8_t at(struct fx *x, uint64_t file_off)
{
	return x->base[fx_where(file_off)];
}

static void test_other_generation(void **state)
{
	struct pool_superblock *sb;
	uint8_t buf[64];
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	sb = (struct pool_superblock *)x.base;
	/* a restarted marud owns the pool now */
	__atomic_store_n(&sb->generation, FX_GEN + 1, __ATOMIC_RELEASE);
	assert_int_equal(dp_shm_ops.read(&x.f, buf, sizeof(buf), 0), -ESTALE);
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(dp_shm_ops.write(&x.f, buf, sizeof(buf), 0), -ESTALE);
	assert_int_equal(at(&x, 0), fx_pattern(fx_where(0)));	/* untouched */
	assert_int_equal(dp_shm_ops.truncate(&x.f, FX_SIZE + 100), -ESTALE);
	assert_int_equal(x.f.size, FX_SIZE);
	assert_int_equal(atomic_load(&x.c.st.dp[MARU_DATA_SHM].wr_ops), 0);
	fx_teardown(&x);
}

static void test_no_mapping(void **state)
{
	uint8_t buf[8];
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	x.c.map = NULL;
	assert_int_equal(dp_shm_ops.read(&x.f, buf, sizeof(buf), 0), -ENODEV);
	assert_int_equal(dp_shm_ops.write(&x.f, buf, sizeof(buf), 0), -ENODEV);
	fx_teardown(&x);
}

static void test_hole_and_truncate(void **state)
{
	uint8_t buf[100];
	uint64_t i;
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	x.f.size = 1000;
	memset(buf, 0xab, sizeof(buf));
	/* write at 5000: bytes 1000..5000 read as zeros afterwards */
	assert_int_equal(dp_shm_ops.write(&x.f, buf, sizeof(buf), 5000), sizeof(buf));
	assert_int_equal(x.f.size, 5100);
	assert_int_equal(at(&x, 999), fx_pattern(fx_where(999)));
	for (i = 1000; i < 5000; i++)
		assert_int_equal(at(&x, i), 0);
	for (i = 5000; i < 5100; i++)
		assert_int_equal(at(&x, i), 0xab);
	assert_int_equal(x.f.dirty_lo, 1000);
	assert_int_equal(x.f.dirty_hi, 5100);
	/* shrink: only the size moves */
	assert_int_equal(dp_shm_ops.truncate(&x.f, 2000), 0);
	assert_int_equal(x.f.size, 2000);
	assert_int_equal(at(&x, 5000), 0xab);
	/* grow again: what it grows is zeros, even where bytes were */
	assert_int_equal(dp_shm_ops.truncate(&x.f, 5100), 0);
	assert_int_equal(x.f.size, 5100);
	for (i = 2000; i < 5100; i++)
		assert_int_equal(at(&x, i), 0);
	/* hw coherence: sync has nothing to flush and keeps the range */
	assert_int_equal(dp_shm_ops.sync(&x.f), 0);
	assert_int_equal(atomic_load(&x.c.st.dp[MARU_DATA_SHM].wr_bytes), sizeof(buf));
	/* past the extents (reserved 20480): -EIO, size unchanged */
	assert_int_equal(dp_shm_ops.truncate(&x.f, 4096 + 8192 + 8192 + 1), -EIO);
	assert_int_equal(x.f.size, 5100);
	fx_teardown(&x);
}

static void test_extent_past_mapping(void **state)
{
	uint8_t buf[16];
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	x.map.size = 65536;	/* the second extent lies beyond it */
	assert_int_equal(dp_shm_ops.read(&x.f, buf, sizeof(buf), 0), sizeof(buf));
	assert_int_equal(dp_shm_ops.read(&x.f, buf, sizeof(buf), 4096), -EIO);
	fx_teardown(&x);
}

/* Two extents of ~300 KiB, big enough for the streamed copy. */
static const struct proto_extent big_ext[2] = {
	{ .off = 8192, .len = 303104 }, { .off = 327680, .len = 262144 },
};

static uint64_t big_where(uint64_t k)
{
	return k < big_ext[0].len ? big_ext[0].off + k : big_ext[1].off + k - big_ext[0].len;
}

/* Write len bytes of src at file offset off and check them. */
static void big_write_check(struct fx *x, const uint8_t *src, uint64_t off, size_t len)
{
	assert_int_equal(dp_shm_ops.write(&x->f, src, len, off), len);
	for (uint64_t k = 0; k < len; k++)
		if (x->base[big_where(off + k)] != src[k])
			fail_msg("byte %llu of the write differs", (unsigned long long)k);
}

static void test_big_write(void **state)
{
	struct proto_extent ext[2];
	size_t len = 400001;	/* crosses the extents, not a multiple of 64 */
	uint8_t *src = malloc(len + 1);
	struct fx x;

	(void)state;
	assert_non_null(src);
	for (size_t k = 0; k < len + 1; k++)
		src[k] = (uint8_t)(k * 13 + 1);
	fx_setup(&x, MARU_COHERENCE_HW);
	memcpy(ext, big_ext, sizeof(ext));
	x.f.ext = ext;
	x.f.next = 2;
	x.f.reserved = big_ext[0].len + big_ext[1].len;
	x.f.size = 0;
	x.f.hs = hash_stream_new();
	assert_non_null(x.f.hs);
	/* hashed, from file offset 0, an unaligned source */
	big_write_check(&x, src + 1, 0, len);
	assert_true(hash_stream_digest(x.f.hs) == hash_xxh3(src + 1, len));
	assert_int_equal(x.base[8191], fx_pattern(8191));	/* the edges untouched */
	assert_int_equal(x.base[big_where(len)], fx_pattern(big_where(len)));
	hash_stream_free(x.f.hs);
	x.f.hs = NULL;
	/* unhashed, at an unaligned file offset (unaligned pool address) */
	memset(src, 0x5c, len);
	big_write_check(&x, src, 37, len - 37 - 4096);
	assert_int_equal(x.base[big_where(36)], (uint8_t)(37 * 13 + 1));
	assert_int_equal(x.base[big_where(len - 4096)], (uint8_t)((len - 4095) * 13 + 1));
	fx_teardown(&x);
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_generation),
		cmocka_unit_test(test_no_mapping),
		cmocka_unit_test(test_hole_and_truncate),
		cmocka_unit_test(test_extent_past_mapping),
		cmocka_unit_test(test_big_write),
	};

	return cmocka_run_group_tests_name("dp/shm", tests, NULL, NULL);
}
