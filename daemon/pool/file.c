/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/pool/file.c: the file: backend, a pool in a regular file mapped
 * MAP_SHARED (a slow tier behind the page cache). Its open is
 * also the shm: backend's (a file in /dev/shm is a regular file on tmpfs);
 * only persist differs. The pool is claimed with flock(LOCK_EX) on the
 * mapped fd, held until pool.c closes it, so a second marud gets -EBUSY before it can
 * resize or rewrite anything.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "log.h"
#include "pool.h"

#define FILE_ALIGN		4096ULL
#define DEFAULT_ROUND		(2ULL << 20)
#define DEFAULT_MIN		(64ULL << 20)
/* Data starts at 2 MiB (pool.c); an existing file no bigger is no pool. */
#define EXISTING_MIN		(2ULL << 20)

static uint64_t fs_avail(const char *path)
{
	char dir[PATH_MAX];
	struct statvfs vfs;
	size_t n = strlen(path);

	if (n >= sizeof(dir))
		return 0;
	memcpy(dir, path, n + 1);
	if (statvfs(dirname(dir), &vfs))
		return 0;
	return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

/*
 * min(RAM / 4, free space / 2), rounded down to 2 MiB, at least 64 MiB: big
 * enough to be useful, small enough to leave the host and the filesystem
 * room (tmpfs pages are RAM).
 */
static uint64_t default_size(const char *path)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
	uint64_t avail = fs_avail(path);
	uint64_t s = ram / 4;

	if (avail && avail / 2 < s)
		s = avail / 2;
	s &= ~(DEFAULT_ROUND - 1);
	return s < DEFAULT_MIN ? DEFAULT_MIN : s;
}

/* Check before open(): opening a device node can have side effects. */
static int check_regular(const struct pool *p, const struct stat *st)
{
	if (S_ISDIR(st->st_mode)) {
		log_warnx("pool: %s: %s is a directory", p->uri, p->path);
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode)) {
		log_warnx("pool: %s: %s is not a regular file", p->uri, p->path);
		return -EINVAL;
	}
	return 0;
}

static int sys_fail(const struct pool *p, const char *what)
{
	int rc = -errno;

	log_warn(rc, "pool: %s: %s %s", p->uri, what, p->path);
	return rc;
}

/* Returns an fd or -errno; sets p->created when the file is new. */
static int open_backing(struct pool *p)
{
	struct stat st;
	int fd, rc;

	/* Retries only lost races: removed after stat, created after stat. */
	for (int tries = 0; tries < 3; tries++) {
		if (stat(p->path, &st) == 0) {
			rc = check_regular(p, &st);
			if (rc)
				return rc;
			fd = open(p->path, O_RDWR | O_CLOEXEC | O_NOCTTY);
			if (fd >= 0 || errno != ENOENT)
				return fd >= 0 ? fd : sys_fail(p, "open");
		} else if (errno == ENOENT) {
			fd = open(p->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
			if (fd >= 0)
				p->created = 1;
			if (fd >= 0 || errno != EEXIST)
				return fd >= 0 ? fd : sys_fail(p, "create");
		} else {
			return sys_fail(p, "stat");
		}
	}
	return -EAGAIN;
}

static int claim(const struct pool *p, int fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		log_warnx("pool: %s: %s is in use by another marud", p->uri, p->path);
		return -EBUSY;
	}
	return -errno;
}

static uint64_t pick_size(const struct pool *p, uint64_t want, const struct stat *st)
{
	uint64_t existing = (uint64_t)st->st_size & ~(FILE_ALIGN - 1);

	if (want)
		return (want + FILE_ALIGN - 1) & ~(FILE_ALIGN - 1);
	/* A restart without a size keeps the pool (and so its UUID) as it was. */
	if (existing > EXISTING_MIN)
		return existing;
	return default_size(p->path);
}

static int size_and_map(struct pool *p, int fd, uint64_t want)
{
	struct stat st;
	uint64_t size;
	void *base;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return check_regular(p, &st);
	if (want > (uint64_t)INT64_MAX - FILE_ALIGN)
		return -EFBIG;
	size = pick_size(p, want, &st);
	/* Sparse on tmpfs: too big only shows later, as SIGBUS on first touch. */
	if (size > fs_avail(p->path) + (uint64_t)st.st_blocks * 512)
		log_warnx("pool: %s: %llu bytes exceed the free space of %s's filesystem",
			  p->uri, (unsigned long long)size, p->path);
	if ((uint64_t)st.st_size != size && ftruncate(fd, (off_t)size))
		return -errno;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	p->base = base;
	p->size = size;
	p->align = FILE_ALIGN;
	return 0;
}

static int file_open(struct pool *p, uint64_t size)
{
	int fd, rc;

	fd = open_backing(p);
	if (fd < 0)
		return fd;
	rc = claim(p, fd);
	if (rc)
		goto out_close;
	rc = size_and_map(p, fd, size);
	if (rc) {
		log_warn(rc, "pool: %s: size or map %s", p->uri, p->path);
		goto out_unlink;
	}
	p->fd = fd;
	return 0;

out_unlink:
	/* We hold the lock, so a file we created now is still only ours. */
	if (p->created)
		unlink(p->path);
out_close:
	close(fd);
	p->created = 0;
	return rc;
}

static int file_persist(struct pool *p, uint64_t off, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = off & ~(pg - 1);

	if (msync(p->base + start, off + len - start, MS_SYNC))
		return -errno;
	return 0;
}

const struct pool_backend_ops pool_file_ops = {
	.scheme = "file",
	.kind = POOL_FILE,
	.open = file_open,
	.persist = file_persist,
};
