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
 * write hashes each piece of its source and copies it while it is in cache
 * (a large one with non-temporal stores, see copy_hashed(), after
 * populating the pool pages it lands on, see populate_ahead()).
 * With coherence=flush, written lines are written back before
 * publish and read lines are invalidated before reading (non-coherent CXL).
 *
 * file.c fills holes (through zero), moves the size and counts the bytes.
 * The mapping (c->map) and the set of its populated blocks (c->shm) are
 * made at open and dropped at close, when session.c chooses a path.
 * c->dp_lock is held for reading around every access to the mapping, so a
 * remap after a marud restart never pulls it from under a copy. The set's
 * lock is taken inside it, last.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
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
	int stream;		/* write: non-temporal stores (a large write) */
};

/*
 * A write's copy, hashed in pieces that are still in cache when hashed: the
 * source piece is hashed first (pulling it into L1/L2), then copied from
 * there. A large write goes to the pool with non-temporal stores: its lines
 * are for another process (or host) to read later, and a plain store would
 * first read every destination line in (the pool pages are rarely in
 * cache) and then evict the source to make room, doubling the memory
 * traffic of the copy. Measured here, that made a hashed 32 MiB put 0.55x
 * memcpy; streamed it is on par.
 */
#define HASH_PIECE	(64u * 1024)
#define STREAM_MIN	(256u * 1024)	/* smaller writes are likely read soon */

#if defined(__SSE2__)
#include <emmintrin.h>

/* n bytes from src to dst with non-temporal stores; dst 16-byte aligned. */
static void stream_aligned(uint8_t *dst, const uint8_t *src, size_t n)
{
	for (; n >= 64; n -= 64, dst += 64, src += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + 48));

		_mm_stream_si128((__m128i *)dst, a);
		_mm_stream_si128((__m128i *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(dst + 48), d);
	}
	if (n)
		memcpy(dst, src, n);
}

static void copy_stream(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t head = (size_t)(-(uintptr_t)dst & 63);

	if (head > n)
		head = n;
	memcpy(dst, src, head);
	stream_aligned(dst + head, src + head, n - head);
}

/* Order the streamed stores before whatever says the bytes are there. */
static void stream_fence(void)
{
	_mm_sfence();
}
#else
static void copy_stream(uint8_t *dst, const uint8_t *src, size_t n)
{
	memcpy(dst, src, n);
}

static void stream_fence(void)
{
}
#endif

static void copy_piece(uint8_t *pool, const uint8_t *src, size_t n, int stream)
{
	if (stream)
		copy_stream(pool, src, n);
	else
		memcpy(pool, src, n);
}

static void copy_hashed(uint8_t *pool, const uint8_t *src, size_t n, struct hash_stream *hs,
			int stream)
{
	size_t k;

	if (!hs) {
		copy_piece(pool, src, n, stream);
		return;
	}
	for (; n; n -= k, pool += k, src += k) {
		k = n < HASH_PIECE ? n : HASH_PIECE;
		hash_stream_update(hs, src, k);
		copy_piece(pool, src, k, stream);
	}
}

/* ---- pool pages populated ahead of a large write ---- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* Linux 5.14 */
#endif
#define POP_BLOCK	(64u * 1024)

/*
 * The 64 KiB blocks of the client's pool mapping populated so far (struct
 * shm_dp, made with the mapping at open and freed with it at close: a remap
 * after a marud restart starts over). A write into pages of the mapping
 * never touched takes a fault per 4 KiB page (8192 per 32 MiB, most
 * of a cold put here); one MADV_POPULATE_WRITE over the range is 15-30%
 * cheaper. Repeating it over pages already mapped would cost most of a
 * memcpy, hence the set. A bit that is wrong costs only speed: pages the
 * kernel unmapped meanwhile fault as they would have.
 */
struct shm_dp {
	pthread_mutex_t lock;	/* bits: writers hold dp_lock only for reading */
	uint64_t *bits;
	uint64_t size;		/* of the mapping the bits are for */
};

static int pop_test(const struct shm_dp *ps, uint64_t b)
{
	return !!(ps->bits[b / 64] & (1ull << (b % 64)));
}

/* Populate [lo, hi) of the mapping, page-rounded, and mark the whole
 * blocks of it; a kernel without MADV_POPULATE_WRITE leaves it to faults. */
