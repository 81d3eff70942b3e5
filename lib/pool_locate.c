/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/pool_locate.c: where a client host reaches the pool memory, and the
 * shm data path's mapping of it (see pool_locate.h). The path marud
 * reported is used when it holds the pool
 * with the right UUID; otherwise every enabled device-DAX that libdaxctl
 * lists is probed for a pool superblock carrying that UUID, because a CXL
 * device shared by several hosts need not have the same name on each. The
 * only client-side file that includes <daxctl/libdaxctl.h>.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if HAVE_DAXCTL
#include <daxctl/libdaxctl.h>
#endif

#include "pool_locate.h"
#include "superblock.h"

/* Kernels without the align attribute map devdax at 2 MiB (as pool_dax.c). */
#define DAX_DEFAULT_ALIGN	(2ULL << 20)

static int read_sb(const char *path, uint64_t align, void *sb, size_t len)
{
	void *p;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	p = mmap(NULL, align, PROT_READ, MAP_SHARED, fd, 0);
	err = errno;
	close(fd);
	if (p == MAP_FAILED)
		return -err;
	memcpy(sb, p, len);
	munmap(p, align);
	return 0;
}

int (*pool_locate_read_sb)(const char *path, uint64_t align, void *sb, size_t len) = read_sb;

static int sb_holds(const struct pool_superblock *sb, const uint8_t uuid[16])
{
	return pool_sb_check(sb) == 0 && memcmp(sb->uuid, uuid, sizeof(sb->uuid)) == 0;
}

#if HAVE_DAXCTL

static uint64_t dev_align(struct daxctl_dev *dev)
{
	uint64_t a = daxctl_dev_get_align(dev);

	return a ? a : DAX_DEFAULT_ALIGN;
}

/* Does the enabled device dev hold the pool uuid? Its node path in p. */
static int dev_holds(struct daxctl_dev *dev, const uint8_t uuid[16], char *p, size_t len)
{
	const char *name = daxctl_dev_get_devname(dev);
	struct pool_superblock sb;
	int n;

	if (!name || !daxctl_dev_is_enabled(dev))
		return 0;
	n = snprintf(p, len, "/dev/%s", name);
	if (n < 0 || (size_t)n >= len)
		return 0;
	if (pool_locate_read_sb(p, dev_align(dev), &sb, sizeof(sb)))
		return 0;
	return sb_holds(&sb, uuid);
}

int pool_locate_dax_find(const uint8_t uuid[16], char *path, size_t len)
{
	struct daxctl_region *region;
	struct daxctl_dev *dev;
	struct daxctl_ctx *ctx;
	int rc = -ENODEV;

	if (daxctl_new(&ctx))
		return -ENODEV;
	daxctl_region_foreach(ctx, region) {
		daxctl_dev_foreach(region, dev) {
			if (dev_holds(dev, uuid, path, len)) {
				rc = 0;
				goto out;
			}
		}
	}
out:
	daxctl_unref(ctx);
	return rc;
}

int pool_locate_dax_align(const char *path, uint64_t *align)
{
	const char *base = strrchr(path, '/');
	struct daxctl_region *region;
	struct daxctl_dev *dev;
	struct daxctl_ctx *ctx;
	const char *name;
	int rc = -ENODEV;

	base = base ? base + 1 : path;
	if (daxctl_new(&ctx))
		return -ENODEV;
	daxctl_region_foreach(ctx, region) {
		daxctl_dev_foreach(region, dev) {
			name = daxctl_dev_get_devname(dev);
			if (name && strcmp(name, base) == 0) {
				*align = dev_align(dev);
				rc = 0;
				goto out;
			}
		}
	}
out:
	daxctl_unref(ctx);
	return rc;
}

#else /* !HAVE_DAXCTL */

int pool_locate_dax_find(const uint8_t uuid[16], char *path, size_t len)
{
	return -ENODEV;
}

int pool_locate_dax_align(const char *path, uint64_t *align)
{
	return -ENODEV;
}

#endif

