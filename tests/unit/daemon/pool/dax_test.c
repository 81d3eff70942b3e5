/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/pool/dax_test.c: the dax: backend (daemon/pool/dax.c)
 * against a fake libdaxctl: this executable is linked with
 * -Wl,--wrap=daxctl_* (tests/unit/meson.build) so pool/dax.c's lookups land
 * in the __wrap_ functions below, and the pool_dax_open_node test seam opens
 * a regular temp file in place of the char device. The one hardware case
 * passes the wraps through to the real libdaxctl; it is skipped without
 * /dev/dax*, and since it rewrites the device's superblock it also needs
 * MARU_TEST_DAX=/dev/daxX.Y to run. Built without libdaxctl, dax: pools are
 * refused with -ENOTSUP.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "pool.h"
#include "superblock.h"

#include "fixture.h"

#if HAVE_DAXCTL
/* ---- dax, against a fake libdaxctl ---- */

#include <daxctl/libdaxctl.h>

/* The types are opaque in libdaxctl.h; the fake completes them here. */
struct daxctl_dev {
	const char *name;
	int enabled;
	unsigned long long size;
	unsigned long align;
	int major, minor;
};

struct daxctl_region {
	struct daxctl_dev *devs;
	size_t ndevs;
};

struct daxctl_ctx {
	int unused;
};

static struct daxctl_ctx fake_ctx;
static struct daxctl_dev fake_devs0[2], fake_devs1[1];
static struct daxctl_region fake_regions[2] = {
	{ fake_devs0, 2 },
	{ fake_devs1, 1 },
};
static int fake_new_rc;		/* what daxctl_new returns */
static int fake_refs;		/* daxctl_new minus daxctl_unref */
static int fake_real;		/* 1: pass everything to libdaxctl */
static char fake_node[128];	/* the regular file that stands in for the device */
static int fake_node_major, fake_node_minor;

int __real_daxctl_new(struct daxctl_ctx **ctx);
void __real_daxctl_unref(struct daxctl_ctx *ctx);
struct daxctl_region *__real_daxctl_region_get_first(struct daxctl_ctx *ctx);
struct daxctl_region *__real_daxctl_region_get_next(struct daxctl_region *region);
struct daxctl_dev *__real_daxctl_dev_get_first(struct daxctl_region *region);
struct daxctl_dev *__real_daxctl_dev_get_next(struct daxctl_dev *dev);
const char *__real_daxctl_dev_get_devname(struct daxctl_dev *dev);
int __real_daxctl_dev_is_enabled(struct daxctl_dev *dev);
unsigned long long __real_daxctl_dev_get_size(struct daxctl_dev *dev);
unsigned long __real_daxctl_dev_get_align(struct daxctl_dev *dev);
int __real_daxctl_dev_get_major(struct daxctl_dev *dev);
int __real_daxctl_dev_get_minor(struct daxctl_dev *dev);

int __wrap_daxctl_new(struct daxctl_ctx **ctx);
void __wrap_daxctl_unref(struct daxctl_ctx *ctx);
struct daxctl_region *__wrap_daxctl_region_get_first(struct daxctl_ctx *ctx);
struct daxctl_region *__wrap_daxctl_region_get_next(struct daxctl_region *region);
struct daxctl_dev *__wrap_daxctl_dev_get_first(struct daxctl_region *region);
struct daxctl_dev *__wrap_daxctl_dev_get_next(struct daxctl_dev *dev);
const char *__wrap_daxctl_dev_get_devname(struct daxctl_dev *dev);
int __wrap_daxctl_dev_is_enabled(struct daxctl_dev *dev);
unsigned long long __wrap_daxctl_dev_get_size(struct daxctl_dev *dev);
unsigned long __wrap_daxctl_dev_get_align(struct daxctl_dev *dev);
int __wrap_daxctl_dev_get_major(struct daxctl_dev *dev);
int __wrap_daxctl_dev_get_minor(struct daxctl_dev *dev);

/* The test seam in pool_dax.c. */
extern int (*pool_dax_open_node)(const char *path, int maj, int min);

int __wrap_daxctl_new(struct daxctl_ctx **ctx)
{
	if (fake_real)
		return __real_daxctl_new(ctx);
	if (fake_new_rc)
		return fake_new_rc;
	*ctx = &fake_ctx;
	fake_refs++;
	return 0;
}

