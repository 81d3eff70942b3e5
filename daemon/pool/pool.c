/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/pool/pool.c: the backend-neutral half of marud's pool memory. It parses
 * the pool URI and picks the backend ops by scheme, turns the URI into the
 * path the backend opens (and clients map), lays out the pool (data_off) and
 * owns the superblock at offset 0 and places the metadata area after it
 * (daemon/persist/ writes it): a valid superblock of the same geometry
 * keeps its UUID across marud restarts, anything else (none, corrupt, other
 * size or alignment) gets a fresh one. Backends (pool/shm.c, pool/file.c,
 * pool/dax.c) only open, map and persist; closing (unmap, close the fd and
 * so drop the flock) is the same for all and lives here.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "pool.h"
#include "superblock.h"

/* Large extents are 2 MiB aligned in the pool, so data starts at 2 MiB. */
#define POOL_DATA_OFF_MIN	(2ULL << 20)
#define SHM_DIR			"/dev/shm/"

static const struct pool_backend_ops *const backends[] = {
	&pool_shm_ops,
	&pool_file_ops,
	&pool_dax_ops,
};

const char *pool_kind_name(enum pool_kind k)
{
	switch (k) {
	case POOL_SHM:
		return "shm";
	case POOL_FILE:
		return "file";
	case POOL_DAX:
		return "dax";
	}
	return "unknown";
}

static const struct pool_backend_ops *backend_by_scheme(const char *uri, const char **rest)
{
	const char *colon = strchr(uri, ':');
	size_t n;

	if (!colon)
		return NULL;
	n = (size_t)(colon - uri);
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (strlen(backends[i]->scheme) == n && !strncmp(uri, backends[i]->scheme, n)) {
			*rest = colon + 1;
			return backends[i];
		}
	}
	return NULL;
}

/*
 * A shm name becomes one file directly in /dev/shm: no path separators and
 * nothing that would name /dev/shm itself or its parent.
 */
static int shm_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 255)
		return 0;
	if (strchr(name, '/'))
		return 0;
	return strcmp(name, ".") && strcmp(name, "..");
}

static int copy_str(char *dst, size_t cap, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + lb >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, a, la);
	memcpy(dst + la, b, lb + 1);
	return 0;
}

/* Fill p->ops and p->path from p->uri. */
static int pool_parse_uri(struct pool *p)
{
	const char *rest;

	p->ops = backend_by_scheme(p->uri, &rest);
	if (!p->ops) {
		log_warnx("pool: %s: unknown scheme (want shm:NAME, file:/PATH or dax:/dev/daxX.Y)",
			  p->uri);
		return -EINVAL;
	}
	switch (p->ops->kind) {
	case POOL_SHM:
		if (!shm_name_ok(rest)) {
			log_warnx("pool: %s: bad shm name (no '/', not '.' or '..')", p->uri);
			return -EINVAL;
		}
		return copy_str(p->path, sizeof(p->path), SHM_DIR, rest);
	case POOL_FILE:
	case POOL_DAX:
		/* Absolute only: marud and its clients do not share a cwd. */
		if (rest[0] != '/' || rest[1] == '\0') {
			log_warnx("pool: %s: path must be absolute", p->uri);
			return -EINVAL;
		}
		return copy_str(p->path, sizeof(p->path), "", rest);
	}
	return -EINVAL;
}

static uint64_t round_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) / align * align;
}

/* Default metadata area: 1/32 of the pool, at most 2 GiB (~5M names). */
#define POOL_META_SHARE		32
#define POOL_META_MAX		(2ULL << 30)

/*
 * The metadata area a valid superblock of this size and alignment already
 * records, so a restart without --meta-size keeps the pool's geometry.
 */
static uint64_t recorded_data_off(const struct pool *p)
{
	const struct pool_superblock *sb = (const struct pool_superblock *)p->base;

	if (pool_sb_check(sb) || sb->size != p->size || sb->align != p->align ||
	    sb->meta_off != POOL_SB_SIZE || sb->data_off != sb->meta_off + sb->meta_len ||
	    sb->data_off >= p->size)
		return 0;
	return sb->data_off;
}

/* meta_req: bytes of metadata area asked for (0: recorded, else default). */
static int pool_layout(struct pool *p, uint64_t meta_req)
{
	uint64_t step = p->align > POOL_DATA_OFF_MIN ? p->align : POOL_DATA_OFF_MIN;

	if (p->align == 0 || (p->align & (p->align - 1))) {
		log_warnx("pool: %s: alignment %llu is not a power of two", p->uri,
			  (unsigned long long)p->align);
		return -EINVAL;
	}
	p->data_off = meta_req ? 0 : recorded_data_off(p);
	/* The default share includes the superblock, so pools up to 64 MiB
	 * keep data at 2 MiB; an explicit size is metadata bytes at least. */
	if (!p->data_off && meta_req)
		p->data_off = round_up(POOL_SB_SIZE + meta_req, step);
	else if (!p->data_off)
		p->data_off = round_up(p->size / POOL_META_SHARE < POOL_META_MAX ?
				       p->size / POOL_META_SHARE : POOL_META_MAX, step);
	p->meta_off = POOL_SB_SIZE;
	p->meta_len = p->data_off - POOL_SB_SIZE;
	if (p->data_off >= p->size) {
		log_warnx("pool: %s: %llu bytes leave no room for data after offset %llu",
			  p->uri, (unsigned long long)p->size, (unsigned long long)p->data_off);
		return -EINVAL;
	}
	return 0;
}

static int sb_reusable(const struct pool *p, const struct pool_superblock *sb)
{
	if (pool_sb_check(sb))
		return 0;
	return sb->size == p->size && sb->align == p->align && sb->data_off == p->data_off &&
	       sb->meta_off == p->meta_off && sb->meta_len == p->meta_len;
}

