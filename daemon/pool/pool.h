/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/pool/pool.h: the pool memory marud serves, behind one ops table per
 * backend (shm:, file:, dax:). Every backend ends as a MAP_SHARED mapping of
 * a path, so a client that can open the same path maps the same bytes.
 * Only pool/dax.c includes <daxctl/libdaxctl.h>.
 *
 * URIs:
 *   shm:NAME        /dev/shm/NAME, created (or resized) to the given size
 *   file:/PATH      a regular file, created or resized to the given size
 *   dax:/dev/daxX.Y a device-DAX character device; size and alignment come
 *                   from the device (checked with libdaxctl: enabled, not
 *                   claimed by another marud, size >= requested if any)
 */
#ifndef MARUD_POOL_H
#define MARUD_POOL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

enum pool_kind {
	POOL_SHM = 1,
	POOL_FILE = 2,
	POOL_DAX = 3,
};

struct pool;

struct pool_backend_ops {
	const char *scheme;	/* "shm", "file", "dax" */
	enum pool_kind kind;
	/*
	 * Open or create p->path; set p->size, p->align, p->fd; map it. On
	 * failure nothing is left open or mapped. Closing is the same for
	 * every backend (unmap, then close the fd, which drops the flock), so
	 * pool.c does it and the table has no close.
	 */
	int (*open)(struct pool *p, uint64_t size);
	/* Make [off, off+len) durable/visible (msync for file, flush for dax). */
	int (*persist)(struct pool *p, uint64_t off, uint64_t len);
};

struct pool {
	const struct pool_backend_ops *ops;
	char uri[PATH_MAX];
	char path[PATH_MAX];	/* what clients open to map the pool */
	int fd;
	uint8_t *base;		/* the mapping */
	uint64_t size;		/* mapped bytes, superblock included */
	uint64_t align;		/* 4 KiB for shm/file, device alignment for dax */
	uint64_t meta_off;	/* metadata area (daemon/persist/): after the superblock */
	uint64_t meta_len;	/* up to data_off */
	uint64_t data_off;	/* first data byte, multiple of align */
	uint8_t uuid[16];
	uint64_t generation;
	int created;		/* 1: the backing object was created now */
	int sb_fresh;		/* 1: a new superblock (new UUID) was written now */
	void *priv;		/* backend state */
};

/*
 * Open the pool named by uri, size bytes (0: the backend default; shm's is
 * min(1/4 of RAM, free space of /dev/shm / 2) rounded to align). Writes a
 * fresh superblock with a new UUID unless a valid one is present (then the
 * UUID is kept); records `generation` in it. The metadata area (where
 * daemon/persist/ keeps the directory journal) is [meta_off, data_off):
 * pool_open_meta() asks for meta_size bytes of it (0: the size a valid
 * superblock records, else 1/32 of the pool up to 2 GiB; data_off is
 * rounded up to max(align, 2 MiB)). pool_open() is meta_size 0.
 */
int pool_open(const char *uri, uint64_t size, uint64_t generation, struct pool **out);
int pool_open_meta(const char *uri, uint64_t size, uint64_t meta_size, uint64_t generation,
		   struct pool **out);
void pool_close(struct pool *p);
/* A start that failed: remove the backing file if this open created it. */
void pool_discard_created(struct pool *p);
int pool_persist(struct pool *p, uint64_t off, uint64_t len);
/*
 * Give every page of a shm: or file: pool its memory (or disk blocks) now,
 * so that a store never finds /dev/shm or the disk full (SIGBUS in the
 * writer); nothing to do for dax:. A reservation only: tmpfs still zeroes
 * each page at its first store.
 * 0, or -errno (ENOSPC: there is not that much room), logged.
 */
int pool_reserve(struct pool *p);
const char *pool_kind_name(enum pool_kind k);

/* Backend tables (pool/shm.c, pool/file.c, pool/dax.c). */
extern const struct pool_backend_ops pool_shm_ops;
extern const struct pool_backend_ops pool_file_ops;
extern const struct pool_backend_ops pool_dax_ops;	/* -ENOTSUP without libdaxctl */

#endif
