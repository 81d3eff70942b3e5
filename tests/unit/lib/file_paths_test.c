/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/file_paths_test.c: what lib/file.c does around a data
 * path's transfer, the same for every path: a write or a truncate past the
 * size first zero-fills the hole through the path's zero (direct paths
 * only), the size moves after a write that went through (and not after
 * one that failed), the bytes and ops are counted under the path's kind,
 * a path that keeps its own sizes (tcp) gets the truncate itself, and what
 * a path keeps on a handle is dropped through its forget when the handle
 * closes. Driven through the public calls on a client built by hand (no
 * marud: the session is fresh, the room reserved) over the real shm path on
 * the pool of common/pool_fixture.h and over a recording fake table;
 * file_test covers tcp against the fake marud, dp/rdma_test the rdma path.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/pool_fixture.h"

/* ---- a recording data path ---- */

struct rec {
	int zeros, writes, reads, truncs, forgets;
	uint64_t zero_off, zero_len, write_off;
	int fail_zero;
};
static struct rec rec;

static int rec_zero(struct maru_file *f, uint64_t off, uint64_t len)
{
	rec.zeros++;
	rec.zero_off = off;
	rec.zero_len = len;
	return rec.fail_zero;
}

static ssize_t rec_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	rec.writes++;
	rec.write_off = off;
	return (ssize_t)len;
}

static ssize_t rec_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	rec.reads++;
	memset(buf, 0, len);
	return (ssize_t)len;
}

static int rec_truncate(struct maru_file *f, uint64_t size)
{
	rec.truncs++;
	f->size = size;
	return 0;
}

static int rec_sync(struct maru_file *f)
{
	return 0;
}

static void rec_forget(struct maru_file *f)
{
	rec.forgets++;
}

static const struct dp_ops direct_ops = {
	.kind = MARU_DATA_RDMA, .name = "direct", .direct = 1,
	.read = rec_read, .write = rec_write, .zero = rec_zero, .sync = rec_sync,
	.forget = rec_forget,
};

static const struct dp_ops marud_ops = {
	.kind = MARU_DATA_TCP, .name = "marud", .read = rec_read, .write = rec_write,
	.truncate = rec_truncate, .sync = rec_sync,
};

/* The fixture's client, fresh: marud answered just now. */
static void fresh(struct fx *x, const struct dp_ops *dp)
{
	memset(&rec, 0, sizeof(rec));
	x->c.dp = dp;
	atomic_store(&x->c.last_ok_ms, mono_ms());
}

/* ---- the shm path ---- */

static void test_shm_hole_and_size(void **state)
{
	const struct dp_counters *d;
	uint8_t buf[100], back[200];
	uint64_t i;
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	fresh(&x, &dp_shm_ops);
	d = &x.c.st.dp[MARU_DATA_SHM];
	x.f.size = 1000;
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 5000), sizeof(buf));
	assert_int_equal(maru_file_size(&x.f), 5100);
	assert_int_equal(x.base[fx_where(999)], fx_pattern(fx_where(999)));
	for (i = 1000; i < 5000; i++)
		assert_int_equal(x.base[fx_where(i)], 0);
	for (i = 5000; i < 5100; i++)
		assert_int_equal(x.base[fx_where(i)], 0xab);
	assert_int_equal(atomic_load(&d->wr_bytes), sizeof(buf));
	assert_int_equal(atomic_load(&d->wr_ops), 1);
	/* shrink: only the size moves; grow: what it grows reads as zeros */
	assert_int_equal(maru_file_truncate(&x.f, 2000), 0);
	assert_int_equal(maru_file_size(&x.f), 2000);
	assert_int_equal(x.base[fx_where(5000)], 0xab);
	assert_int_equal(maru_file_truncate(&x.f, 5100), 0);
	for (i = 2000; i < 5100; i++)
		assert_int_equal(x.base[fx_where(i)], 0);
	assert_int_equal(maru_file_pread(&x.f, back, sizeof(back), 4950), 150);
	assert_int_equal(atomic_load(&d->rd_bytes), 150);
	assert_int_equal(atomic_load(&d->rd_ops), 1);
	/* past the extents: -EIO, size and counters unchanged */
	x.f.reserved = 1u << 20;	/* room "reserved" beyond the extents */
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 30000), -EIO);
	assert_int_equal(maru_file_size(&x.f), 5100);
	assert_int_equal(atomic_load(&d->wr_ops), 1);
	fx_teardown(&x);
}

