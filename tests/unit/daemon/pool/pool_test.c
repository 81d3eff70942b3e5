/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/pool/pool_test.c: unit tests of daemon/pool/. shm: and
 * file: pools are real (in /dev/shm under names carrying the pid, and in a
 * temp dir; all removed at the end). dax: runs against a fake libdaxctl:
 * this executable is linked with -Wl,--wrap=daxctl_* (tests/unit/meson.build)
 * so pool/dax.c's lookups land in the __wrap_ functions below, and the
 * pool_dax_open_node test seam opens a regular temp file in place of the
 * char device. The one hardware case passes the wraps through to the real
 * libdaxctl; it is skipped without /dev/dax*, and since it rewrites the
 * device's superblock it also needs MARU_TEST_DAX=/dev/daxX.Y to run.
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

#define MiB (1ULL << 20)

static char tmpdir[64];

/* ---- helpers ---- */

static void shm_uri(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "shm:marud-pooltest-%ld-%s", (long)getpid(), tag);
}

static void shm_unlink_tag(const char *tag)
{
	char path[128];

	snprintf(path, sizeof(path), "/dev/shm/marud-pooltest-%ld-%s", (long)getpid(), tag);
	unlink(path);
}

static void file_uri(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "file:%s/%s", tmpdir, name);
}

/* The superblock as stored in the backing object, read without the mapping. */
static void read_sb_from(const char *path, struct pool_superblock *sb)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, sb, sizeof(*sb), 0), sizeof(*sb));
	close(fd);
}

static void assert_sb_matches(const struct pool *p)
{
	struct pool_superblock sb;

	read_sb_from(p->path, &sb);
	assert_int_equal(pool_sb_check(&sb), 0);
	assert_memory_equal(sb.magic, POOL_MAGIC, 8);
	assert_int_equal(sb.layout_version, POOL_LAYOUT_VERSION);
	assert_memory_equal(sb.uuid, p->uuid, 16);
	assert_int_equal(sb.size, p->size);
	assert_int_equal(sb.align, p->align);
	assert_int_equal(sb.data_off, p->data_off);
	assert_int_equal(sb.generation, p->generation);
	/* Version 4, variant 1: a random UUID. */
	assert_int_equal(sb.uuid[6] >> 4, 4);
	assert_int_equal(sb.uuid[8] >> 6, 2);
}

static void corrupt_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, off), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* ---- shm ---- */