void __wrap_daxctl_unref(struct daxctl_ctx *ctx)
{
	if (fake_real) {
		__real_daxctl_unref(ctx);
		return;
	}
	assert_ptr_equal(ctx, &fake_ctx);
	fake_refs--;
}

struct daxctl_region *__wrap_daxctl_region_get_first(struct daxctl_ctx *ctx)
{
	if (fake_real)
		return __real_daxctl_region_get_first(ctx);
	assert_ptr_equal(ctx, &fake_ctx);
	return &fake_regions[0];
}

struct daxctl_region *__wrap_daxctl_region_get_next(struct daxctl_region *region)
{
	if (fake_real)
		return __real_daxctl_region_get_next(region);
	return region == &fake_regions[0] ? &fake_regions[1] : NULL;
}

struct daxctl_dev *__wrap_daxctl_dev_get_first(struct daxctl_region *region)
{
	if (fake_real)
		return __real_daxctl_dev_get_first(region);
	return region->ndevs ? &region->devs[0] : NULL;
}

struct daxctl_dev *__wrap_daxctl_dev_get_next(struct daxctl_dev *dev)
{
	if (fake_real)
		return __real_daxctl_dev_get_next(dev);
	for (size_t r = 0; r < 2; r++) {
		struct daxctl_region *reg = &fake_regions[r];

		if (dev >= reg->devs && dev < reg->devs + reg->ndevs)
			return dev + 1 < reg->devs + reg->ndevs ? dev + 1 : NULL;
	}
	fail_msg("unknown fake dev");
	return NULL;
}

const char *__wrap_daxctl_dev_get_devname(struct daxctl_dev *dev)
{
	return fake_real ? __real_daxctl_dev_get_devname(dev) : dev->name;
}

int __wrap_daxctl_dev_is_enabled(struct daxctl_dev *dev)
{
	return fake_real ? __real_daxctl_dev_is_enabled(dev) : dev->enabled;
}

unsigned long long __wrap_daxctl_dev_get_size(struct daxctl_dev *dev)
{
	return fake_real ? __real_daxctl_dev_get_size(dev) : dev->size;
}

unsigned long __wrap_daxctl_dev_get_align(struct daxctl_dev *dev)
{
	return fake_real ? __real_daxctl_dev_get_align(dev) : dev->align;
}

int __wrap_daxctl_dev_get_major(struct daxctl_dev *dev)
{
	return fake_real ? __real_daxctl_dev_get_major(dev) : dev->major;
}

int __wrap_daxctl_dev_get_minor(struct daxctl_dev *dev)
{
	return fake_real ? __real_daxctl_dev_get_minor(dev) : dev->minor;
}

