/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/extent_test.c: the one offset-to-extent walk
 * (common/extent.c), checked on its own against a slow reference and then
 * through each of its three callers on the same extents: marud's
 * alloc_extent_list_at (daemon/alloc.c), libmaru's shm data path (dp/shm.c reads
 * and writes) and its zero-copy mapper (map.c layout_plan, through
 * maru_map with a fake MARUFS_IOC_EXTENTS).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include <cmocka.h>

#include "alloc.h"
#include "extent.h"
#include "maru/libmaru.h"
#include "maru/marufs_ioctl.h"
#include "pool_fixture.h"

static void test_iter_pieces(void **state)
{
	struct extent_iter it;
	struct extent_piece p;
	uint64_t off, len, k;

	(void)state;
	for (off = 0; off < FX_SIZE + 10; off += 1111) {
		for (len = 1; len < 20000; len += 3777) {
			k = off;
			extent_iter_init(&it, fx_ext, FX_NEXT, off, len);
			while (extent_iter_next(&it, &p)) {
				assert_int_equal(p.file_off, k);
				assert_int_equal(p.pool_off, fx_where(k));
				/* a piece never crosses an extent end */
				assert_int_equal(p.pool_off + p.len - 1, fx_where(k + p.len - 1));
				assert_int_equal(fx_ext[p.idx].off <= p.pool_off, 1);
				k += p.len;
			}
			/* whatever the extents (20480 bytes) do not hold is left */
			assert_int_equal(k + it.left, off + len);
			assert_int_equal(it.left, off + len > 20480 ?
					 off + len - (off > 20480 ? off : 20480) : 0);
		}
	}
}

static void test_at_and_empty(void **state)
{
	static const struct extent holes[] = { { 100, 0 }, { 200, 10 }, { 300, 0 }, { 400, 5 } };
	uint64_t po = 0;

	(void)state;
	assert_int_equal(extent_at(fx_ext, FX_NEXT, 0, &po), 4096);
	assert_int_equal(po, 8192);
	assert_int_equal(extent_at(fx_ext, FX_NEXT, 4096 + 8191, &po), 1);
	assert_int_equal(po, 65536 + 8191);
	assert_int_equal(extent_at(fx_ext, FX_NEXT, 20480, &po), 0);
	/* zero-length extents hold no byte */
	assert_int_equal(extent_at(holes, 4, 0, &po), 10);
	assert_int_equal(po, 200);
	assert_int_equal(extent_at(holes, 4, 10, &po), 5);
	assert_int_equal(po, 400);
	assert_int_equal(extent_at(NULL, 0, 0, &po), 0);
}

/* Caller 1: marud's allocator. */
static void test_daemon_extent_list_at(void **state)
{
	struct extent v[FX_NEXT];
	struct extent_list l = { .v = v, .n = FX_NEXT, .cap = FX_NEXT };
	uint64_t po, n, k;

	(void)state;
	memcpy(v, fx_ext, sizeof(v));
	for (k = 0; k < 20480; k += 997) {
		n = alloc_extent_list_at(&l, k, &po);
		assert_int_equal(po, fx_where(k));
		assert_int_equal(fx_where(k + n - 1), po + n - 1);
		assert_true(k + n == 20480 || fx_where(k + n) != po + n);
	}
	assert_int_equal(alloc_extent_list_at(&l, 20480, &po), 0);
}

/* Caller 2: the shm data path reads and writes through the extents. */
static void test_shm_walk(void **state)
{
	static uint8_t buf[FX_SIZE], src[3000];
	struct fx x;
	uint64_t k;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	assert_int_equal(dp_shm_ops.read(&x.f, buf, FX_SIZE, 0), FX_SIZE);
	for (k = 0; k < FX_SIZE; k++)
		assert_int_equal(buf[k], fx_pattern(fx_where(k)));
	for (k = 0; k < sizeof(src); k++)
		src[k] = (uint8_t)~k;
	/* across the first extent boundary (4096) */
	assert_int_equal(dp_shm_ops.write(&x.f, src, sizeof(src), 3000), sizeof(src));
	for (k = 0; k < sizeof(src); k++)
		assert_int_equal(x.base[fx_where(3000 + k)], src[k]);
	/* past the extents: the walk says they do not cover the range */
	x.f.size = 30000;
	assert_int_equal(dp_shm_ops.read(&x.f, buf, 100, 20480 - 50), -EIO);
	fx_teardown(&x);
}

/* Caller 3: maru_map lays the extents side by side. */
static struct fx *map_fx;

int __wrap_ioctl(int fd, unsigned long req, ...);
int __real_ioctl(int fd, unsigned long req, ...);

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	struct marufs_extents *x;
	va_list ap;

	va_start(ap, req);
	x = va_arg(ap, struct marufs_extents *);
	va_end(ap);
	if (req != MARUFS_IOC_EXTENTS)
		return 0;
	memcpy(x->uuid, ((struct pool_superblock *)map_fx->base)->uuid, 16);
	x->generation = FX_GEN;
	x->ino = 42;
	x->size = FX_SIZE;
	x->pool_size = FX_POOL;
	x->align = 4096;
	x->data_off = POOL_SB_SIZE;
	x->coherence = MARUFS_COHERENCE_HW;
	x->nextents = FX_NEXT;
	x->count = FX_NEXT - x->first;
	x->flags = 0;
	memcpy(x->ext, fx_ext + x->first, x->count * sizeof(x->ext[0]));
	snprintf(x->pool_path, sizeof(x->pool_path), "%s", map_fx->path);
	return 0;
}

static void test_map_layout(void **state)
{
	struct maru_map *m;
	const uint8_t *p;
	struct fx x;
	uint64_t k;
	int fd;

	(void)state;
	fx_setup(&x, MARU_COHERENCE_HW);
	map_fx = &x;
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(maru_map(fd, NULL, 0, &m), 0);
	assert_int_equal(maru_map_size(m), FX_SIZE);
	p = maru_map_addr(m);
	for (k = 0; k < FX_SIZE; k++)
		assert_int_equal(p[k], fx_pattern(fx_where(k)));
	assert_int_equal(maru_unmap(m), 0);
	close(fd);
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iter_pieces),
		cmocka_unit_test(test_at_and_empty),
		cmocka_unit_test(test_daemon_extent_list_at),
		cmocka_unit_test(test_shm_walk),
		cmocka_unit_test(test_map_layout),
	};

	return cmocka_run_group_tests_name("extent", tests, NULL, NULL);
}
