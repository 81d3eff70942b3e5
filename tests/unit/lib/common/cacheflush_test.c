/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/cacheflush_test.c: the one cache flush
 * (common/cacheflush.c): the line size and instruction the CPU reports, a
 * real flush over unaligned ranges that leaves the bytes intact, and both
 * of its callers reaching it: marud's devdax persist (pool_dax_ops through
 * pool_persist) and libmaru's shm data path with coherence=flush (readers
 * invalidate the lines they read, writers write back what they wrote at
 * sync). cache_flush is wrapped at link time to record each call, then
 * runs for real.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cacheflush.h"
#include "pool.h"
#include "pool_fixture.h"

#define MAX_CALLS	16

static struct {
	int n;
	const void *p[MAX_CALLS];
	size_t len[MAX_CALLS];
	int inval[MAX_CALLS];
} rec;

void __real_cache_flush(const void *p, size_t len, int invalidate);
void __wrap_cache_flush(const void *p, size_t len, int invalidate);

void __wrap_cache_flush(const void *p, size_t len, int invalidate)
{
	if (rec.n < MAX_CALLS) {
		rec.p[rec.n] = p;
		rec.len[rec.n] = len;
		rec.inval[rec.n] = invalidate;
	}
	rec.n++;
	__real_cache_flush(p, len, invalidate);
}

static void test_cpu_facts(void **state)
{
	unsigned int line = cache_line_size();
	enum cache_insn k = cache_flush_insn();

	(void)state;
	assert_true(line >= 16 && line <= 1024);
	assert_int_equal(line & (line - 1), 0);
#if defined(__x86_64__) || defined(__i386__)
	assert_true(k == CACHE_CLFLUSH || k == CACHE_CLFLUSHOPT || k == CACHE_CLWB);
#elif defined(__aarch64__)
	assert_int_equal(k, CACHE_DC);
#else
	assert_int_equal(k, CACHE_FENCE);
#endif
}

static void test_flush_keeps_bytes(void **state)
{
	static uint8_t buf[3 * 4096];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	cache_flush(buf + 3, 5000, 0);
	cache_flush(buf + 1, 1, 1);
	cache_flush(buf + 4095, 2, 1);
	cache_flush(buf, 0, 0);
	for (i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], (uint8_t)i);
}

/* marud: persist on a devdax pool is a write-back of exactly the range. */
static void test_daemon_dax_persist(void **state)
{
	static uint8_t mem[64 * 1024];
	struct pool p = { .ops = &pool_dax_ops, .base = mem, .size = sizeof(mem), .fd = -1 };

	(void)state;
	memset(&rec, 0, sizeof(rec));
	memcpy(mem + 4093, "persist", 8);
	assert_int_equal(pool_persist(&p, 4093, 8), 0);
	assert_int_equal(rec.n, 1);
	assert_ptr_equal(rec.p[0], mem + 4093);
	assert_int_equal(rec.len[0], 8);
	assert_int_equal(rec.inval[0], 0);
	assert_memory_equal(mem + 4093, "persist", 8);
	assert_int_equal(pool_persist(&p, sizeof(mem) - 1, 2), -EINVAL);
	assert_int_equal(rec.n, 1);
}

/* libmaru: coherence=flush invalidates on read and writes back at sync. */
static void test_lib_shm_flush(void **state)
{
	uint8_t buf[6000];
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_FLUSH);
	memset(&rec, 0, sizeof(rec));
	/* file bytes [4000, 10000): pieces in extents 0 and 1 */
	assert_int_equal(dp_shm_ops.read(&x.f, buf, sizeof(buf), 4000), sizeof(buf));
	assert_int_equal(rec.n, 2);
	assert_ptr_equal(rec.p[0], x.base + fx_ext[0].off + 4000);
	assert_int_equal(rec.len[0], 96);
	assert_ptr_equal(rec.p[1], x.base + fx_ext[1].off);
	assert_int_equal(rec.len[1], 6000 - 96);
	assert_true(rec.inval[0] && rec.inval[1]);

	memset(&rec, 0, sizeof(rec));
	assert_int_equal(dp_shm_ops.write(&x.f, buf, 100, 12200), 100);
	assert_int_equal(rec.n, 0);	/* nothing flushed before sync */
	assert_int_equal(dp_shm_ops.sync(&x.f), 0);
	/* [12200, 12300) straddles extents 1 and 2 */
	assert_int_equal(rec.n, 2);
	assert_ptr_equal(rec.p[0], x.base + fx_ext[1].off + 12200 - 4096);
	assert_int_equal(rec.len[0], 4096 + 8192 - 12200);
	assert_ptr_equal(rec.p[1], x.base + fx_ext[2].off);
	assert_int_equal(rec.len[1], 100 - (4096 + 8192 - 12200));
	assert_true(!rec.inval[0] && !rec.inval[1]);
	/* a second sync has nothing dirty */
	assert_int_equal(dp_shm_ops.sync(&x.f), 0);
	assert_int_equal(rec.n, 2);
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_facts),
		cmocka_unit_test(test_flush_keeps_bytes),
		cmocka_unit_test(test_daemon_dax_persist),
		cmocka_unit_test(test_lib_shm_flush),
	};

	return cmocka_run_group_tests_name("cacheflush", tests, NULL, NULL);
}