/* Stands in for the char device: a regular file as big as the fake device. */
static int fake_open_node(const char *path, int maj, int min)
{
	int fd;

	fake_node_major = maj;
	fake_node_minor = min;
	fd = open(fake_node, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int (*real_open_node)(const char *path, int maj, int min);

static void fake_device(struct daxctl_dev *d, const char *name, int enabled,
			unsigned long long size, unsigned long align, int minor)
{
	*d = (struct daxctl_dev){ .name = name, .enabled = enabled, .size = size,
				  .align = align, .major = 251, .minor = minor };
}

static int dax_setup(void **state)
{
	int fd;

	fake_device(&fake_devs0[0], "dax0.0", 1, 64 * MiB, 2 * MiB, 0);
	fake_device(&fake_devs0[1], "dax0.1", 0, 64 * MiB, 2 * MiB, 1);
	fake_device(&fake_devs1[0], "dax1.0", 1, 65 * MiB, 16 * MiB, 2);
	fake_new_rc = 0;
	fake_refs = 0;
	fake_real = 0;
	fake_node_major = fake_node_minor = -1;
	snprintf(fake_node, sizeof(fake_node), "%s/daxnode", tmpdir);
	fd = open(fake_node, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 128 * MiB))
		return -1;
	close(fd);
	real_open_node = pool_dax_open_node;
	pool_dax_open_node = fake_open_node;
	return 0;
}

static int dax_teardown(void **state)
{
	pool_dax_open_node = real_open_node;
	unlink(fake_node);
	/* Every daxctl_new was matched by an unref. */
	return fake_refs == 0 ? 0 : -1;
}

static void test_dax_not_found(void **state)
{
	struct pool *p;

	assert_int_equal(pool_open("dax:/dev/dax9.9", 0, 1, &p), -ENODEV);
	assert_null(p);
	/* The node name must match whole, not as a prefix. */
	assert_int_equal(pool_open("dax:/dev/dax0", 0, 1, &p), -ENODEV);
	assert_int_equal(fake_refs, 0);
	assert_int_equal(fake_node_major, -1);
}

static void test_dax_disabled(void **state)
{
	struct pool *p;

	assert_int_equal(pool_open("dax:/dev/dax0.1", 0, 1, &p), -ENXIO);
	assert_null(p);
	assert_int_equal(fake_refs, 0);
	assert_int_equal(fake_node_major, -1);
}

static void test_dax_too_small(void **state)
{
	struct pool *p;

	assert_int_equal(pool_open("dax:/dev/dax0.0", 64 * MiB + 4096, 1, &p), -ENOSPC);
	assert_null(p);
	/* dax1.0 is 65 MiB, but only 64 of it is whole 16 MiB blocks. */
	assert_int_equal(pool_open("dax:/dev/dax1.0", 65 * MiB, 1, &p), -ENOSPC);
	assert_int_equal(fake_refs, 0);
}

static void test_dax_ctx_fails(void **state)
{
	struct pool *p;

	fake_new_rc = -ENOMEM;
	assert_int_equal(pool_open("dax:/dev/dax0.0", 0, 1, &p), -ENOMEM);
	assert_null(p);
}

static void test_dax_size_from_device(void **state)
{
	struct pool *p, *q;
	uint8_t uuid[16];

	assert_int_equal(pool_open("dax:/dev/dax0.0", 0, 5, &p), 0);
	assert_ptr_equal(p->ops, &pool_dax_ops);
	assert_string_equal(p->path, "/dev/dax0.0");
	assert_int_equal(p->created, 0);
	assert_int_equal(p->size, 64 * MiB);
	assert_int_equal(p->align, 2 * MiB);
	assert_int_equal(p->data_off, 2 * MiB);
	assert_int_equal(fake_node_major, 251);
	assert_int_equal(fake_node_minor, 0);
	assert_int_equal(fake_refs, 0);
	memcpy(uuid, p->uuid, 16);

	/* The superblock landed in the "device" (the node file). */
	struct pool_superblock sb;
	read_sb_from(fake_node, &sb);
	assert_int_equal(pool_sb_check(&sb), 0);
	assert_memory_equal(sb.uuid, uuid, 16);
	assert_int_equal(sb.size, 64 * MiB);
	assert_int_equal(sb.align, 2 * MiB);

	/* persist: cache-line write-back of an unaligned range. */
	memcpy(p->base + p->data_off + 63, "flushed", 8);
	assert_int_equal(pool_persist(p, p->data_off + 63, 8), 0);
	assert_int_equal(pool_persist(p, 0, p->size), 0);
	assert_int_equal(pool_persist(p, p->size - 1, 2), -EINVAL);
	assert_int_equal(pool_reserve(p), 0);	/* device memory: nothing to do */

	/* Claimed: a second marud is refused. */
	assert_int_equal(pool_open("dax:/dev/dax0.0", 0, 6, &q), -EBUSY);
	assert_null(q);
	pool_close(p);

	/* Reopen: same geometry, same UUID, new generation. */
	assert_int_equal(pool_open("dax:/dev/dax0.0", 0, 7, &p), 0);
	assert_memory_equal(p->uuid, uuid, 16);
	read_sb_from(fake_node, &sb);
	assert_int_equal(sb.generation, 7);
	pool_close(p);
	assert_int_equal(fake_refs, 0);
}

static void test_dax_align_from_device(void **state)
{
	struct pool *p;

	/* 16 MiB alignment: size rounds down to it, data starts at it. */
	assert_int_equal(pool_open("dax:/dev/dax1.0", 0, 1, &p), 0);
	assert_int_equal(p->align, 16 * MiB);
	assert_int_equal(p->size, 64 * MiB);
	assert_int_equal(p->data_off, 16 * MiB);
	assert_int_equal(fake_node_minor, 2);
	pool_close(p);

	/* A smaller request rounds up to the device alignment. */
	assert_int_equal(pool_open("dax:/dev/dax0.0", 5 * MiB, 1, &p), 0);
	assert_int_equal(p->size, 6 * MiB);
	assert_int_equal(p->align, 2 * MiB);
	pool_close(p);

	/* Leaves nothing after the 16 MiB data offset. */
	assert_int_equal(pool_open("dax:/dev/dax1.0", 16 * MiB, 1, &p), -EINVAL);

	/* No align attribute (old kernel): 2 MiB. Not a power of two: refused. */
	fake_devs1[0].align = 0;
	assert_int_equal(pool_open("dax:/dev/dax1.0", 0, 1, &p), 0);
	assert_int_equal(p->align, 2 * MiB);
	assert_int_equal(p->size, 64 * MiB);
	pool_close(p);
	fake_devs1[0].align = 3 * MiB;
	assert_int_equal(pool_open("dax:/dev/dax1.0", 0, 1, &p), -EINVAL);
	assert_int_equal(fake_refs, 0);
}

/* The real open refuses a node that is not the char device libdaxctl named. */
static void test_dax_real_node_check(void **state)
{
	struct pool *p;

	pool_dax_open_node = real_open_node;
	/* /dev/dax0.0 is absent here or not dev 251:0: either way -ENOENT/-ENODEV. */
	int rc = pool_open("dax:/dev/dax0.0", 0, 1, &p);
	assert_true(rc == -ENOENT || rc == -ENODEV || rc == -EBUSY);
	assert_null(p);
	pool_dax_open_node = fake_open_node;
	assert_int_equal(fake_refs, 0);
}

/*
 * On real hardware, through the real libdaxctl. Destructive (rewrites the
 * superblock), so it runs only when MARU_TEST_DAX names the device.
 */
static void test_dax_hardware(void **state)
{
	const char *dev = getenv("MARU_TEST_DAX");
	char uri[PATH_MAX + 8];
	struct pool *p;
	uint8_t uuid[16];
	glob_t g;
	int have = glob("/dev/dax*", 0, NULL, &g) == 0 && g.gl_pathc > 0;

	globfree(&g);
	if (!have) {
		print_message("no /dev/dax* device: hardware test skipped\n");
		skip();
	}
	if (!dev || !*dev) {
		print_message("set MARU_TEST_DAX=/dev/daxX.Y (contents are overwritten)\n");
		skip();
	}
	fake_real = 1;
	pool_dax_open_node = real_open_node;
	snprintf(uri, sizeof(uri), "dax:%s", dev);
	assert_int_equal(pool_open(uri, 0, 1, &p), 0);
	assert_true(p->size > p->data_off);
	assert_int_equal(p->size % p->align, 0);
	assert_int_equal(p->data_off % p->align, 0);
	memcpy(uuid, p->uuid, 16);
	p->base[p->data_off] = 0x42;
	assert_int_equal(pool_persist(p, p->data_off, 1), 0);
	pool_close(p);
	assert_int_equal(pool_open(uri, 0, 2, &p), 0);
	assert_memory_equal(p->uuid, uuid, 16);
	assert_int_equal(p->base[p->data_off], 0x42);
	pool_close(p);
	fake_real = 0;
	pool_dax_open_node = fake_open_node;
}

#else /* !HAVE_DAXCTL */

static void test_dax_unsupported(void **state)
{
	struct pool *p;

	assert_int_equal(pool_open("dax:/dev/dax0.0", 0, 1, &p), -ENOTSUP);
	assert_null(p);
}

#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#if HAVE_DAXCTL
		cmocka_unit_test_setup_teardown(test_dax_not_found, dax_setup, dax_teardown),
		cmocka_unit_test_setup_teardown(test_dax_disabled, dax_setup, dax_teardown),
		cmocka_unit_test_setup_teardown(test_dax_too_small, dax_setup, dax_teardown),
		cmocka_unit_test_setup_teardown(test_dax_ctx_fails, dax_setup, dax_teardown),
		cmocka_unit_test_setup_teardown(test_dax_size_from_device, dax_setup, dax_teardown),
		cmocka_unit_test_setup_teardown(test_dax_align_from_device, dax_setup, dax_teardown),
		cmocka_unit_test_setup_teardown(test_dax_real_node_check, dax_setup, dax_teardown),
		cmocka_unit_test_setup_teardown(test_dax_hardware, dax_setup, dax_teardown),
#else
		cmocka_unit_test(test_dax_unsupported),
#endif
	};

	return cmocka_run_group_tests_name("dax", tests, pool_group_setup,
					   pool_group_teardown);
}