/* ---- any direct path ---- */

static void test_direct_hole_size_counters(void **state)
{
	const struct dp_counters *d;
	uint8_t buf[64];
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	fresh(&x, &direct_ops);
	d = &x.c.st.dp[MARU_DATA_RDMA];
	x.f.size = 1000;
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 3000), sizeof(buf));
	assert_int_equal(rec.zeros, 1);
	assert_int_equal(rec.zero_off, 1000);
	assert_int_equal(rec.zero_len, 2000);
	assert_int_equal(rec.write_off, 3000);
	assert_int_equal(x.f.size, 3064);
	assert_int_equal(atomic_load(&d->wr_bytes), sizeof(buf));
	assert_int_equal(atomic_load(&d->wr_ops), 1);
	/* inside the size: no hole, the size stays */
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 0), sizeof(buf));
	assert_int_equal(rec.zeros, 1);
	assert_int_equal(x.f.size, 3064);
	/* truncate: up fills through zero, down only moves the size */
	assert_int_equal(maru_file_truncate(&x.f, 4000), 0);
	assert_int_equal(rec.zeros, 2);
	assert_int_equal(rec.zero_off, 3064);
	assert_int_equal(rec.zero_len, 936);
	assert_int_equal(x.f.size, 4000);
	assert_int_equal(maru_file_truncate(&x.f, 10), 0);
	assert_int_equal(rec.zeros, 2);
	assert_int_equal(x.f.size, 10);
	/* a failed fill: no write, no size, no count */
	rec.fail_zero = -EIO;
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 500), -EIO);
	assert_int_equal(rec.writes, 2);
	assert_int_equal(x.f.size, 10);
	assert_int_equal(atomic_load(&d->wr_ops), 2);
	assert_int_equal(maru_file_truncate(&x.f, 600), -EIO);
	assert_int_equal(x.f.size, 10);
	/* nothing counted under another path */
	assert_int_equal(atomic_load(&x.c.st.dp[MARU_DATA_SHM].wr_ops), 0);
	fx_teardown(&x);
}

/* A path whose sizes marud keeps: no fill here, truncate is the path's. */
static void test_marud_path(void **state)
{
	uint8_t buf[64];
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	fresh(&x, &marud_ops);
	x.f.size = 1000;
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 3000), sizeof(buf));
	assert_int_equal(rec.zeros, 0);
	assert_int_equal(x.f.size, 3064);
	assert_int_equal(atomic_load(&x.c.st.dp[MARU_DATA_TCP].wr_bytes), sizeof(buf));
	assert_int_equal(maru_file_truncate(&x.f, 5000), 0);
	assert_int_equal(rec.truncs, 1);
	assert_int_equal(rec.zeros, 0);
	assert_int_equal(x.f.size, 5000);
	fx_teardown(&x);
}

/* Closing a handle drops what a path keeps on it, through that path. */
static void test_forget_on_close(void **state)
{
	struct maru_file *f;
	struct fx x;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	fresh(&x, &dp_shm_ops);	/* the current path is another one */
	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->c = &x.c;
	pthread_rwlock_init(&f->lock, NULL);
	f->held = &direct_ops;
	f->dead = 1;		/* marud dropped it: close sends nothing */
	maru_file_close(f);
	assert_int_equal(rec.forgets, 1);
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_hole_and_size),
		cmocka_unit_test(test_direct_hole_size_counters),
		cmocka_unit_test(test_marud_path),
		cmocka_unit_test(test_forget_on_close),
	};

	return cmocka_run_group_tests_name("file_paths", tests, NULL, NULL);
}
