/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/shm.c: the shm data path: the client maps the pool memory itself
 * (same host, or a CXL host sharing the device; pool_locate.c maps it) and
 * reads and writes chunk bytes with memcpy at the version's extents. file.c
 * has already reserved the room and checked that the session is alive;
 * this file only copies, and refuses (-ESTALE) when the superblock names
 * another marud generation than the handle's.
 * marud never sees these bytes move; it learns a pending version's size at
 * PUBLISH, with the xxh3 of the bytes when file.c asked for it (f->hs): a
 * write hashes each piece right after copying it, while it is in cache.
 * With coherence=flush, written lines are written back before
 * publish and read lines are invalidated before reading (non-coherent CXL).
 *
 * c->dp_lock is held for reading around every access to the mapping, so a
 * remap after a marud restart never pulls it from under a copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cacheflush.h"
#include "datapath.h"
#include "failpoint.h"
#include "extent.h"
#include "hash.h"
#include "pool_locate.h"
#include "superblock.h"

/* A handle's extents are walked as struct extent: same layout. */
_Static_assert(sizeof(struct proto_extent) == sizeof(struct extent) &&
	       offsetof(struct proto_extent, off) == offsetof(struct extent, off) &&
	       offsetof(struct proto_extent, len) == offsetof(struct extent, len),
	       "struct proto_extent must have struct extent's layout");

/* ---- extent walking ---- */

enum walk_kind { WALK_READ, WALK_WRITE, WALK_ZERO, WALK_FLUSH };

struct walk {
	enum walk_kind kind;
	uint8_t *ubuf;		/* user buffer (read: dst, write: src) */
	int flush;		/* coherence=flush */
	struct hash_stream *hs;	/* write: hash the bytes copied (or NULL) */
};

/* A write's copy, hashed in pieces that are still in cache when hashed. */
#define HASH_PIECE	(128u * 1024)

static void copy_hashed(uint8_t *pool, const uint8_t *src, size_t n, struct hash_stream *hs)
{
	size_t k;

	if (!hs) {
		memcpy(pool, src, n);
		return;
	}
	for (; n; n -= k, pool += k, src += k) {
		k = n < HASH_PIECE ? n : HASH_PIECE;
		memcpy(pool, src, k);
		hash_stream_update(hs, src, k);
	}
}

static void walk_piece(struct walk *w, uint8_t *pool, size_t n)
{
	switch (w->kind) {
	case WALK_READ:
		if (w->flush)
			cache_flush(pool, n, 1);	/* drop lines another host wrote */
		memcpy(w->ubuf, pool, n);
		w->ubuf += n;
		break;
	case WALK_WRITE:
		copy_hashed(pool, w->ubuf, n, w->hs);
		w->ubuf += n;
		break;
	case WALK_ZERO:
		memset(pool, 0, n);
		break;
	case WALK_FLUSH:
		cache_flush(pool, n, 0);
		break;
	}
}

/*
 * The superblock names the generation of the marud that owns the memory
 * now. A restarted marud reuses the same pool (same path and UUID), so this
 * is how a copy that needs no round trip learns that the handle's bytes may
 * already belong to someone else: -ESTALE rather than stale bytes.
 */
static int gen_ok(const struct maru_file *f, const struct pool_map *m)
{
	const struct pool_superblock *sb = (const void *)m->base;

	return __atomic_load_n(&sb->generation, __ATOMIC_ACQUIRE) == f->generation;
}

/*
 * Apply w to file bytes [off, off+len) through the extents. Caller holds
 * f->lock and has checked the handle and the session; we take dp_lock for
 * the mapping. -EIO if the extents do not
 * cover the range, -ENODEV if the pool is not mapped (any more), -ESTALE if
 * a marud of another generation owns the pool.
 */
