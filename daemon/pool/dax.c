/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/pool/dax.c: the dax: backend, a device-DAX character device
 * (/dev/daxX.Y) mapped MAP_SHARED. libdaxctl finds the device by its node
 * name and tells whether it is enabled, its size and its alignment; the pool
 * takes its size and alignment from the device (a requested size may be
 * smaller, never bigger). The char device is claimed with flock(LOCK_EX) for
 * the pool's lifetime. persist writes the range's cache lines back
 * (common/cacheflush.c: clwb, clflushopt or clflush; dc cvac on aarch64)
 * and fences: there is no page cache and
 * msync does nothing for devdax. This is the only file that includes
 * <daxctl/libdaxctl.h>; built without libdaxctl, open says so and fails
 * with -ENOTSUP.
 *
 * Errors: -ENODEV no such dax device, -ENXIO device disabled, -ENOSPC the
 * requested size exceeds the device, -EBUSY claimed by another marud.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#if HAVE_DAXCTL
#include <daxctl/libdaxctl.h>
#endif
#include "cacheflush.h"
#include "log.h"
#include "pool.h"

#if HAVE_DAXCTL

/* What libdaxctl told us about the device, read before we touch the node. */
struct dax_info {
	uint64_t size;
	uint64_t align;
	int major, minor;
};

/*
 * Open the device node, check it is the char device libdaxctl described.
 * Returns an fd or -errno.
 */
static int dax_open_node(const char *path, int maj, int min)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode) ||
	    (int)major(st.st_rdev) != maj || (int)minor(st.st_rdev) != min) {
		close(fd);
		return -ENODEV;
	}
	return fd;
}

/*
 * Test seam: how the checked device node is opened. The unit test points it
 * at a function that opens a regular temp file instead, so everything but
 * the char device itself (libdaxctl lookup, checks, sizing, flock, mmap,
 * persist) runs under test. marud never changes it.
 */
extern int (*pool_dax_open_node)(const char *path, int maj, int min);
int (*pool_dax_open_node)(const char *path, int maj, int min) = dax_open_node;

static struct daxctl_dev *dax_find(struct daxctl_ctx *ctx, const char *devname)
{
	struct daxctl_region *region;
	struct daxctl_dev *dev;

	daxctl_region_foreach(ctx, region) {
		daxctl_dev_foreach(region, dev) {
			const char *name = daxctl_dev_get_devname(dev);

			if (name && !strcmp(name, devname))
				return dev;
		}
	}
	return NULL;
}

static int dax_check(const struct pool *p, struct daxctl_dev *dev, struct dax_info *di)
{
	if (!daxctl_dev_is_enabled(dev)) {
		log_warnx("pool: %s: %s is disabled (daxctl enable-device)", p->uri, p->path);
		return -ENXIO;
	}
	di->size = daxctl_dev_get_size(dev);
	di->align = daxctl_dev_get_align(dev);
	di->major = daxctl_dev_get_major(dev);
	di->minor = daxctl_dev_get_minor(dev);
	/* Kernels without the align attribute map devdax at 2 MiB. */
	if (di->align == 0)
		di->align = 2ULL << 20;
	if (di->align < 4096 || (di->align & (di->align - 1))) {
		log_warnx("pool: %s: device alignment %llu is unusable", p->uri,
			  (unsigned long long)di->align);
		return -EINVAL;
	}
	if (di->size < di->align) {
		log_warnx("pool: %s: device is empty", p->uri);
		return -ENOSPC;
	}
	return 0;
}

static int dax_lookup(const struct pool *p, struct dax_info *di)
{
	const char *devname = strrchr(p->path, '/') + 1;
	struct daxctl_ctx *ctx;
	struct daxctl_dev *dev;
	int rc = daxctl_new(&ctx);

	if (rc) {
		rc = rc < 0 ? rc : -rc;
		log_warn(rc, "pool: %s: libdaxctl", p->uri);
		return rc;
	}
	dev = dax_find(ctx, devname);
	if (dev) {
		rc = dax_check(p, dev, di);
	} else {
		log_warnx("pool: %s: libdaxctl knows no device %s", p->uri, devname);
		rc = -ENODEV;
	}
	daxctl_unref(ctx);
	return rc;
}

/* offset and length of a devdax mapping must be multiples of its align. */
static int dax_pick_size(const struct pool *p, const struct dax_info *di,
			 uint64_t want, uint64_t *size)
{
	uint64_t dev_size = di->size & ~(di->align - 1);

	if (want == 0) {
		*size = dev_size;
		return 0;
	}
	if (want > dev_size) {
		log_warnx("pool: %s: %llu bytes requested, device has %llu", p->uri,
			  (unsigned long long)want, (unsigned long long)dev_size);
		return -ENOSPC;
	}
	*size = (want + di->align - 1) & ~(di->align - 1);
	return 0;
}

static int dax_map(struct pool *p, int fd, uint64_t size, uint64_t align)
{
	void *base;

	if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK)
			return -errno;
		log_warnx("pool: %s: %s is in use by another marud", p->uri, p->path);
		return -EBUSY;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		log_warn(errno, "pool: %s: mmap %llu bytes", p->uri, (unsigned long long)size);
		return -errno;
	}
	p->base = base;
	p->size = size;
	p->align = align;
	p->fd = fd;
	return 0;
}

static int dax_open(struct pool *p, uint64_t want)
{
	struct dax_info di;
	uint64_t size;
	int fd, rc;

	rc = dax_lookup(p, &di);
	if (rc)
		return rc;
	rc = dax_pick_size(p, &di, want, &size);
	if (rc)
		return rc;
	fd = pool_dax_open_node(p->path, di.major, di.minor);
	if (fd < 0) {
		log_warn(fd, "pool: %s: open %s", p->uri, p->path);
		return fd;
	}
	rc = dax_map(p, fd, size, di.align);
	if (rc)
		close(fd);
	return rc;
}

#else /* !HAVE_DAXCTL */

static int dax_open(struct pool *p, uint64_t want)
{
	log_warnx("pool: %s: marud was built without libdaxctl; dax: pools are not available",
		  p->uri);
	return -ENOTSUP;
}

#endif

static int dax_persist(struct pool *p, uint64_t off, uint64_t len)
{
	cache_flush(p->base + off, len, 0);
	return 0;
}

const struct pool_backend_ops pool_dax_ops = {
	.scheme = "dax",
	.kind = POOL_DAX,
	.open = dax_open,
	.persist = dax_persist,
};