static void pop_range(const struct pool_map *m, struct shm_dp *ps, uint64_t lo,
		      uint64_t hi)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t a = lo & ~(pg - 1), e = (hi + pg - 1) & ~(pg - 1);

	if (e > ps->size)
		e = ps->size;
	madvise((void *)(m->base + a), e - a, MADV_POPULATE_WRITE);
	for (uint64_t b = (lo + POP_BLOCK - 1) / POP_BLOCK; (b + 1) * POP_BLOCK <= hi; b++)
		ps->bits[b / 64] |= 1ull << (b % 64);
}

/* Populate the pages of [off, off+n) of m not populated yet. */
static void populate_ahead(const struct pool_map *m, struct shm_dp *ps, uint64_t off,
			   uint64_t n)
{
	uint64_t b, end = off + n, lo;

	pthread_mutex_lock(&ps->lock);
	for (b = off / POP_BLOCK; b * POP_BLOCK < end; ) {
		if (pop_test(ps, b)) {
			b++;
			continue;
		}
		lo = b * POP_BLOCK < off ? off : b * POP_BLOCK;
		while (b * POP_BLOCK < end && !pop_test(ps, b))
			b++;
		pop_range(m, ps, lo, b * POP_BLOCK < end ? b * POP_BLOCK : end);
	}
	pthread_mutex_unlock(&ps->lock);
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
		copy_hashed(pool, w->ubuf, n, w->hs, w->stream);
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
		/* a client made by hand (tests) has no set: it only costs faults */
		if (w->stream && c->shm)
			populate_ahead(c->map, c->shm, p.pool_off, p.len);
		walk_piece(w, c->map->base + p.pool_off, p.len);
	}
	rc = it.left ? -EIO : 0;
	if (w->stream)
		stream_fence();
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
	int rc = walk(f, &w, off, len);

	return rc ? rc : (ssize_t)len;
}

static void mark_dirty(struct maru_file *f, uint64_t lo, uint64_t hi)
{
	if (lo < f->dirty_lo)
		f->dirty_lo = lo;
	if (hi > f->dirty_hi)
		f->dirty_hi = hi;
}

static int shm_zero(struct maru_file *f, uint64_t off, uint64_t len)
{
	struct walk w = { .kind = WALK_ZERO };
	int rc = walk(f, &w, off, len);

	if (!rc)
		mark_dirty(f, off, off + len);
	return rc;
}

static ssize_t shm_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	struct walk w = { .kind = WALK_WRITE, .ubuf = (uint8_t *)buf, .hs = f->hs,
			  .stream = len >= STREAM_MIN };
	size_t half = len / 2;
	int rc;

	/* in two halves: tests stop the writer with half of the bytes in place */
	rc = walk(f, &w, off, half);
	if (!rc)
		rc = FAILPOINT("libmaru.write.mid");
	if (!rc)
		rc = walk(f, &w, off + half, len - half);
	if (rc)
		return rc;
	mark_dirty(f, off, off + len);
	return (ssize_t)len;
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

/* ---- the mapping ---- */

static void shm_map_close(struct maru_client *c)
{
	pool_locate_map_close(c->map);
	c->map = NULL;
	if (c->shm) {
		pthread_mutex_destroy(&c->shm->lock);
		free(c->shm->bits);
		free(c->shm);
		c->shm = NULL;
	}
}

/* Map the pool session s names, if it is here; dp_lock held for writing. */
static int shm_map_open(struct maru_client *c, const struct session *s, const char **why)
{
	struct pool_map *m = NULL;
	struct shm_dp *ps;
	int rc;

	shm_map_close(c);
	/* marud names no pool to a scoped key's session (marud.conf(5)) */
	if (!s->pool_path[0] && !s->backend) {
		*why = "marud hands no pool mapping to a scoped key";
		return -EPERM;
	}
	rc = pool_locate_map_open(s->pool_path, s->uuid, s->pool_size, &m, why);
	if (rc)
		return rc;
	ps = calloc(1, sizeof(*ps));
	if (ps)
		ps->bits = calloc((m->size / POP_BLOCK + 63) / 64 + 1, sizeof(*ps->bits));
	if (!ps || !ps->bits) {
		free(ps);
		pool_locate_map_close(m);
		*why = "out of memory";
		return -ENOMEM;
	}
	pthread_mutex_init(&ps->lock, NULL);
	ps->size = m->size;
	c->map = m;
	c->shm = ps;
	return 0;
}

const struct dp_ops dp_shm_ops = {
	.kind = MARU_DATA_SHM,
	.name = "shm",
	.direct = 1,
	.hashes = 1,
	.open = shm_map_open,
	.close = shm_map_close,
	.read = shm_read,
	.write = shm_write,
	.zero = shm_zero,
	.sync = shm_sync,
};