static int walk(struct maru_file *f, struct walk *w, uint64_t off, uint64_t len)
{
	struct maru_client *c = f->c;
	struct extent_iter it;
	struct extent_piece p;
	int rc = -EIO;

	pthread_rwlock_rdlock(&c->dp_lock);
	if (!c->map) {
		rc = -ENODEV;
		goto out;
	}
	if (!gen_ok(f, c->map)) {
		rc = -ESTALE;
		goto out;
	}
	extent_iter_init(&it, (const struct extent *)f->ext, f->next, off, len);
	while (extent_iter_next(&it, &p)) {
		if (p.pool_off + p.len > c->map->size)
			goto out;
		walk_piece(w, c->map->base + p.pool_off, p.len);
	}
	rc = it.left ? -EIO : 0;
	/* a restart during the copy may have handed these bytes to another version */
	if (!rc && w->kind == WALK_READ && !gen_ok(f, c->map))
		rc = -ESTALE;
out:
	pthread_rwlock_unlock(&c->dp_lock);
	return rc;
}

/* ---- ops ---- */

static int flush_mode(const struct maru_file *f)
{
	return f->c->opts.coherence == MARU_COHERENCE_FLUSH;
}

static ssize_t shm_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	struct walk w = { .kind = WALK_READ, .ubuf = buf, .flush = flush_mode(f) };
	struct dp_counters *d = &f->c->st.dp[MARU_DATA_SHM];
	int rc = walk(f, &w, off, len);

	if (rc)
		return rc;
	atomic_fetch_add(&d->rd_bytes, len);
	atomic_fetch_add(&d->rd_ops, 1);
	return (ssize_t)len;
}

static void mark_dirty(struct maru_file *f, uint64_t lo, uint64_t hi)
{
	if (lo < f->dirty_lo)
		f->dirty_lo = lo;
	if (hi > f->dirty_hi)
		f->dirty_hi = hi;
}

/* Zero [f->size, end) so that holes read as zeros. */
static int zero_gap(struct maru_file *f, uint64_t end)
{
	struct walk w = { .kind = WALK_ZERO };
	int rc;

	if (end <= f->size)
		return 0;
	rc = walk(f, &w, f->size, end - f->size);
	if (!rc)
		mark_dirty(f, f->size, end);
	return rc;
}

static ssize_t shm_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	struct walk w = { .kind = WALK_WRITE, .ubuf = (uint8_t *)buf, .hs = f->hs };
	struct dp_counters *d = &f->c->st.dp[MARU_DATA_SHM];
	size_t half = len / 2;
	int rc;

	rc = zero_gap(f, off);
	/* in two halves: tests stop the writer with half of the bytes in place */
	if (!rc)
		rc = walk(f, &w, off, half);
	if (!rc)
		rc = FAILPOINT("libmaru.write.mid");
	if (!rc)
		rc = walk(f, &w, off + half, len - half);
	if (rc)
		return rc;
	mark_dirty(f, off, off + len);
	if (off + len > f->size)
		f->size = off + len;
	atomic_fetch_add(&d->wr_bytes, len);
	atomic_fetch_add(&d->wr_ops, 1);
	return (ssize_t)len;
}

static int shm_truncate(struct maru_file *f, uint64_t size)
{
	int rc = zero_gap(f, size);

	if (!rc)
		f->size = size;
	return rc;
}

static int shm_sync(struct maru_file *f)
{
	struct walk w = { .kind = WALK_FLUSH };
	uint64_t hi;
	int rc;

	if (!flush_mode(f) || f->dirty_lo >= f->dirty_hi)
		return 0;
	hi = f->dirty_hi < f->size ? f->dirty_hi : f->size;
	rc = f->dirty_lo < hi ? walk(f, &w, f->dirty_lo, hi - f->dirty_lo) : 0;
	if (!rc) {
		f->dirty_lo = UINT64_MAX;
		f->dirty_hi = 0;
	}
	return rc;
}

const struct dp_ops dp_shm_ops = {
	.kind = MARU_DATA_SHM,
	.name = "shm",
	.direct = 1,
	.hashes = 1,
	.read = shm_read,
	.write = shm_write,
	.truncate = shm_truncate,
	.sync = shm_sync,
};