/* The pool at path (regular file or device-DAX) carries uuid. */
static int path_holds(const char *path, const uint8_t uuid[16], const char **why)
{
	uint64_t align = (uint64_t)sysconf(_SC_PAGESIZE);
	struct pool_superblock sb;
	struct stat st;

	if (stat(path, &st)) {
		*why = errno == ENOENT ? "pool path not found on this host" :
		       "pool path cannot be reached here";
		return 0;
	}
	if (S_ISCHR(st.st_mode) && pool_locate_dax_align(path, &align))
		align = DAX_DEFAULT_ALIGN;
	if ((!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) ||
	    pool_locate_read_sb(path, align, &sb, sizeof(sb))) {
		*why = "pool path cannot be mapped here";
		return 0;
	}
	if (!sb_holds(&sb, uuid)) {
		*why = "another pool (UUID) at the pool path";
		return 0;
	}
	return 1;
}

int pool_locate(const char *path, const uint8_t uuid[16], char *out, size_t len,
		const char **why)
{
	int n;

	if (path[0] && path_holds(path, uuid, why)) {
		n = snprintf(out, len, "%s", path);
		return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
	}
	return pool_locate_dax_find(uuid, out, len) == 0 ? 0 : -ENODEV;
}

/* ---- the shm data path's mapping ---- */

static int map_check(const struct pool_map *m, const uint8_t uuid[16], const char **why)
{
	const struct pool_superblock *sb = (const void *)m->base;

	if (pool_sb_check(sb)) {
		*why = "no valid pool superblock";
		return -ENODEV;
	}
	if (memcmp(sb->uuid, uuid, sizeof(sb->uuid))) {
		*why = "pool UUID differs from marud's (another pool at that path)";
		return -ENODEV;
	}
	if (sb->size != m->size) {
		*why = "pool size differs from marud's";
		return -ENODEV;
	}
	return 0;
}

static int map_fd(int fd, uint64_t size, struct pool_map *m, const char **why)
{
	struct stat st;

	if (fstat(fd, &st)) {
		*why = "cannot stat pool path";
		return -ENODEV;
	}
	/* device-DAX is a character device whose st_size says nothing */
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < size) {
		*why = "pool file shorter than the pool";
		return -ENODEV;
	}
	m->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		*why = "mmap of the pool failed";
		return -ENODEV;
	}
	m->size = size;
	return 0;
}

/*
 * A read-only descriptor of the file fd maps, for splice: opened by name
 * again (the mapping's own descriptor can write) and kept only when it is
 * that same regular file; else -1, and the client copies instead.
 */
static void keep_rofd(int fd, const char *where, struct pool_map *m)
{
	struct stat st, ro;

	m->rofd = -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return;
	m->rofd = open(where, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (m->rofd < 0)
		return;
	if (fstat(m->rofd, &ro) || ro.st_dev != st.st_dev || ro.st_ino != st.st_ino) {
		close(m->rofd);
		m->rofd = -1;
		return;
	}
	m->dev = (uint64_t)st.st_dev;
	m->ino = (uint64_t)st.st_ino;
}

int pool_locate_map_open(const char *path, const uint8_t uuid[16], uint64_t size,
			 struct pool_map **out, const char **why)
{
	char where[PATH_MAX];
	struct pool_map *m;
	int fd, rc;

	if (!path[0] || size < POOL_SB_SIZE) {
		*why = "marud reported no pool path";
		return -ENODEV;
	}
	if (pool_locate(path, uuid, where, sizeof(where), why))
		return -ENODEV;
	fd = open(where, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		*why = "pool path cannot be opened read-write here";
		return -ENODEV;
	}
	m = calloc(1, sizeof(*m));
	rc = m ? map_fd(fd, size, m, why) : -ENOMEM;
	if (m)
		keep_rofd(fd, where, m);
	close(fd);
	if (!rc)
		rc = map_check(m, uuid, why);
	if (rc) {
		pool_locate_map_close(m);
		return rc == -ENOMEM ? rc : -ENODEV;
	}
	memcpy(m->uuid, uuid, sizeof(m->uuid));
	*out = m;
	return 0;
}

void pool_locate_map_close(struct pool_map *m)
{
	if (!m)
		return;
	if (m->base)
		munmap(m->base, m->size);
	if (m->rofd >= 0)
		close(m->rofd);
	free(m);
}
