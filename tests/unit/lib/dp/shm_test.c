/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/shm_test.c: what the shm data path (lib/dp/shm.c) does
 * besides walking extents (common/extent_test covers the walk itself), on
 * the hand-built pool of common/pool_fixture.h: a superblock naming another
 * generation makes every access -ESTALE and touches nothing, no mapping is
 * -ENODEV, a write past the size zero-fills the hole, truncate zero-fills
 * what it grows and only moves the size when it shrinks, an extent beyond
 * the mapping is -EIO, and the written range is tracked for sync.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../common/pool_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_generation),
		cmocka_unit_test(test_no_mapping),
		cmocka_unit_test(test_hole_and_truncate),
		cmocka_unit_test(test_extent_past_mapping),
	};

	return cmocka_run_group_tests_name("dp/shm", tests, NULL, NULL);
}
