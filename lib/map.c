/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/map.c: zero-copy mappings of marufs files, maru_map()/maru_unmap()
 * (marufs-design(7) §5). marufs tells where a file's bytes are (MARUFS_IOC_EXTENTS);
 * this file maps the pool memory at those extents into one contiguous
 * range (several extents are stitched with MAP_FIXED into a reserved range)
 * and keeps a duplicate of the descriptor open: that open file is the lease
 * that keeps the bytes in place (with MARU_MAP_BORROW, the caller's own).
 * Device-DAX maps only at its alignment, so offsets, lengths and the
 * virtual range follow the pool's granule: extents can be stitched only
 * where they join on a granule boundary (layout_plan refuses the rest with
 * EINVAL). marud's allocator keeps every file's extents that way, also
 * for files that grow piece by piece (daemon/alloc_grow.c).
 *
 * Pools are cached per process (struct pool_ref): where this host opens the
 * pool, its granule, and one read-only mapping of the whole pool, made when
 * the pool is first met and kept for the life of the process (unmapped only
 * when the pool behind that name changes identity). Its superblock is how a
 * mapping checks the pool UUID when it is made and the marud generation
 * whenever asked (maru_map_check). A read-only mapping whose extents lie
 * side by side in the pool is a pointer into it: no mmap or munmap per
 * open, and MARU_MAP_POPULATE prefaults each 2 MiB chunk of the pool once
 * per process (p->populated). Writable mappings, and extents that must be
 * stitched, get their own mmap as before. pool_lock guards the cache and
 * is taken around fork() so a child can map too. A struct maru_map is used
 * by one thread at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "maru/libmaru.h"
#include "pool_locate.h"
#include "cacheflush.h"
#include "extent.h"
#include "proto.h"
#include "superblock.h"

/* layout_plan walks the ioctl's extents as struct extent: same layout. */
_Static_assert(sizeof(struct marufs_extent) == sizeof(struct extent) &&
	       offsetof(struct marufs_extent, off) == offsetof(struct extent, off) &&
	       offsetof(struct marufs_extent, len) == offsetof(struct extent, len),
	       "struct marufs_extent must have struct extent's layout");

/* MARU_MAP_POPULATE prefaults the whole pool mapping in chunks of this size */
#define POP_CHUNK	(2ULL << 20)

struct pool_ref {
	struct pool_ref *next;
	unsigned int refs;
	uint8_t uuid[16];
	char name[MARUFS_POOL_PATH_MAX];	/* marud's path */
	char path[PATH_MAX];		/* where this host opens it */
	dev_t dev;			/* the file at path when it was mapped */
	ino_t ino;
	uint64_t size;
	uint64_t granule;		/* mapping offsets/lengths are multiples */
	const struct pool_superblock *sb;
	size_t sb_len;			/* 0: sb is base */
	const uint8_t *base;		/* the whole pool read-only, or NULL */
	uint64_t *populated;		/* a bit per POP_CHUNK of base, set atomically */
};

struct maru_map {
	uint8_t *addr;		/* file byte 0 */
	uint64_t size;
	void *va;		/* the whole mapped range */
	size_t va_len;
	int fd;			/* the lease */
	pid_t pid;		/* a write hold belongs to the process that took it */
	unsigned int flags;	/* MARU_MAP_* */
	int held;
	int borrowed;		/* fd is the caller's: not closed here */
	uint64_t generation;
	struct pool_ref *pool;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static struct pool_ref *pools;

static uint64_t round_up(uint64_t v, uint64_t g)
{
	return (v + g - 1) / g * g;
}

/* ---- the pool cache ---- */

static void fork_prepare(void)
{
	pthread_mutex_lock(&pool_lock);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&pool_lock);
}

static void pool_init_once(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

static uint64_t granule_of(const char *path, uint64_t pool_align)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), g = page;
	struct stat st;

	if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) && pool_locate_dax_align(path, &g))
		g = pool_align;	/* marud's pool align is the device's */
	return g > page ? g : page;
}

/*
 * Test seam: the mapping granule of the pool at path. The unit test sets
 * device-DAX granules on a regular file; libmaru never changes it.
 */
extern uint64_t (*map_granule)(const char *path, uint64_t pool_align);
uint64_t (*map_granule)(const char *path, uint64_t pool_align) = granule_of;

