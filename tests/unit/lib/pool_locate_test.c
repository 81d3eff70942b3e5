/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dax_client_test.c: unit tests of lib/dax_client.c, how a
 * client host finds the pool memory. libdaxctl is faked: this executable is
 * linked with -Wl,--wrap=daxctl_* (tests/unit/meson.build), so the device
 * walk lands in the __wrap_ functions below, which list the devices of
 * `devs`; the pool_locate_read_sb seam serves each fake device's superblock
 * (and checks it is read at the device's alignment, as devdax demands).
 * Regular pool files are real temp files.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <daxctl/libdaxctl.h>

#include "pool_locate.h"
#include "superblock.h"

#define MiB (1ULL << 20)

struct fdev {
	const char *name;
	int enabled;
	unsigned long align;
	struct pool_superblock sb;
	int reads;
};

static struct fdev devs[4];
static int ndevs, ctx_fail, ctx_live;
static char region_obj, ctx_obj;
static int (*real_read_sb)(const char *path, uint64_t align, void *sb, size_t len);

/* ---- fake libdaxctl ---- */

int __wrap_daxctl_new(struct daxctl_ctx **ctx);
void __wrap_daxctl_unref(struct daxctl_ctx *ctx);
struct daxctl_region *__wrap_daxctl_region_get_first(struct daxctl_ctx *ctx);
struct daxctl_region *__wrap_daxctl_region_get_next(struct daxctl_region *region);
struct daxctl_dev *__wrap_daxctl_dev_get_first(struct daxctl_region *region);
struct daxctl_dev *__wrap_daxctl_dev_get_next(struct daxctl_dev *dev);
const char *__wrap_daxctl_dev_get_devname(struct daxctl_dev *dev);
int __wrap_daxctl_dev_is_enabled(struct daxctl_dev *dev);
unsigned long __wrap_daxctl_dev_get_align(struct daxctl_dev *dev);

int __wrap_daxctl_new(struct daxctl_ctx **ctx)
{
	if (ctx_fail)
		return -ENOMEM;
	ctx_live++;
	*ctx = (struct daxctl_ctx *)&ctx_obj;
	return 0;
}

void __wrap_daxctl_unref(struct daxctl_ctx *ctx)
{
	assert_ptr_equal(ctx, &ctx_obj);
	ctx_live--;
}

struct daxctl_region *__wrap_daxctl_region_get_first(struct daxctl_ctx *ctx)
{
	return (struct daxctl_region *)&region_obj;
}

struct daxctl_region *__wrap_daxctl_region_get_next(struct daxctl_region *region)
{
	return NULL;
}

struct daxctl_dev *__wrap_daxctl_dev_get_first(struct daxctl_region *region)
{
	return ndevs ? (struct daxctl_dev *)&devs[0] : NULL;
}

struct daxctl_dev *__wrap_daxctl_dev_get_next(struct daxctl_dev *dev)
{
	struct fdev *d = (struct fdev *)dev;

	return d + 1 < devs + ndevs ? (struct daxctl_dev *)(d + 1) : NULL;
}

const char *__wrap_daxctl_dev_get_devname(struct daxctl_dev *dev)
{
	return ((struct fdev *)dev)->name;
}

int __wrap_daxctl_dev_is_enabled(struct daxctl_dev *dev)
{
	return ((struct fdev *)dev)->enabled;
}

unsigned long __wrap_daxctl_dev_get_align(struct daxctl_dev *dev)
{
	return ((struct fdev *)dev)->align;
}

/* The seam: /dev/<name> of a fake device, real files otherwise. */
static int fake_read_sb(const char *path, uint64_t align, void *sb, size_t len)
{
	int i;

	for (i = 0; i < ndevs; i++) {
		if (strncmp(path, "/dev/", 5) || strcmp(path + 5, devs[i].name))
			continue;
		/* devdax maps only whole alignment units */
		assert_int_equal(align, devs[i].align ? devs[i].align : 2 * MiB);
		devs[i].reads++;
		memcpy(sb, &devs[i].sb, len);
		return 0;
	}
	if (!strncmp(path, "/dev/dax", 8))
		return -ENOENT;
	return real_read_sb(path, align, sb, len);
}

/* ---- helpers ---- */

static void sb_make(struct pool_superblock *sb, uint8_t tag)
{
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->magic, POOL_MAGIC, 8);
	sb->layout_version = POOL_LAYOUT_VERSION;
	memset(sb->uuid, tag, sizeof(sb->uuid));
	sb->size = 64 * MiB;
	sb->align = 2 * MiB;
	sb->data_off = 2 * MiB;
	sb->generation = 3;
	pool_sb_seal(sb);
}

static void dev_add(const char *name, int enabled, unsigned long align, uint8_t tag)
{
	struct fdev *d = &devs[ndevs++];

	d->name = name;
	d->enabled = enabled;
	d->align = align;
	sb_make(&d->sb, tag);
}

static char tmpfile_path[64];