static void test_shm_create(void **state)
{
	char uri[128];
	struct pool *p;
	struct stat st;
	uint8_t *view;

	shm_uri(uri, sizeof(uri), "create");
	assert_int_equal(pool_open(uri, 64 * MiB, 7, &p), 0);
	assert_ptr_equal(p->ops, &pool_shm_ops);
	assert_string_equal(p->uri, uri);
	assert_string_equal(p->path + strlen("/dev/shm/"), uri + 4);
	assert_memory_equal(p->path, "/dev/shm/", 9);
	assert_int_equal(p->created, 1);
	assert_int_equal(p->size, 64 * MiB);
	assert_int_equal(p->align, 4096);
	assert_int_equal(p->data_off, 2 * MiB);
	assert_int_equal(p->generation, 7);
	assert_true(p->fd >= 0);
	assert_int_equal(stat(p->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 64 * MiB);
	assert_sb_matches(p);

	/* What a client maps through path is the same memory. */
	int fd = open(p->path, O_RDWR);
	assert_true(fd >= 0);
	view = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(view != MAP_FAILED);
	p->base[p->data_off + 5] = 0xab;
	assert_int_equal(view[p->data_off + 5], 0xab);
	view[p->size - 1] = 0xcd;
	assert_int_equal(p->base[p->size - 1], 0xcd);
	assert_int_equal(pool_persist(p, p->data_off, 4096), 0);
	munmap(view, p->size);
	close(fd);

	pool_close(p);
	shm_unlink_tag("create");
}

/* --prealloc: a sparse shm pool gets every page now (st_blocks says so). */
static void test_shm_reserve(void **state)
{
	char uri[128];
	struct pool *p;
	struct stat st;

	shm_uri(uri, sizeof(uri), "reserve");
	assert_int_equal(pool_open(uri, 64 * MiB, 7, &p), 0);
	assert_int_equal(fstat(p->fd, &st), 0);
	assert_true((uint64_t)st.st_blocks * 512 < 64 * MiB);	/* sparse */
	assert_int_equal(pool_reserve(p), 0);
	assert_int_equal(fstat(p->fd, &st), 0);
	assert_int_equal((uint64_t)st.st_blocks * 512, 64 * MiB);
	assert_int_equal(st.st_size, 64 * MiB);
	assert_sb_matches(p);			/* the superblock is untouched */
	pool_close(p);
	shm_unlink_tag("reserve");
}

static void test_shm_reopen_keeps_uuid(void **state)
{
	char uri[128];
	struct pool *p;
	uint8_t uuid[16];

	shm_uri(uri, sizeof(uri), "reopen");
	assert_int_equal(pool_open(uri, 32 * MiB, 1, &p), 0);
	memcpy(uuid, p->uuid, 16);
	pool_close(p);

	assert_int_equal(pool_open(uri, 32 * MiB, 2, &p), 0);
	assert_int_equal(p->created, 0);
	assert_memory_equal(p->uuid, uuid, 16);
	assert_int_equal(p->generation, 2);
	assert_sb_matches(p);
	pool_close(p);

	/* Size 0 on an existing pool keeps its size, so it stays the same pool. */
	assert_int_equal(pool_open(uri, 0, 3, &p), 0);
	assert_int_equal(p->size, 32 * MiB);
	assert_memory_equal(p->uuid, uuid, 16);
	assert_sb_matches(p);
	pool_close(p);
	shm_unlink_tag("reopen");
}

static void test_shm_size_rounding(void **state)
{
	char uri[128], path[160];
	struct pool *p;

	shm_uri(uri, sizeof(uri), "round");
	assert_int_equal(pool_open(uri, 64 * MiB + 1, 1, &p), 0);
	assert_int_equal(p->size, 64 * MiB + 4096);
	assert_int_equal(file_size(p->path), 64 * MiB + 4096);
	assert_int_equal(p->data_off % p->align, 0);
	pool_close(p);

	/* Just above the data offset is the smallest pool. */
	assert_int_equal(pool_open(uri, 2 * MiB + 1, 1, &p), 0);
	assert_int_equal(p->size, 2 * MiB + 4096);
	assert_true(p->data_off < p->size);
	pool_close(p);
	shm_unlink_tag("round");

	/* No room for data: refused before anything is created. */
	shm_uri(uri, sizeof(uri), "tiny");
	snprintf(path, sizeof(path), "/dev/shm/%s", uri + 4);
	assert_int_equal(pool_open(uri, 1 * MiB, 1, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(pool_open(uri, 2 * MiB, 1, &p), -EINVAL);
	assert_int_equal(access(path, F_OK), -1);
}

static uint64_t expected_default(void)
{
	struct statvfs vfs;
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t s = ram / 4, avail;

	assert_int_equal(statvfs("/dev/shm", &vfs), 0);
	avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (avail / 2 < s)
		s = avail / 2;
	s &= ~(2 * MiB - 1);
	return s < 64 * MiB ? 64 * MiB : s;
}

static void test_shm_default_size(void **state)
{
	char uri[128];
	struct pool *p;
	uint64_t want = expected_default();

	shm_uri(uri, sizeof(uri), "default");
	assert_int_equal(pool_open(uri, 0, 1, &p), 0);
	assert_int_equal(p->size, want);
	assert_int_equal(p->size % (2 * MiB), 0);
	assert_true(p->size >= 64 * MiB);
	assert_int_equal(file_size(p->path), want);
	assert_sb_matches(p);
	pool_close(p);
	shm_unlink_tag("default");
}

static void test_shm_busy(void **state)
{
	char uri[128];
	struct pool *p, *q;

	shm_uri(uri, sizeof(uri), "busy");
	assert_int_equal(pool_open(uri, 16 * MiB, 1, &p), 0);
	assert_int_equal(pool_open(uri, 16 * MiB, 2, &q), -EBUSY);
	assert_null(q);
	/* The loser must not resize or rewrite the winner's pool. */
	assert_int_equal(pool_open(uri, 32 * MiB, 2, &q), -EBUSY);
	assert_int_equal(file_size(p->path), 16 * MiB);
	assert_sb_matches(p);
	pool_close(p);

	/* Closing releases the claim. */
	assert_int_equal(pool_open(uri, 16 * MiB, 3, &q), 0);
	pool_close(q);
	shm_unlink_tag("busy");
}

static void test_bad_uris(void **state)
{
	static const char *const bad[] = {
		"", "shm", "nope:x", "SHM:x", "shm:", "shm:a/b", "shm:/abs", "shm:.",
		"shm:..", "file:", "file:relative/pool", "file:/", "dax:", "dax:dax0.0",
		":x", "shmx:y",
	};
	char longname[300], longuri[PATH_MAX + 16];
	struct pool *p = (struct pool *)1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(pool_open(bad[i], 16 * MiB, 1, &p), -EINVAL);
		assert_null(p);
	}
	/* NAME_MAX is the limit of one /dev/shm entry. */
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "shm:", 4);
	longname[4 + 256] = '\0';
	assert_int_equal(pool_open(longname, 16 * MiB, 1, &p), -EINVAL);
	memset(longuri, 'a', sizeof(longuri));
	memcpy(longuri, "file:/", 6);
	longuri[sizeof(longuri) - 1] = '\0';
	assert_int_equal(pool_open(longuri, 16 * MiB, 1, &p), -ENAMETOOLONG);
}

/* ---- file ---- */

static void test_file_create_persist_reopen(void **state)
{
	char uri[128];
	struct pool *p;
	uint8_t uuid[16], buf[8];
	int fd;

	file_uri(uri, sizeof(uri), "pool1");
	assert_int_equal(pool_open(uri, 8 * MiB, 11, &p), 0);
	assert_ptr_equal(p->ops, &pool_file_ops);
	assert_int_equal(p->created, 1);
	assert_string_equal(p->path, uri + 5);
	assert_int_equal(p->size, 8 * MiB);
	assert_int_equal(p->data_off, 2 * MiB);
	assert_sb_matches(p);
	memcpy(uuid, p->uuid, 16);

	/* persist reaches the file through an unaligned range. */
	memcpy(p->base + p->data_off + 4093, "persist", 8);
	assert_int_equal(pool_persist(p, p->data_off + 4093, 8), 0);
	fd = open(p->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 8, (off_t)p->data_off + 4093), 8);
	assert_memory_equal(buf, "persist", 8);
	close(fd);
	assert_int_equal(pool_persist(p, p->size - 4096, 4096), 0);
	assert_int_equal(pool_persist(p, p->size, 0), 0);
	assert_int_equal(pool_persist(p, p->size - 4096, 4097), -EINVAL);
	assert_int_equal(pool_persist(p, UINT64_MAX, 2), -EINVAL);
	pool_close(p);

	assert_int_equal(pool_open(uri, 8 * MiB, 12, &p), 0);
	assert_int_equal(p->created, 0);
	assert_memory_equal(p->uuid, uuid, 16);
	assert_int_equal(p->generation, 12);
	assert_sb_matches(p);
	assert_int_equal(pool_open(uri, 8 * MiB, 13, &(struct pool *){ NULL }), -EBUSY);
	pool_close(p);
	unlink(uri + 5);
}