static int new_uuid(uint8_t uuid[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t n = getrandom(uuid + got, 16 - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	/* RFC 4122 version 4, variant 1, so tools print it as a random UUID. */
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	return 0;
}

/*
 * Write the superblock. A valid one of the same geometry keeps its UUID so a
 * restarted marud is recognisably the same pool (and daemon/persist/ may
 * recover its directory); a corrupt one or none gets a fresh UUID and
 * p->sb_fresh: its old bytes are forgotten (the journal names the UUID, so
 * nothing of an older pool is recovered), and a client holding the old
 * UUID must not trust them.
 */
static int pool_write_sb(struct pool *p)
{
	struct pool_superblock *cur = (struct pool_superblock *)p->base;
	struct pool_superblock sb;
	int fresh = !sb_reusable(p, cur);
	int rc;

	memset(&sb, 0, sizeof(sb));
	if (fresh) {
		rc = new_uuid(sb.uuid);
		if (rc)
			return rc;
	} else {
		memcpy(sb.uuid, cur->uuid, sizeof(sb.uuid));
	}
	sb.size = p->size;
	sb.align = p->align;
	sb.data_off = p->data_off;
	sb.meta_off = p->meta_off;
	sb.meta_len = p->meta_len;
	sb.generation = p->generation;
	pool_sb_seal(&sb);
	if (fresh)
		memset(p->base, 0, POOL_SB_SIZE);
	memcpy(p->base, &sb, sizeof(sb));
	memcpy(p->uuid, sb.uuid, sizeof(p->uuid));
	p->sb_fresh = fresh;
	if (fresh && !p->created)
		log_warnx("pool: %s: no valid superblock of this geometry, wrote a new one",
			  p->uri);
	return p->ops->persist(p, 0, POOL_SB_SIZE);
}

static void log_opened(const struct pool *p)
{
	static const char hex[] = "0123456789abcdef";
	char u[37];
	size_t j = 0;

	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			u[j++] = '-';
		u[j++] = hex[p->uuid[i] >> 4];
		u[j++] = hex[p->uuid[i] & 15];
	}
	u[j] = '\0';
	log_info("pool: %s %s at %s: %llu bytes (%llu MiB), align %llu, metadata %llu KiB, data at %llu, uuid %s, generation %llu",
		 p->created ? "created" : "opened", pool_kind_name(p->ops->kind), p->path,
		 (unsigned long long)p->size, (unsigned long long)(p->size >> 20),
		 (unsigned long long)p->align, (unsigned long long)(p->meta_len >> 10),
		 (unsigned long long)p->data_off, u, (unsigned long long)p->generation);
}

/*
 * The one close path of every backend: unmap, then close the fd. Closing
 * the fd drops the flock the backend took, so the pool is free for the
 * next marud only once the mapping is gone.
 */
static void pool_unmap(struct pool *p)
{
	if (p->base)
		munmap(p->base, p->size);
	p->base = NULL;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

int pool_open(const char *uri, uint64_t size, uint64_t generation, struct pool **out)
{
	return pool_open_meta(uri, size, 0, generation, out);
}

int pool_open_meta(const char *uri, uint64_t size, uint64_t meta_size, uint64_t generation,
		   struct pool **out)
{
	struct pool *p;
	int rc;

	*out = NULL;
	if (strlen(uri) >= sizeof(p->uri))
		return -ENAMETOOLONG;
	/* Every backend keeps at least 2 MiB before data; refuse before creating. */
	if (size && size <= POOL_DATA_OFF_MIN) {
		log_warnx("pool: %s: size %llu is too small", uri, (unsigned long long)size);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = -1;
	p->generation = generation;
	memcpy(p->uri, uri, strlen(uri) + 1);
	rc = pool_parse_uri(p);
	if (rc)
		goto out_free;
	rc = p->ops->open(p, size);
	if (rc)
		goto out_free;
	rc = pool_layout(p, meta_size);
	if (rc)
		goto out_close;
	rc = pool_write_sb(p);
	if (rc)
		goto out_close;
	log_opened(p);
	*out = p;
	return 0;

out_close:
	pool_unmap(p);
out_free:
	free(p);
	return rc;
}

void pool_close(struct pool *p)
{
	if (!p)
		return;
	pool_unmap(p);
	free(p);
}

void pool_discard_created(struct pool *p)
{
	if (!p || !p->created || !p->path[0])
		return;
	if (unlink(p->path) == 0)
		log_warnx("pool: removed %s, created by a start that failed", p->path);
	else
		log_warn(-errno, "pool: %s, created by a start that failed: unlink", p->path);
	p->created = 0;
}

int pool_reserve(struct pool *p)
{
	uint64_t t0 = mono_ns();
	int rc;

	if (p->ops->kind == POOL_DAX)
		return 0;	/* device memory: every page is there */
	do
		rc = fallocate(p->fd, 0, 0, (off_t)p->size);
	while (rc && errno == EINTR);
	if (rc) {
		rc = -errno;
		log_warn(rc, "pool: %s: cannot reserve its %llu MiB (prealloc)", p->path,
			 (unsigned long long)(p->size >> 20));
		return rc;
	}
	log_info("pool: %s: %llu MiB reserved in %.2f s (prealloc)", p->path,
		 (unsigned long long)(p->size >> 20), (double)(mono_ns() - t0) / 1e9);
	return 0;
}

int pool_persist(struct pool *p, uint64_t off, uint64_t len)
{
	if (off > p->size || len > p->size - off)
		return -EINVAL;
	if (len == 0)
		return 0;
	return p->ops->persist(p, off, len);
}