/* The whole pool read-only, for the life of the process (NULL if it cannot be). */
static void pool_map_whole(struct pool_ref *p, int fd)
{
	uint64_t chunks = (p->size + POP_CHUNK - 1) / POP_CHUNK;
	void *base;

	if (p->size > SIZE_MAX || p->size % p->granule)
		return;
	p->populated = calloc((size_t)((chunks + 63) / 64), sizeof(*p->populated));
	if (!p->populated)
		return;
	base = mmap(NULL, (size_t)p->size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		free(p->populated);
		p->populated = NULL;
		return;
	}
	p->base = base;
}

static int sb_map(struct pool_ref *p)
{
	struct stat st;
	void *sb;
	int fd, err;

	fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES ? -EACCES : -ENODEV;
	if (fstat(fd, &st) == 0) {
		p->dev = st.st_dev;
		p->ino = st.st_ino;
	}
	pool_map_whole(p, fd);
	if (p->base) {
		p->sb = (const void *)p->base;
		close(fd);
	} else {
		p->sb_len = p->granule;
		sb = mmap(NULL, p->sb_len, PROT_READ, MAP_SHARED, fd, 0);
		err = errno;
		close(fd);
		if (sb == MAP_FAILED)
			return err == EACCES ? -EACCES : -ENODEV;
		p->sb = sb;
	}
	if (pool_sb_check(p->sb) || memcmp(p->sb->uuid, p->uuid, sizeof(p->uuid)) ||
	    p->sb->size != p->size)
		return -ENODEV;
	return 0;
}

static void pool_free(struct pool_ref *p)
{
	if (p->base)
		munmap((void *)p->base, (size_t)p->size);
	else if (p->sb)
		munmap((void *)p->sb, p->sb_len);
	free(p->populated);
	free(p);
}

