/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/preload/preload.c: libmaru-preload.so, the LD_PRELOAD shim that serves mmap
 * and large reads of marufs files from the pool memory with maru_map()
 * (marufs-design(7) §5), so an unmodified engine reads at memory speed. It interposes
 * mmap/munmap, read/pread/readv/preadv (and their _chk and 64 forms),
 * close/fclose/dup2/dup3; anything it cannot serve goes to the next
 * definition (dlsym RTLD_NEXT) unchanged: other filesystems, reads below
 * MARU_PRELOAD_MIN, descriptors not opened O_RDONLY, pending files, and any
 * descriptor whose mapping failed once.
 *
 * Reads: a table of entries keyed by (fd, st_dev, st_ino) caches, per
 * descriptor, either a read-only mapping of the file or the verdict "not
 * ours". The mapping is made (and the extents asked) once per open, and is
 * normally a range of libmaru's per-process pool mapping, populated once:
 * a served read is a memcpy out of it. The key is checked with fstat on
 * every large read, so a descriptor closed behind our back (close_range, a
 * raw syscall) and reused for another file never hits a stale entry; close,
 * fclose, dup2 and dup3 drop the entry at once, after waiting for the reads
 * in flight on it: the mapping borrows the descriptor as its lease
 * (MARU_MAP_BORROW), so closing it costs no extra round trip to marufs.
 * read/readv keep the file offset with lseek under the entry's pos_lock.
 * Every copy is bracketed by maru_map_check(): after a marud restart the
 * read falls through to FUSE, which answers EIO.
 *
 * mmap: each intercepted mmap is its own maru_map (holding its own lease),
 * remembered by address until munmap of the whole range.
 *
 * Locks: tab_lock guards both tables and entry refcounts; it is never held
 * across a libmaru call or a copy. fork: the child drops the read cache
 * (lazily, on its next call, since libmaru's own fork handlers have not run
 * yet when ours do) and keeps the mmap table: its mappings were inherited.
 * Calls made by libmaru itself (its close, mmap) are recognised by a
 * thread-local flag and passed straight through.
 *
 * Environment: MARU_PRELOAD=0 disables everything, MARU_PRELOAD_LOG=1 logs
 * each interception to stderr, MARU_PRELOAD_MIN=bytes (suffixes K M G)
 * sets the read threshold (default 256 KiB).
 */
/* pread and pread64 are both defined here: no asm redirection of one to the other */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "maru/libmaru.h"
#include "parse.h"