static void test_file_not_regular(void **state)
{
	char uri[128];
	struct pool *p;

	/* The temp dir itself. */
	snprintf(uri, sizeof(uri), "file:%s", tmpdir);
	assert_int_equal(pool_open(uri, 8 * MiB, 1, &p), -EISDIR);
	assert_null(p);
	assert_int_equal(pool_open("file:/dev/null", 8 * MiB, 1, &p), -EINVAL);
	assert_null(p);
	/* A missing parent directory. */
	file_uri(uri, sizeof(uri), "nodir/pool");
	assert_int_equal(pool_open(uri, 8 * MiB, 1, &p), -ENOENT);
}

/*
 * A superblock that fails its check (or describes another geometry) is not
 * trusted: pool_open writes a fresh one, with a new UUID, so clients that
 * knew the old pool cannot mistake it for this one.
 */
static void test_sb_corruption_rewrites(void **state)
{
	char uri[128];
	struct pool *p;
	uint8_t uuid[16], uuid2[16];
	struct pool_superblock sb;

	file_uri(uri, sizeof(uri), "corrupt");
	assert_int_equal(pool_open(uri, 8 * MiB, 1, &p), 0);
	memcpy(uuid, p->uuid, 16);
	pool_close(p);

	/* A flipped byte inside the UUID: the checksum no longer holds. */
	corrupt_byte(uri + 5, offsetof(struct pool_superblock, uuid) + 3);
	read_sb_from(uri + 5, &sb);
	assert_int_equal(pool_sb_check(&sb), -EINVAL);
	assert_int_equal(pool_open(uri, 8 * MiB, 2, &p), 0);
	assert_int_equal(p->created, 0);
	assert_memory_not_equal(p->uuid, uuid, 16);
	assert_sb_matches(p);
	memcpy(uuid2, p->uuid, 16);
	pool_close(p);

	/* A broken magic: same. */
	corrupt_byte(uri + 5, 0);
	assert_int_equal(pool_open(uri, 8 * MiB, 3, &p), 0);
	assert_memory_not_equal(p->uuid, uuid2, 16);
	assert_sb_matches(p);
	memcpy(uuid2, p->uuid, 16);
	pool_close(p);

	/* Another size is another pool. */
	assert_int_equal(pool_open(uri, 16 * MiB, 4, &p), 0);
	assert_memory_not_equal(p->uuid, uuid2, 16);
	assert_sb_matches(p);
	pool_close(p);
	unlink(uri + 5);
}