static int pool_new(const struct marufs_extents *x, struct pool_ref **out)
{
	struct pool_ref *p = calloc(1, sizeof(*p));
	const char *why = "";
	int rc;

	if (!p)
		return -ENOMEM;
	memcpy(p->uuid, x->uuid, sizeof(p->uuid));
	memcpy(p->name, x->pool_path, sizeof(p->name));
	p->size = x->pool_size;
	rc = pool_locate(p->name, p->uuid, p->path, sizeof(p->path), &why);
	if (rc == 0) {
		p->granule = map_granule(p->path, x->align);
		rc = sb_map(p);
	}
	if (rc) {
		pool_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* Is the file mapped for p gone from its path (a pool replaced or removed)? */
static int pool_moved(const struct pool_ref *p)
{
	struct stat st;

	return stat(p->path, &st) || st.st_dev != p->dev || st.st_ino != p->ino;
}

/*
 * Unused entries for the same marud path name a pool that was replaced;
 * unused entries whose file left its path would keep its memory alive.
 */
static void pool_prune_locked(const char *name)
{
	struct pool_ref **pp = &pools, *p;

	while ((p = *pp)) {
		if (p->refs == 0 && (strcmp(p->name, name) == 0 || pool_moved(p))) {
			*pp = p->next;
			pool_free(p);
		} else {
			pp = &p->next;
		}
	}
}

static int pool_get(const struct marufs_extents *x, struct pool_ref **out)
{
	struct pool_ref *p;
	int rc = 0;

	pthread_once(&pool_once, pool_init_once);
	pthread_mutex_lock(&pool_lock);
	for (p = pools; p; p = p->next)
		if (!memcmp(p->uuid, x->uuid, sizeof(p->uuid)) &&
		    !strcmp(p->name, x->pool_path) && p->size == x->pool_size)
			break;
	if (!p) {
		pool_prune_locked(x->pool_path);
		rc = pool_new(x, &p);
		if (rc == 0) {
			p->next = pools;
			pools = p;
		}
	}
	if (rc == 0) {
		p->refs++;
		*out = p;
	}
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

static void pool_put(struct pool_ref *p)
{
	pthread_mutex_lock(&pool_lock);
	p->refs--;
	pthread_mutex_unlock(&pool_lock);
}

static uint64_t pool_generation(const struct pool_ref *p)
{
	return __atomic_load_n(&p->sb->generation, __ATOMIC_ACQUIRE);
}

/* ---- asking marufs ---- */

static int ext_call(int fd, struct marufs_extents *x, uint32_t first, uint32_t flags)
{
	x->magic = MARUFS_EXT_MAGIC;
	x->version = MARUFS_EXT_VERSION;
	x->first = first;
	x->flags = flags;
	if (ioctl(fd, MARUFS_IOC_EXTENTS, x))
		return -errno;
	if (x->count > MARUFS_EXT_MAX || x->count > x->nextents - first ||
	    x->nextents > PROTO_MAX_EXTENTS || (x->count == 0 && first < x->nextents))
		return -EIO;
	x->pool_path[sizeof(x->pool_path) - 1] = '\0';
	return 0;
}

/* Every extent of the file into *out (x holds the facts of the first call). */
static int ext_fetch(int fd, struct marufs_extents *x, struct marufs_extents *more,
		     struct marufs_extent **out)
{
	struct marufs_extent *v;
	uint32_t got;
	int rc = 0;

	v = malloc((x->nextents ? x->nextents : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, x->ext, x->count * sizeof(*v));
	for (got = x->count; got < x->nextents && rc == 0; got += more->count) {
		rc = ext_call(fd, more, got, 0);
		/* a lease's extents never change; a pending one's may grow */
		if (rc == 0 && (more->ino != x->ino || more->generation != x->generation))
			rc = -ESTALE;
		if (rc == 0)
			memcpy(v + got, more->ext, more->count * sizeof(*v));
	}
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	return 0;
}

/* ---- mapping ---- */

struct layout {
	const struct marufs_extent *ext;
	uint32_t n;		/* extents needed to cover size */
	uint64_t g, lead, span;
};

/* Every extent a real range of the pool (the walk skips empty ones). */
static int layout_valid(const struct marufs_extent *ext, uint32_t n, uint64_t pool_size)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (ext[i].len == 0 || ext[i].off + ext[i].len < ext[i].off ||
		    ext[i].off + ext[i].len > pool_size)
			return -EIO;
	return 0;
}

/* Can the extents be put side by side at granule g? */
static int layout_plan(struct layout *l, const struct marufs_extents *x,
		       const struct marufs_extent *ext, uint64_t g)
{
	struct extent_iter it;
	struct extent_piece p;
	uint32_t n = 0;

	l->ext = ext;
	l->g = g;
	l->lead = x->nextents ? ext[0].off % g : 0;
	extent_iter_init(&it, (const struct extent *)ext, x->nextents, 0, x->size);
	while (extent_iter_next(&it, &p)) {
		if (layout_valid(&ext[p.idx], 1, x->pool_size))
			return -EIO;
		/* every extent after the first starts on a granule, at a granule */
		if (p.idx && ((l->lead + p.file_off) % g || p.pool_off % g))
			return -EINVAL;
		n = p.idx + 1;
	}
	if (layout_valid(ext, n, x->pool_size))
		return -EIO;
	if (it.left)
		return -EIO;	/* extents do not cover the file */
	l->n = n;
	l->span = round_up(l->lead + x->size, g);
	return 0;
}

/* A range of span bytes aligned to g, reserved PROT_NONE. */
static void *va_reserve(uint64_t span, uint64_t g)
{
	uint8_t *r, *va;

	r = mmap(NULL, span + g, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	va = (uint8_t *)round_up((uintptr_t)r, g);
	if (va > r)
		munmap(r, (size_t)(va - r));
	if (r + span + g > va + span)
		munmap(va + span, (size_t)(r + span + g - (va + span)));
	return va;
}

static int map_extents(struct maru_map *m, const struct layout *l, int pfd, int prot,
		       int mflags)
{
	uint64_t pos = 0, seg, len;
	uint8_t *va;
	uint32_t i;

	if (l->n == 1) {
		/* one extent: let the kernel place it (devdax aligns by itself) */
		va = mmap(NULL, l->span, prot, MAP_SHARED | mflags, pfd,
			  (off_t)(l->ext[0].off - l->lead));
		if (va == MAP_FAILED)
			return -errno;
	} else {
		va = va_reserve(l->span, l->g);
		if (!va)
			return -ENOMEM;
		for (i = 0; i < l->n; i++) {
			seg = i ? l->lead + pos : 0;
			len = i + 1 < l->n ? l->lead + pos + l->ext[i].len - seg : l->span - seg;
			if (mmap(va + seg, len, prot, MAP_SHARED | MAP_FIXED | mflags, pfd,
				 (off_t)(l->ext[i].off - (i ? 0 : l->lead))) == MAP_FAILED) {
				int err = errno;

				munmap(va, l->span);
				return -err;
			}
			pos += l->ext[i].len;
		}
	}
	m->va = va;
	m->va_len = l->span;
	m->addr = va + l->lead;
	return 0;
}

/*
 * A read-only file whose extents follow each other in the pool is a range
 * of the pool mapping: its byte 0 in *addr. 0 if it is not (or no mapping).
 */
static int in_base(const struct pool_ref *p, const struct marufs_extents *x,
		   const struct marufs_extent *ext, const uint8_t **addr)
{
	struct extent_iter it;
	struct extent_piece pc;
	uint64_t next = 0;

	if (!p->base || x->pool_size != p->size)
		return 0;
	extent_iter_init(&it, (const struct extent *)ext, x->nextents, 0, x->size);
	while (extent_iter_next(&it, &pc)) {
		if (layout_valid(&ext[pc.idx], 1, x->pool_size) || (pc.idx && pc.pool_off != next))
			return 0;	/* layout_plan says what is wrong */
		next = pc.pool_off + pc.len;
	}
	if (it.left)
		return 0;
	*addr = p->base + ext[0].off;
	return 1;
}

/* Prefault [off, off+len) of the pool mapping, each chunk once per process. */
static void pool_populate(struct pool_ref *p, uint64_t off, uint64_t len)
{
	uint64_t c, bit, at, n;
	volatile const uint8_t *b;

	for (c = off / POP_CHUNK; c * POP_CHUNK < off + len; c++) {
		bit = 1ULL << (c % 64);
		if (__atomic_load_n(&p->populated[c / 64], __ATOMIC_RELAXED) & bit)
			continue;
		at = c * POP_CHUNK;
		n = p->size - at < POP_CHUNK ? p->size - at : POP_CHUNK;
		if (madvise((void *)(p->base + at), (size_t)n, MADV_POPULATE_READ)) {
			/* a kernel before 5.14: touch each page instead */
			for (b = p->base + at; b < p->base + at + n; b += 4096)
				(void)*b;
		}
		__atomic_fetch_or(&p->populated[c / 64], bit, __ATOMIC_RELAXED);
	}
}

static int map_pool(struct maru_map *m, const struct marufs_extents *x,
		    const struct marufs_extent *ext, unsigned int flags)
{
	int wr = flags & MARU_MAP_WRITE;
	const uint8_t *addr;
	struct layout l;
	int pfd, rc;

	if (x->size == 0)
		return 0;
	if (!wr && in_base(m->pool, x, ext, &addr)) {
		m->addr = (uint8_t *)addr;
		if (flags & MARU_MAP_POPULATE)
			pool_populate(m->pool, ext[0].off, x->size);
		return 0;
	}
	rc = layout_plan(&l, x, ext, m->pool->granule);
	if (rc)
		return rc;
	pfd = open(m->pool->path, (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (pfd < 0)
		return errno == EACCES ? -EACCES : -ENODEV;
	rc = map_extents(m, &l, pfd, wr ? PROT_READ | PROT_WRITE : PROT_READ,
			 flags & MARU_MAP_POPULATE ? MAP_POPULATE : 0);
	close(pfd);
	return rc;
}

/* The lease: a duplicate of fd, or path opened relative to it. */
static int lease_open(int fd, const char *path, unsigned int flags)
{
	int lfd;

	if (path)
		lfd = openat(fd, path, (flags & MARU_MAP_WRITE ? O_RDWR : O_RDONLY) |
			     O_CLOEXEC | O_NOCTTY);
	else
		lfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return lfd < 0 ? -errno : lfd;
}

static void map_free(struct maru_map *m)
{
	if (m->va)
		munmap(m->va, m->va_len);
	if (m->held)
		ioctl(m->fd, MARUFS_IOC_UNHOLD);
	if (m->fd >= 0 && !m->borrowed)
		close(m->fd);
	if (m->pool)
		pool_put(m->pool);
	free(m);
}

static int map_build(struct maru_map *m, struct marufs_extents *x, struct marufs_extents *more,
		     unsigned int flags)
{
	struct marufs_extent *ext = NULL;
	int rc;

	rc = ext_call(m->fd, x, 0, flags & MARU_MAP_WRITE ? MARUFS_EXT_WANT_WRITE : 0);
	if (rc)
		return rc == -ENOTTY || rc == -EINVAL ? -ENOTTY : rc;
	m->held = !!(x->flags & MARUFS_EXT_HELD);
	if ((flags & MARU_MAP_WRITE) && !m->held)
		return -EBADF;
	rc = ext_fetch(m->fd, x, more, &ext);
	if (rc == 0)
		rc = pool_get(x, &m->pool);
	if (rc == 0 && pool_generation(m->pool) != x->generation)
		rc = -ESTALE;
	if (rc == 0)
		rc = map_pool(m, x, ext, flags);
	/* a restart while we mapped: these extents may be someone else's */
	if (rc == 0 && pool_generation(m->pool) != x->generation)
		rc = -ESTALE;
	free(ext);
	return rc;
}

int maru_map(int fd, const char *path, unsigned int flags, struct maru_map **out)
{
	struct marufs_extents *x;
	struct maru_map *m;
	int rc;

	if (!out || (flags & ~(MARU_MAP_WRITE | MARU_MAP_POPULATE | MARU_MAP_BORROW)) ||
	    (!path && fd < 0) ||
	    ((flags & MARU_MAP_BORROW) && (path || (flags & MARU_MAP_WRITE))))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	x = calloc(2, sizeof(*x));	/* the first reply, and the next pages */
	if (!m || !x) {
		free(m);
		free(x);
		return -ENOMEM;
	}
	m->pid = getpid();
	m->borrowed = !!(flags & MARU_MAP_BORROW);
	m->fd = m->borrowed ? fd : lease_open(fd, path, flags);
	rc = m->fd < 0 ? m->fd : map_build(m, x, x + 1, flags);
	if (rc) {
		map_free(m);
		free(x);
		return rc;
	}
	m->size = x->size;
	m->generation = x->generation;
	m->flags = (flags & MARU_MAP_WRITE) |
		   (x->flags & MARUFS_EXT_PENDING ? MARU_MAP_PENDING : 0) |
		   (x->coherence == MARUFS_COHERENCE_FLUSH ? MARU_MAP_COHERENCE_FLUSH : 0);
	free(x);
	/* coherence=flush: drop lines another host's writes may have left stale */
	if (!(m->flags & MARU_MAP_WRITE))
		maru_map_sync(m);
	*out = m;
	return 0;
}

void *maru_map_addr(const struct maru_map *m)
{
	return m ? m->addr : NULL;
}

uint64_t maru_map_size(const struct maru_map *m)
{
	return m ? m->size : 0;
}

unsigned int maru_map_flags(const struct maru_map *m)
{
	return m ? m->flags : 0;
}

int maru_map_check(const struct maru_map *m)
{
	if (!m)
		return -EINVAL;
	return pool_generation(m->pool) == m->generation ? 0 : -ESTALE;
}

int maru_map_sync(struct maru_map *m)
{
	if (!m)
		return -EINVAL;
	if ((m->flags & MARU_MAP_COHERENCE_FLUSH) && m->size)
		cache_flush(m->addr, m->size, !(m->flags & MARU_MAP_WRITE));
	return maru_map_check(m);
}

int maru_unmap(struct maru_map *m)
{
	int rc = 0;

	if (!m)
		return -EINVAL;
	if (m->flags & MARU_MAP_WRITE)
		maru_map_sync(m);
	if (m->va)
		munmap(m->va, m->va_len);
	m->va = NULL;
	/* the hold is shared with a forked child's copy: only its owner ends it */
	if (m->held && m->pid == getpid() && ioctl(m->fd, MARUFS_IOC_UNHOLD))
		rc = -errno;
	m->held = 0;
	if (!m->borrowed && close(m->fd) && rc == 0 && errno != EINTR)
		rc = -errno;
	m->fd = -1;
	pool_put(m->pool);
	free(m);
	return rc;
}
