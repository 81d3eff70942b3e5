// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/integration/tools/fakedax.c: an LD_PRELOAD module that makes a
 * regular file look like a device-DAX character device to marud, marufs and
 * libmaru clients, so a pool with a device's alignment runs without one.
 * $FAKEDAX_PATH names the file (its base name, e.g. dax9.0, is the device
 * name), $FAKEDAX_ALIGN its alignment (default 2 MiB). It replaces
 * libdaxctl's walk (one region, one enabled device of the file's size and
 * that alignment) and the stat family, which report the file as a char
 * device with the numbers libdaxctl gives. Real: marud's dax: backend and
 * libmaru's devdax paths (pool_locate, the mapping granule of lib/map.c);
 * emulated: the kernel's device (a regular file's mmap takes any page
 * offset, so only libmaru's own granule rule is checked).
 */
/* Both names of each call are defined here: no stat -> stat64 redirect. */
#undef _FILE_OFFSET_BITS
#include <daxctl/libdaxctl.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAKE_MAJOR	251
#define FAKE_MINOR	77

/* Distinct non-NULL handles; the caller never looks inside. */
static char ctx_tag, region_tag, dev_tag;

static const char *fake_path(void)
{
	return getenv("FAKEDAX_PATH");
}

/* The fake file's identity, asked of the kernel directly (not through us). */
static int fake_id(dev_t *dev, ino_t *ino, off_t *size)
{
	const char *p = fake_path();
	struct stat st;

	if (!p || syscall(SYS_newfstatat, AT_FDCWD, p, &st, 0))
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	*size = st.st_size;
	return 0;
}

static void disguise(struct stat *st)
{
	dev_t dev;
	ino_t ino;
	off_t size;

	if (fake_id(&dev, &ino, &size) == 0 && st->st_dev == dev && st->st_ino == ino) {
		st->st_mode = (st->st_mode & 07777) | S_IFCHR;
		st->st_rdev = makedev(FAKE_MAJOR, FAKE_MINOR);
		st->st_size = 0;
	}
}

int daxctl_new(struct daxctl_ctx **ctx)
{
	*ctx = (struct daxctl_ctx *)&ctx_tag;
	return 0;
}

void daxctl_unref(struct daxctl_ctx *ctx)
{
	(void)ctx;
}

struct daxctl_region *daxctl_region_get_first(struct daxctl_ctx *ctx)
{
	(void)ctx;
	return fake_path() ? (struct daxctl_region *)&region_tag : NULL;
}

struct daxctl_region *daxctl_region_get_next(struct daxctl_region *r)
{
	(void)r;
	return NULL;
}

struct daxctl_dev *daxctl_dev_get_first(struct daxctl_region *r)
{
	(void)r;
	return (struct daxctl_dev *)&dev_tag;
}

struct daxctl_dev *daxctl_dev_get_next(struct daxctl_dev *d)
{
	(void)d;
	return NULL;
}

const char *daxctl_dev_get_devname(struct daxctl_dev *d)
{
	const char *p = fake_path(), *b = p ? strrchr(p, '/') : NULL;

	(void)d;
	return b ? b + 1 : p;
}

int daxctl_dev_is_enabled(struct daxctl_dev *d)
{
	(void)d;
	return 1;
}

unsigned long long daxctl_dev_get_size(struct daxctl_dev *d)
{
	dev_t dev;
	ino_t ino;
	off_t size;

	(void)d;
	return fake_id(&dev, &ino, &size) ? 0 : (unsigned long long)size;
}

unsigned long daxctl_dev_get_align(struct daxctl_dev *d)
{
	const char *a = getenv("FAKEDAX_ALIGN");

	(void)d;
	return a ? strtoul(a, NULL, 0) : 2UL << 20;
}

int daxctl_dev_get_major(struct daxctl_dev *d)
{
	(void)d;
	return FAKE_MAJOR;
}

int daxctl_dev_get_minor(struct daxctl_dev *d)
{
	(void)d;
	return FAKE_MINOR;
}

/* ---- the stat family: the file is a char device ---- */

typedef int (*stat_fn)(const char *, struct stat *);
typedef int (*fstat_fn)(int, struct stat *);
typedef int (*fstatat_fn)(int, const char *, struct stat *, int);

#define REAL(name, type) \
	static type real_##name; \
	if (!real_##name) \
		real_##name = (type)dlsym(RTLD_NEXT, #name)

int stat(const char *path, struct stat *st)
{
	REAL(stat, stat_fn);
	int rc = real_stat(path, st);

	if (rc == 0)
		disguise(st);
	return rc;
}

int lstat(const char *path, struct stat *st)
{
	REAL(lstat, stat_fn);
	int rc = real_lstat(path, st);

	if (rc == 0)
		disguise(st);
	return rc;
}

int fstat(int fd, struct stat *st)
{
	REAL(fstat, fstat_fn);
	int rc = real_fstat(fd, st);

	if (rc == 0)
		disguise(st);
	return rc;
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	REAL(fstatat, fstatat_fn);
	int rc = real_fstatat(dirfd, path, st, flags);

	if (rc == 0)
		disguise(st);
	return rc;
}

/* On LP64 glibc struct stat64 is struct stat: the *64 names alias them. */
_Static_assert(sizeof(struct stat64) == sizeof(struct stat), "LP64 stat64");

int stat64(const char *path, struct stat64 *st)
{
	return stat(path, (struct stat *)st);
}

int lstat64(const char *path, struct stat64 *st)
{
	return lstat(path, (struct stat *)st);
}

int fstat64(int fd, struct stat64 *st)
{
	return fstat(fd, (struct stat *)st);
}

int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	return fstatat(dirfd, path, (struct stat *)st, flags);
}