static void test_kind_names(void **state)
{
	assert_string_equal(pool_kind_name(POOL_SHM), "shm");
	assert_string_equal(pool_kind_name(POOL_FILE), "file");
	assert_string_equal(pool_kind_name(POOL_DAX), "dax");
	assert_string_equal(pool_kind_name((enum pool_kind)0), "unknown");
	assert_string_equal(pool_shm_ops.scheme, "shm");
	assert_string_equal(pool_file_ops.scheme, "file");
	assert_string_equal(pool_dax_ops.scheme, "dax");
	pool_close(NULL);
}

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

static int group_setup(void **state)
{
	log_init("pool_test", 1, 0);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/marud-pooltest-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	static const char *const tags[] = { "create", "reopen", "round", "tiny",
					    "default", "busy" };
	static const char *const files[] = { "pool1", "corrupt", "daxnode" };
	char path[PATH_MAX];

	/* A failed assert skips a test's own cleanup. */
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		shm_unlink_tag(tags[i]);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
		unlink(path);
	}
	return rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_create),
		cmocka_unit_test(test_shm_reserve),
		cmocka_unit_test(test_shm_reopen_keeps_uuid),
		cmocka_unit_test(test_shm_size_rounding),
		cmocka_unit_test(test_shm_default_size),
		cmocka_unit_test(test_shm_busy),
		cmocka_unit_test(test_bad_uris),
		cmocka_unit_test(test_file_create_persist_reopen),
		cmocka_unit_test(test_file_not_regular),
		cmocka_unit_test(test_sb_corruption_rewrites),
		cmocka_unit_test(test_kind_names),
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

	return cmocka_run_group_tests_name("pool", tests, group_setup, group_teardown);
}