#define EXPORT __attribute__((visibility("default")))
#define FUSE_SUPER_MAGIC	0x65735546
#define DEFAULT_MIN		(256u << 10)
#define TAB_SIZE		256
#define KEPT_MAX		32	/* mappings kept for reopens */

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pread64_fn)(int, void *, size_t, off64_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef ssize_t (*preadv_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*preadv64_fn)(int, const struct iovec *, int, off64_t);
typedef ssize_t (*read_chk_fn)(int, void *, size_t, size_t);
typedef ssize_t (*pread_chk_fn)(int, void *, size_t, off_t, size_t);
typedef ssize_t (*pread64_chk_fn)(int, void *, size_t, off64_t, size_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef void *(*mmap64_fn)(void *, size_t, int, int, int, off64_t);
typedef int (*munmap_fn)(void *, size_t);
typedef int (*close_fn)(int);
typedef int (*fclose_fn)(FILE *);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);

static struct {
	read_fn read;
	pread_fn pread;
	pread64_fn pread64;
	readv_fn readv;
	preadv_fn preadv;
	preadv64_fn preadv64;
	read_chk_fn read_chk;
	pread_chk_fn pread_chk;
	pread64_chk_fn pread64_chk;
	mmap_fn mmap;
	mmap64_fn mmap64;
	munmap_fn munmap;
	close_fn close;
	fclose_fn fclose;
	dup2_fn dup2;
	dup3_fn dup3;
} real;

static int enabled, logging;
static size_t min_read = DEFAULT_MIN;
static long page_size;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int in_shim;	/* our own (and libmaru's) calls pass through */

/* A version as fstat tells it, the key of a kept mapping (below). */
struct kkey {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* A descriptor's read cache: a mapping, or neg = "not served here". */
struct ent {
	struct ent *next;
	int fd;
	int refs;		/* the table's, plus one per reader */
	int dropping;		/* unlinked by a close: it waits for the readers */
	int neg;
	struct maru_map *m;
	struct kkey key;	/* the file's version: the table's key, m's when kept */
	pthread_mutex_t pos_lock;	/* read/readv: offset read-modify-write */
};

/* An intercepted mmap: [start, start+len) belongs to m. */
struct region {
	struct region *next;
	uint8_t *start;
	size_t len;
	struct maru_map *m;
};

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t readers_done = PTHREAD_COND_INITIALIZER;	/* a dropping entry's */
static struct ent *tab[TAB_SIZE];
static struct ent *purge;	/* dropped in a fork child, freed on the next call */
static struct region *regions;

/* ---- setup ---- */

static void plog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void plog(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (!logging)
		return;
	va_start(ap, fmt);
	fputs("maru-preload: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	errno = saved;
}

#define SYM(field, name) (*(void **)&real.field = dlsym(RTLD_NEXT, name))

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* glibc's fortified entry points: declared here, their headers do not */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t len, off64_t off, size_t buflen);

static void read_env(void)
{
	const char *v = getenv("MARU_PRELOAD");
	uint64_t n;

	enabled = !(v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no")));
	v = getenv("MARU_PRELOAD_LOG");
	logging = v && strcmp(v, "0") != 0 && v[0];
	v = getenv("MARU_PRELOAD_MIN");
	if (v && v[0]) {
		if (parse_size(v, &n) == 0)
			min_read = n ? (size_t)n : 1;
		else
			plog("MARU_PRELOAD_MIN=%s: not a size, keeping %zu", v, min_read);
	}
}

static void init(void)
{
	SYM(read, "read");
	SYM(pread, "pread");
	SYM(pread64, "pread64");
	SYM(readv, "readv");
	SYM(preadv, "preadv");
	SYM(preadv64, "preadv64");
	SYM(read_chk, "__read_chk");
	SYM(pread_chk, "__pread_chk");
	SYM(pread64_chk, "__pread64_chk");
	SYM(mmap, "mmap");
	SYM(mmap64, "mmap64");
	SYM(munmap, "munmap");
	SYM(close, "close");
	SYM(fclose, "fclose");
	SYM(dup2, "dup2");
	SYM(dup3, "dup3");
	page_size = sysconf(_SC_PAGESIZE);
	read_env();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static inline void setup(void)
{
	pthread_once(&init_once, init);
}

__attribute__((constructor)) static void preload_ctor(void)
{
	setup();
}

/* ---- mappings kept across opens ---- */

/*
 * The mappings of the last KEPT_MAX descriptors closed, by (st_dev, st_ino):
 * a marufs inode is one published version, immutable, so a new descriptor
 * of it is a new lease on the same bytes at the same extents, and its reads
 * need not ask marufs for them again (MARUFS_IOC_EXTENTS, a FUSE round trip
 * per open). A kept mapping is only taken by a descriptor of its version
 * (which holds the lease while it reads), and is checked against marud's
 * generation like any other. Size and mtime are part of the key: a device
 * number reused by another mount (of another pool) would also need a
 * version of the same number, size and time to the nanosecond. A fork
 * child unmaps what it inherited.
 */
static struct {
	struct kkey k;
	struct maru_map *m;
} kept[KEPT_MAX];
static unsigned int kept_next;
static int kept_stale;		/* a fork child's: unmap them all */

static void unmap_quiet(struct maru_map *m)
{
	if (!m)
		return;
	in_shim++;
	maru_unmap(m);
	in_shim--;
}

static int kkey_eq(const struct kkey *a, const struct kkey *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Keep m for the next open of its version; the slot's older mapping goes. */
static void kept_put(const struct kkey *k, struct maru_map *m)
{
	struct maru_map *old;

	pthread_mutex_lock(&tab_lock);
	old = kept[kept_next].m;
	kept[kept_next].k = *k;
	kept[kept_next].m = m;
	kept_next = (kept_next + 1) % KEPT_MAX;
	pthread_mutex_unlock(&tab_lock);
	unmap_quiet(old);
}

/* The kept mapping of version k, now the caller's, or NULL. */
static struct maru_map *kept_take(const struct kkey *k)
{
	struct maru_map *m = NULL;
	unsigned int i;

	pthread_mutex_lock(&tab_lock);
	for (i = 0; i < KEPT_MAX && !m; i++) {
		if (kept[i].m && kkey_eq(&kept[i].k, k)) {
			m = kept[i].m;
			kept[i].m = NULL;
		}
	}
	pthread_mutex_unlock(&tab_lock);
	return m;
}

static void kept_purge(void)
{
	struct maru_map *m;
	unsigned int i;

	for (i = 0; i < KEPT_MAX; i++) {
		pthread_mutex_lock(&tab_lock);
		m = kept[i].m;
		kept[i].m = NULL;
		pthread_mutex_unlock(&tab_lock);
		unmap_quiet(m);
	}
}

/* ---- the read cache ---- */

/* inherited: a fork child's entry, whose mapping is not kept */
static void ent_free(struct ent *e, int inherited)
{
	if (e->m && !inherited)
		kept_put(&e->key, e->m);
	else
		unmap_quiet(e->m);
	if (!inherited)
		pthread_mutex_destroy(&e->pos_lock);
	free(e);
}

static void ent_put(struct ent *e)
{
	int last;

	pthread_mutex_lock(&tab_lock);
	last = --e->refs == 0;
	if (e->dropping)
		pthread_cond_broadcast(&readers_done);
	pthread_mutex_unlock(&tab_lock);
	if (last)
		ent_free(e, 0);
}

/*
 * Unlink every entry of fd and drop the table's references, after the reads
 * in flight on them: the descriptor about to be closed is their lease.
 */
static void ent_drop_fd(int fd)
{
	struct ent **pp, *e, *gone = NULL;

	if (fd < 0)
		return;
	pthread_mutex_lock(&tab_lock);
	pp = &tab[(unsigned int)fd % TAB_SIZE];
	while ((e = *pp)) {
		if (e->fd == fd) {
			*pp = e->next;
			e->next = gone;
			e->dropping = 1;
			gone = e;
		} else {
			pp = &e->next;
		}
	}
	for (e = gone; e; e = e->next)
		while (e->refs > 1)
			pthread_cond_wait(&readers_done, &tab_lock);
	pthread_mutex_unlock(&tab_lock);
	while ((e = gone)) {
		gone = e->next;
		ent_put(e);
	}
}

/* Entries a fork child inherited: freed here, outside the fork handlers. */
static void purge_run(void)
{
	struct ent *e, *list;

	if (__atomic_exchange_n(&kept_stale, 0, __ATOMIC_ACQ_REL))
		kept_purge();
	if (!__atomic_load_n(&purge, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&tab_lock);
	list = purge;
	purge = NULL;
	pthread_mutex_unlock(&tab_lock);
	while ((e = list)) {
		list = e->next;
		ent_free(e, 1);	/* its lock may be held by a thread that is gone */
	}
}

static struct ent *ent_find_locked(int fd, const struct stat *st)
{
	struct ent *e;

	for (e = tab[(unsigned int)fd % TAB_SIZE]; e; e = e->next)
		if (e->fd == fd && e->key.dev == st->st_dev && e->key.ino == st->st_ino)
			return e;
	return NULL;
}

/*
 * Is the filesystem of st_dev a FUSE mount? fstatfs on FUSE is a round trip
 * to the daemon (and marufs asks marud), so the answer is remembered per
 * device number; a device reused by another mount costs at most a failed
 * ioctl (FUSE) or a missed interception (not FUSE any more).
 */
#define DEVS_MAX	64
static struct {
	dev_t dev;
	int fuse;
} devs[DEVS_MAX];
static unsigned int ndevs;

static int is_fuse(int fd, dev_t dev)
{
	struct statfs sf;
	unsigned int i;
	int fuse;

	pthread_mutex_lock(&tab_lock);
	for (i = 0; i < ndevs; i++) {
		if (devs[i].dev == dev) {
			fuse = devs[i].fuse;
			pthread_mutex_unlock(&tab_lock);
			return fuse;
		}
	}
	pthread_mutex_unlock(&tab_lock);
	fuse = fstatfs(fd, &sf) == 0 && sf.f_type == FUSE_SUPER_MAGIC;
	pthread_mutex_lock(&tab_lock);
	devs[ndevs % DEVS_MAX].dev = dev;
	devs[ndevs % DEVS_MAX].fuse = fuse;
	if (ndevs < DEVS_MAX)
		ndevs++;
	pthread_mutex_unlock(&tab_lock);
	return fuse;
}

/* A new entry for fd: its mapping if fd is a published marufs file read-only. */
static struct ent *ent_probe(int fd, const struct stat *st)
{
	struct ent *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return NULL;
	e->fd = fd;
	e->key = (struct kkey){ .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
				.mtime = st->st_mtim };
	e->neg = 1;
	pthread_mutex_init(&e->pos_lock, NULL);
	if (!S_ISREG(st->st_mode) || !is_fuse(fd, st->st_dev))
		return e;
	e->m = kept_take(&e->key);
	if (e->m && maru_map_check(e->m) == 0) {
		e->neg = 0;
		plog("fd %d: mapping of inode %llu kept from an earlier open", fd,
		     (unsigned long long)st->st_ino);
		return e;
	}
	unmap_quiet(e->m);
	e->m = NULL;
	in_shim++;
	/* the descriptor is the lease: close waits for its readers (ent_drop_fd) */
	rc = maru_map(fd, NULL, MARU_MAP_POPULATE | MARU_MAP_BORROW, &e->m);
	in_shim--;
	if (rc) {
		e->m = NULL;
		plog("fd %d: not mapped (%s): reads go through FUSE", fd, strerror(-rc));
	} else if (maru_map_flags(e->m) & MARU_MAP_PENDING) {
		plog("fd %d: pending file: reads go through FUSE", fd);
		in_shim++;
		maru_unmap(e->m);
		in_shim--;
		e->m = NULL;
	} else {
		e->neg = 0;
		plog("fd %d: mapped %llu bytes for reads", fd,
		     (unsigned long long)maru_map_size(e->m));
	}
	return e;
}

/* The entry of a read-only descriptor, with a reference, or NULL. */
static struct ent *ent_get(int fd)
{
	struct ent *e, *ne;
	struct stat st;
	int fl;

	purge_run();
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDONLY || fstat(fd, &st))
		return NULL;
	pthread_mutex_lock(&tab_lock);
	e = ent_find_locked(fd, &st);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&tab_lock);
	if (e)
		return e;
	ne = ent_probe(fd, &st);
	if (!ne)
		return NULL;
	pthread_mutex_lock(&tab_lock);
	e = ent_find_locked(fd, &st);	/* another thread probed meanwhile */
	if (!e) {
		e = ne;
		ne = NULL;
		e->refs = 1;
		e->next = tab[(unsigned int)fd % TAB_SIZE];
		tab[(unsigned int)fd % TAB_SIZE] = e;
	}
	e->refs++;
	pthread_mutex_unlock(&tab_lock);
	if (ne)
		ent_free(ne, 0);
	return e;
}

/* ---- serving reads ---- */

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (t + iov[i].iov_len < t)
			return 0;
		t += iov[i].iov_len;
	}
	return t;
}

static void copy_out(const struct iovec *iov, int n, const uint8_t *src, size_t len)
{
	size_t k;
	int i;

	for (i = 0; i < n && len; i++) {
		k = iov[i].iov_len < len ? iov[i].iov_len : len;
		memcpy(iov[i].iov_base, src, k);
		src += k;
		len -= k;
	}
}

/* Copy file bytes [pos, ...) of e into iov; -1 if it must fall through. */
static ssize_t ent_copy(struct ent *e, const struct iovec *iov, int n, size_t total, off_t pos)
{
	uint64_t size = maru_map_size(e->m);
	size_t len;

	if (pos < 0)
		return -1;
	if ((uint64_t)pos >= size)
		return 0;
	len = size - (uint64_t)pos < total ? (size_t)(size - (uint64_t)pos) : total;
	if (maru_map_check(e->m))
		return -1;
	copy_out(iov, n, (const uint8_t *)maru_map_addr(e->m) + pos, len);
	/* a marud restart during the copy: FUSE will say EIO, never these bytes */
	if (maru_map_check(e->m))
		return -1;
	return (ssize_t)len;
}

/*
 * Serve a read from the mapping: 1 with *res set, or 0 to fall through.
 * use_pos: read/readv at the file offset (updated), else pread at off.
 */
static int serve(int fd, const struct iovec *iov, int n, off_t off, int use_pos, ssize_t *res)
{
	size_t total = iov_total(iov, n);
	struct ent *e;
	ssize_t got;
	off_t pos = off;

	if (!enabled || in_shim || total < min_read || fd < 0)
		return 0;
	in_shim++;
	e = ent_get(fd);
	if (!e || __atomic_load_n(&e->neg, __ATOMIC_ACQUIRE)) {
		if (e)
			ent_put(e);
		in_shim--;
		return 0;
	}
	if (use_pos) {
		pthread_mutex_lock(&e->pos_lock);
		pos = lseek(fd, 0, SEEK_CUR);
	}
	got = ent_copy(e, iov, n, total, pos);
	if (got > 0 && use_pos && lseek(fd, pos + got, SEEK_SET) < 0)
		got = -1;
	if (use_pos)
		pthread_mutex_unlock(&e->pos_lock);
	if (got < 0) {
		__atomic_store_n(&e->neg, 1, __ATOMIC_RELEASE);	/* after an error: FUSE */
		plog("fd %d: read at %lld: falling through to FUSE", fd, (long long)pos);
	} else {
		plog("read fd %d off %lld len %zu -> %zd (zero-copy)", fd, (long long)pos,
		     total, got);
	}
	ent_put(e);
	in_shim--;
	if (got < 0)
		return 0;
	*res = got;
	return 1;
}

static int serve1(int fd, void *buf, size_t len, off_t off, int use_pos, ssize_t *res)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return serve(fd, &v, 1, off, use_pos, res);
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	ssize_t r;

	setup();
	if (len >= min_read && serve1(fd, buf, len, 0, 1, &r))
		return r;
	return real.read(fd, buf, len);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	ssize_t r;

	setup();
	if (len <= buflen && len >= min_read && serve1(fd, buf, len, 0, 1, &r))
		return r;
	return real.read_chk(fd, buf, len, buflen);
}

EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t r;

	setup();
	if (len >= min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return real.pread(fd, buf, len, off);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t len, off64_t off)
{
	ssize_t r;

	setup();
	if (len >= min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return real.pread64(fd, buf, len, off);
}

EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	ssize_t r;

	setup();
	if (len <= buflen && len >= min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return real.pread_chk(fd, buf, len, off, buflen);
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off64_t off, size_t buflen)
{
	ssize_t r;

	setup();
	if (len <= buflen && len >= min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return real.pread64_chk(fd, buf, len, off, buflen);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	ssize_t r;

	setup();
	if (n > 0 && n <= IOV_MAX && serve(fd, iov, n, 0, 1, &r))
		return r;
	return real.readv(fd, iov, n);
}

EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	ssize_t r;

	setup();
	if (n > 0 && n <= IOV_MAX && serve(fd, iov, n, off, 0, &r))
		return r;
	return real.preadv(fd, iov, n, off);
}

EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off64_t off)
{
	ssize_t r;

	setup();
	if (n > 0 && n <= IOV_MAX && serve(fd, iov, n, off, 0, &r))
		return r;
	return real.preadv64(fd, iov, n, off);
}

/* ---- mmap ---- */

static int map_flags_for(int prot, int flags, unsigned int *mf)
{
	int type = flags & MAP_TYPE;

	if (flags & (MAP_ANONYMOUS | MAP_FIXED | MAP_FIXED_NOREPLACE) || (prot & PROT_EXEC))
		return 0;
	if (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) {
		*mf = prot & PROT_WRITE ? MARU_MAP_WRITE : 0;
		return 1;
	}
	/* a private read-only view of immutable bytes is a shared one */
	*mf = 0;
	return type == MAP_PRIVATE && !(prot & PROT_WRITE);
}

static void *region_add(struct maru_map *m, off_t off, size_t len)
{
	struct region *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->m = m;
	r->start = (uint8_t *)maru_map_addr(m) + off;
	r->len = (len + (size_t)page_size - 1) & ~((size_t)page_size - 1);
	pthread_mutex_lock(&tab_lock);
	r->next = regions;
	regions = r;
	pthread_mutex_unlock(&tab_lock);
	return r->start;
}

/* The mapping for an mmap call, or NULL to fall through. */
static void *serve_mmap(size_t len, int prot, int flags, int fd, off_t off)
{
	unsigned int mf;
	struct maru_map *m;
	struct stat st;
	uint64_t size;
	void *p = NULL;
	int rc;

	if (!enabled || in_shim || fd < 0 || len == 0 || off < 0 || (off & (page_size - 1)) ||
	    !map_flags_for(prot, flags, &mf) || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !is_fuse(fd, st.st_dev))
		return NULL;
	in_shim++;
	rc = maru_map(fd, NULL, mf, &m);
	if (rc) {
		plog("mmap fd %d: not mapped (%s): through FUSE", fd, strerror(-rc));
		goto out;
	}
	size = (maru_map_size(m) + (uint64_t)page_size - 1) & ~((uint64_t)page_size - 1);
	if ((uint64_t)off + len > size || ((uintptr_t)maru_map_addr(m) & (page_size - 1))) {
		plog("mmap fd %d: range %lld+%zu past the file: through FUSE", fd,
		     (long long)off, len);
		maru_unmap(m);
		goto out;
	}
	p = region_add(m, off, len);
	if (!p)
		maru_unmap(m);
	else
		plog("mmap fd %d off %lld len %zu%s (zero-copy)", fd, (long long)off, len,
		     mf & MARU_MAP_WRITE ? " writable" : "");
out:
	in_shim--;
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;

	setup();
	p = serve_mmap(len, prot, flags, fd, off);
	return p ? p : real.mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	void *p;

	setup();
	p = serve_mmap(len, prot, flags, fd, off);
	return p ? p : real.mmap64(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
	struct region **pp, *r = NULL;
	size_t full = (len + (size_t)page_size - 1) & ~((size_t)page_size - 1);
	int rc;

	setup();
	if (!in_shim && regions) {
		pthread_mutex_lock(&tab_lock);
		for (pp = &regions; (r = *pp); pp = &r->next) {
			if (r->start == addr && full >= r->len) {
				*pp = r->next;
				break;
			}
		}
		pthread_mutex_unlock(&tab_lock);
	}
	if (!r)
		return real.munmap(addr, len);
	in_shim++;
	rc = maru_unmap(r->m);
	in_shim--;
	plog("munmap %p len %zu (zero-copy mapping released%s)", addr, len,
	     rc ? ", publish failed" : "");
	free(r);
	return 0;
}

/* ---- descriptors ---- */

EXPORT int close(int fd)
{
	setup();
	if (!in_shim)
		ent_drop_fd(fd);
	return real.close(fd);
}

EXPORT int fclose(FILE *f)
{
	setup();
	if (!in_shim && f)
		ent_drop_fd(fileno(f));
	return real.fclose(f);
}

EXPORT int dup2(int old, int new)
{
	setup();
	if (!in_shim && old != new)
		ent_drop_fd(new);
	return real.dup2(old, new);
}

EXPORT int dup3(int old, int new, int flags)
{
	setup();
	if (!in_shim && old != new)
		ent_drop_fd(new);
	return real.dup3(old, new, flags);
}

/* ---- fork ---- */

static void fork_prepare(void)
{
	pthread_mutex_lock(&tab_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&tab_lock);
}

/* The child's descriptors are copies: its cache starts empty. */
static void fork_child(void)
{
	struct ent *e;
	unsigned int i;

	for (i = 0; i < TAB_SIZE; i++) {
		while ((e = tab[i])) {
			tab[i] = e->next;
			e->next = purge;
			purge = e;
		}
	}
	kept_stale = 1;
	pthread_mutex_init(&tab_lock, NULL);
	pthread_cond_init(&readers_done, NULL);
}
