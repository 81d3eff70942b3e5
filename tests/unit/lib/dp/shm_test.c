/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/shm_test.c: what the shm data path (lib/dp/shm.c) does
 * besides walking extents (common/extent_test covers the walk itself), on
 * the hand-built pool of common/pool_fixture.h: a superblock naming another
 * generation makes every access -ESTALE and touches nothing, no mapping is
 * -ENODEV, a write touches only its own bytes (the hole before it and the
 * size are file.c's: file_test covers them) and zero only its range, an
 * extent beyond the mapping is -EIO, and the written range is tracked for
 * sync. A large write (streamed to the pool with non-temporal stores) lands
 * byte for byte across extents at any alignment, with the same digest as a
 * one-shot xxh3 of its source, and touches nothing around it. open maps
 * the pool a session names and makes the client's set of populated blocks,
 * close drops both.
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
	assert_int_equal(dp_shm_ops.zero(&x.f, 0, 100), -ESTALE);
	assert_int_equal(at(&x, 99), fx_pattern(fx_where(99)));
	assert_int_equal(x.f.size, FX_SIZE);
	assert_int_equal(x.f.dirty_hi, 0);
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

/* A write and a zero touch their own range only; both are marked for sync. */
static void test_write_and_zero(void **state)
{
	uint8_t buf[100];
	uint64_t i;
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	x.f.size = 1000;
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(dp_shm_ops.write(&x.f, buf, sizeof(buf), 5000), sizeof(buf));
	/* the hole and the size are file.c's: nothing else moved */
	assert_int_equal(x.f.size, 1000);
	assert_int_equal(at(&x, 4999), fx_pattern(fx_where(4999)));
	for (i = 5000; i < 5100; i++)
		assert_int_equal(at(&x, i), 0xab);
	assert_int_equal(at(&x, 5100), fx_pattern(fx_where(5100)));
	assert_int_equal(x.f.dirty_lo, 5000);
	assert_int_equal(x.f.dirty_hi, 5100);
	/* zero [1000, 5000): across the first extent's end */
	assert_int_equal(dp_shm_ops.zero(&x.f, 1000, 4000), 0);
	assert_int_equal(at(&x, 999), fx_pattern(fx_where(999)));
	for (i = 1000; i < 5000; i++)
		assert_int_equal(at(&x, i), 0);
	assert_int_equal(at(&x, 5000), 0xab);
	assert_int_equal(x.f.dirty_lo, 1000);
	assert_int_equal(x.f.dirty_hi, 5100);
	/* hw coherence: sync has nothing to flush and keeps the range */
	assert_int_equal(dp_shm_ops.sync(&x.f), 0);
	assert_int_equal(x.f.dirty_lo, 1000);
	/* the path counts nothing itself: file.c does */
	assert_int_equal(atomic_load(&x.c.st.dp[MARU_DATA_SHM].wr_bytes), 0);
	/* past the extents (reserved 20480): -EIO */
	assert_int_equal(dp_shm_ops.zero(&x.f, 20000, 481), -EIO);
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

/* One extent big enough for a streamed write (>= 256 KiB). */
#define STREAM_TEST	(300u * 1024)
static const struct proto_extent big_ext_one = { .off = 327680, .len = 327680 };

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

/* open maps the pool the session names and makes the set; close drops them. */
static void test_open_close(void **state)
{
	static uint8_t src[STREAM_TEST];
	struct session s = { .pool_size = FX_POOL };
	const char *why = NULL;
	struct proto_extent ext = big_ext_one;
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	x.c.map = NULL;
	memset(s.uuid, 0x5a, sizeof(s.uuid));
	snprintf(s.pool_path, sizeof(s.pool_path), "%s", x.path);
	assert_int_equal(dp_shm_ops.open(&x.c, &s, &why), 0);
	assert_non_null(x.c.map);
	assert_non_null(x.c.shm);
	assert_true(x.c.map->base != x.base);	/* a mapping of its own */
	/* a streamed write through it lands in the pool */
	memset(src, 0x77, sizeof(src));
	x.f.ext = &ext;
	x.f.next = 1;
	x.f.reserved = big_ext_one.len;
	assert_int_equal(dp_shm_ops.write(&x.f, src, sizeof(src), 0), sizeof(src));
	assert_int_equal(x.base[big_ext_one.off], 0x77);
	assert_int_equal(x.base[big_ext_one.off + sizeof(src) - 1], 0x77);
	/* opened again (the pool moved): the old mapping goes first */
	assert_int_equal(dp_shm_ops.open(&x.c, &s, &why), 0);
	dp_shm_ops.close(&x.c);
	assert_null(x.c.map);
	assert_null(x.c.shm);
	/* a uuid that is not the pool's: -ENODEV, nothing left behind */
	s.uuid[0] ^= 1;
	assert_int_equal(dp_shm_ops.open(&x.c, &s, &why), -ENODEV);
	assert_non_null(why);
	assert_null(x.c.map);
	assert_null(x.c.shm);
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_generation),
		cmocka_unit_test(test_no_mapping),
		cmocka_unit_test(test_write_and_zero),
		cmocka_unit_test(test_extent_past_mapping),
		cmocka_unit_test(test_big_write),
		cmocka_unit_test(test_open_close),
	};

	return cmocka_run_group_tests_name("dp/shm", tests, NULL, NULL);
}