static void pool_file(uint8_t tag)
{
	struct pool_superblock sb;
	int fd;

	snprintf(tmpfile_path, sizeof(tmpfile_path), "/tmp/maru-daxtest-%ld", (long)getpid());
	fd = open(tmpfile_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	sb_make(&sb, tag);
	assert_int_equal(ftruncate(fd, 1 * MiB), 0);
	assert_int_equal(pwrite(fd, &sb, sizeof(sb), 0), sizeof(sb));
	close(fd);
}

static int setup(void **state)
{
	memset(devs, 0, sizeof(devs));
	ndevs = 0;
	ctx_fail = 0;
	ctx_live = 0;
	if (!real_read_sb)
		real_read_sb = pool_locate_read_sb;
	pool_locate_read_sb = fake_read_sb;
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(ctx_live, 0);	/* every context was released */
	if (tmpfile_path[0])
		unlink(tmpfile_path);
	return 0;
}

/* ---- tests ---- */

static void test_find_uuid(void **state)
{
	uint8_t want[16];
	char path[64];

	memset(want, 0xb2, sizeof(want));
	dev_add("dax0.0", 1, 2 * MiB, 0xa1);	/* another pool */
	dev_add("dax1.0", 0, 2 * MiB, 0xb2);	/* ours, but disabled */
	dev_add("dax2.0", 1, 1ul << 30, 0xb2);	/* ours, 1 GiB aligned */
	assert_int_equal(pool_locate_dax_find(want, path, sizeof(path)), 0);
	assert_string_equal(path, "/dev/dax2.0");
	assert_int_equal(devs[0].reads, 1);
	assert_int_equal(devs[1].reads, 0);	/* disabled devices are not probed */
	assert_int_equal(devs[2].reads, 1);
}

static void test_find_uuid_none(void **state)
{
	uint8_t want[16];
	char path[64];

	memset(want, 0xc3, sizeof(want));
	/* no device */
	assert_int_equal(pool_locate_dax_find(want, path, sizeof(path)), -ENODEV);
	dev_add("dax0.0", 1, 0, 0xc3);
	devs[0].sb.checksum ^= 1;	/* our UUID, but not a valid superblock */
	dev_add("dax0.1", 1, 4096, 0xa1);
	assert_int_equal(pool_locate_dax_find(want, path, sizeof(path)), -ENODEV);
	assert_int_equal(devs[0].reads, 1);
	assert_int_equal(devs[1].reads, 1);
	ctx_fail = 1;
	assert_int_equal(pool_locate_dax_find(want, path, sizeof(path)), -ENODEV);
	/* a name that does not fit the caller's buffer is no match */
	ctx_fail = 0;
	devs[0].sb.checksum ^= 1;
	assert_int_equal(pool_locate_dax_find(want, path, 8), -ENODEV);
}

static void test_dev_align(void **state)
{
	uint64_t a = 0;

	dev_add("dax0.0", 1, 1ul << 30, 0xa1);
	dev_add("dax3.1", 0, 0, 0xa1);
	assert_int_equal(pool_locate_dax_align("/dev/dax0.0", &a), 0);
	assert_int_equal(a, 1ull << 30);
	/* kernels without the align attribute: 2 MiB */
	assert_int_equal(pool_locate_dax_align("/dev/dax3.1", &a), 0);
	assert_int_equal(a, 2 * MiB);
	assert_int_equal(pool_locate_dax_align("/dev/dax9.9", &a), -ENODEV);
	ctx_fail = 1;
	assert_int_equal(pool_locate_dax_align("/dev/dax0.0", &a), -ENODEV);
}

static void test_locate(void **state)
{
	uint8_t ours[16], other[16];
	const char *why = NULL;
	char out[128];

	memset(ours, 0xd4, sizeof(ours));
	memset(other, 0xe5, sizeof(other));
	dev_add("dax0.0", 1, 2 * MiB, 0xd4);

	/* the reported path holds the pool: taken as is, no device probed */
	pool_file(0xe5);
	assert_int_equal(pool_locate(tmpfile_path, other, out, sizeof(out), &why), 0);
	assert_string_equal(out, tmpfile_path);
	assert_int_equal(devs[0].reads, 0);

	/* another pool behind that path: found by UUID among the devices */
	assert_int_equal(pool_locate(tmpfile_path, ours, out, sizeof(out), &why), 0);
	assert_string_equal(out, "/dev/dax0.0");

	/* the path does not exist on this host (another node's device name) */
	assert_int_equal(pool_locate("/dev/dax7.0", ours, out, sizeof(out), &why), 0);
	assert_string_equal(out, "/dev/dax0.0");

	/* nowhere */
	why = NULL;
	assert_int_equal(pool_locate("/nonexistent/pool", other, out, sizeof(out), &why),
			 -ENODEV);
	assert_non_null(why);
	assert_non_null(strstr(why, "not found"));
}

/*
 * The shm mapping of a regular pool file keeps a read-only descriptor of
 * that same file (the client's splice source) and closes it with the map.
 */
static void test_map_keeps_rofd(void **state)
{
	struct stat st, ro;
	struct pool_map *m = NULL;
	const char *why = NULL;
	uint8_t uuid[16];
	int fd;

	pool_file(0xe5);
	fd = open(tmpfile_path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 64 * MiB), 0);	/* sparse: the size sb_make says */
	close(fd);
	memset(uuid, 0xe5, sizeof(uuid));
	assert_int_equal(pool_locate_map_open(tmpfile_path, uuid, 64 * MiB, &m, &why), 0);
	assert_true(m->rofd >= 0);
	assert_int_equal(fcntl(m->rofd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(m->rofd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(stat(tmpfile_path, &st), 0);
	assert_int_equal(fstat(m->rofd, &ro), 0);
	assert_int_equal(ro.st_ino, st.st_ino);
	assert_int_equal(m->ino, (uint64_t)st.st_ino);
	assert_int_equal(m->dev, (uint64_t)st.st_dev);
	fd = m->rofd;
	pool_locate_map_close(m);
	assert_int_equal(fcntl(fd, F_GETFD), -1);	/* closed with the map */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_find_uuid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_uuid_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dev_align, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_keeps_rofd, setup, teardown),
	};

	return cmocka_run_group_tests_name("dax_client", tests, NULL, NULL);
}
