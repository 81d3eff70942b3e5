/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/handle.c: the open regular files of a mount. Readers hold a lease on
 * the published version the kernel's inode is (or share this mount's
 * pending version of it, or take over a pin from pin.c); writers share the
 * name's one pending version (rewrite.c finds or makes it, pending.c runs
 * it). A write on a handle whose pending was published meanwhile switches it
 * to a new one: copy-on-write. Also the zero-copy holds: a writable mapping
 * writes bytes marufs never sees, so no flush publishes while holds remain.
 * The registry of live handles lets the ones whose RELEASE never came be
 * freed at exit (at unmount the kernel may drop queued background RELEASEs).
 * A read of a published version over shm can name the pool file itself as
 * the source of the reply (handle_read_src): the kernel then splices the
 * pool's pages into it, with no copy through marufs (poolsrc.c).
 * A descriptor open for writing only is direct_io (write_only()).
 *
 * Locks: h->lock guards h->p, h->lease and h->active, and is taken before
 * any pending.c lock. hr->lock guards the registry list only, a leaf.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failpoint.h"
#include "fileio.h"
#include "handle.h"
#include "lcache.h"
#include "notify.h"
#include "pending.h"
#include "pin.h"
#include "poolsrc.h"
#include "ratelog.h"
#include "rewrite.h"

#define ROOT_INO		1
#define OPEN_TRIES		8
#define COW_TRIES		4
#define TLS_BUF_MIN		65536
#define TASK_PF_EXITING		0x00000004	/* include/linux/sched.h */
#define SRC_EXTENTS		64	/* more: the copy path */

struct handle {
	struct mfs *m;
	uint64_t ino;		/* the kernel's inode */
	uint64_t epoch;
	int writer;
	int direct;		/* direct_io: its writes bypass the kernel's page cache */
	int active;		/* writer not flushed since it last wrote */
	pthread_mutex_t lock;	/* p, lease, active */
	struct pending *p;	/* ref held */
	struct maru_file *lease;
	int holds;		/* writable zero-copy mappings (ioctl.c) */
	uint64_t overflows;	/* m->overflows when marud last vouched for it */
	struct handle *hprev, *hnext;	/* hr->lock: every live handle */
};

struct hreg {
	pthread_mutex_t lock;
	struct handle *list;
};

int hreg_new(struct hreg **out)
{
	struct hreg *hr = calloc(1, sizeof(*hr));

	if (!hr)
		return -ENOMEM;
	pthread_mutex_init(&hr->lock, NULL);
	*out = hr;
	return 0;
}

void hreg_free(struct hreg *hr)
{
	if (!hr)
		return;
	pthread_mutex_destroy(&hr->lock);
	free(hr);
}

/* ---- per-thread read buffer (scratch, not mount state) ---- */

static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

struct tbuf {
	size_t cap;
	char data[];
};

static void buf_key_init(void)
{
	pthread_key_create(&buf_key, free);
}

static char *tls_buf(size_t size)
{
	size_t cap = size < TLS_BUF_MIN ? TLS_BUF_MIN : size;
	struct tbuf *b;

	pthread_once(&buf_once, buf_key_init);
	b = pthread_getspecific(buf_key);
	if (b && b->cap >= size)
		return b->data;
	free(b);
	b = malloc(sizeof(*b) + cap);
	pthread_setspecific(buf_key, b);
	if (!b)
		return NULL;
	b->cap = cap;
	return b->data;
}

/* ---- life cycle ---- */

static int stale(const struct handle *h)
{
	return h->epoch != mfs_epoch(h->m);
}

static struct handle *handle_new(struct mfs *m, uint64_t ino, int writer)
{
	struct handle *h = calloc(1, sizeof(*h));
	struct hreg *hr = m->hr;

	if (!h)
		return NULL;
	h->m = m;
	h->ino = ino;
	h->writer = writer;
	h->epoch = mfs_epoch(m);
	h->overflows = __atomic_load_n(&m->overflows, __ATOMIC_ACQUIRE);
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_lock(&hr->lock);
	h->hnext = hr->list;
	if (hr->list)
		hr->list->hprev = h;
	hr->list = h;
	pthread_mutex_unlock(&hr->lock);
	return h;
}

/* Detach h from everything. failed: never publish what it wrote. */
static void handle_free(struct handle *h, int failed)
{
	struct hreg *hr = h->m->hr;

	/* a zero-copy writer that never released its mapping died with it */
	if (__atomic_load_n(&h->holds, __ATOMIC_ACQUIRE) > 0)
		failed = 1;
	if (h->p)
		pend_release(h->p, h->writer, h->direct, &h->active, failed);
	/* a reader's own lease of the kernel's inode: kept for its next open */
	if (h->lease && !h->p && !h->writer && !failed && !stale(h))
		lcache_put(h->m->lc, h->ino, h->epoch, h->lease);
	else if (h->lease)
		maru_file_close(h->lease);
	pthread_mutex_lock(&hr->lock);
	if (h->hprev)
		h->hprev->hnext = h->hnext;
	else
		hr->list = h->hnext;
	if (h->hnext)
		h->hnext->hprev = h->hprev;
	pthread_mutex_unlock(&hr->lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void handle_close(struct handle *h)
{
	handle_free(h, 0);
}

void hreg_release_all(struct mfs *m)
{
	struct handle *h;

	pin_drop_all(m->pins);
	for (;;) {
		pthread_mutex_lock(&m->hr->lock);
		h = m->hr->list;
		pthread_mutex_unlock(&m->hr->lock);
		if (!h)
			return;
		/* never publish at exit what a writer may not have finished */
		handle_free(h, 1);
	}
}

int handle_is_writer(const struct handle *h)
{
	return h->writer;
}

int handle_is_direct(const struct handle *h)
{
	return h->direct;
}

/* h->p with a ref for the caller, or NULL. */
static struct pending *handle_pend(struct handle *h)
{
	struct pending *p;

	pthread_mutex_lock(&h->lock);
	p = h->p;
	if (p)
		pend_get(p);
	pthread_mutex_unlock(&h->lock);
	return p;
}

/* ---- copy-on-write ---- */

/* h's pending was published or abandoned and h writes again: switch it. */
static int handle_cow(struct handle *h, struct pending *old)
{
	struct pending *p;
	int rc, left;

	pthread_mutex_lock(&h->lock);
	if (h->p != old) {
		pthread_mutex_unlock(&h->lock);
		return 0;	/* another thread switched it already */
	}
	rc = rewrite_for_cow(h->m, old, (uint64_t)(uintptr_t)h, &p);
	if (rc < 0) {
		pthread_mutex_unlock(&h->lock);
		return rc;
	}
	left = pend_switch_writer(old, p, h->direct, &h->active);
	if (left < 0) {
		pthread_mutex_unlock(&h->lock);
		pend_put(p);
		return 0;	/* published under us already: the caller retries */
	}
	h->p = p;
	pthread_mutex_unlock(&h->lock);
	if (pend_has_name(p))
		pend_link_ino(h->m, h->ino, p);
	pend_put(p);
	pend_let_go(old, left);
	return 0;
}

/*
 * h's live pending locked for I/O (end with handle_unpend) and a ref taken,
 * marking h an active writer; copy-on-write when it is no longer pending.
 */
static int handle_pending(struct handle *h, struct pending **out)
{
	struct pending *p;
	int tries, rc;

	if (!h->writer)
		return -EBADF;
	for (tries = 0; tries < COW_TRIES; tries++) {
		if (stale(h)) {
			RATELOG_WARN("write to inode %" PRIu64 ": opened before marud's pool "
				     "generation changed: EIO", h->ino);
			return -EIO;
		}
		pthread_mutex_lock(&h->lock);
		p = h->p;
		pend_get(p);
		rc = pend_io_begin(p);
		if (rc == 0) {
			pend_set_active(p, &h->active, 1);
			pthread_mutex_unlock(&h->lock);
			*out = p;
			return 0;
		}
		pthread_mutex_unlock(&h->lock);
		if (rc == -EAGAIN)
			rc = handle_cow(h, p);
		pend_put(p);
		if (rc < 0)
			return rc;
	}
	RATELOG_WARN("write to inode %" PRIu64 ": each of %d copy-on-write versions was "
		     "published before the write reached it: EIO", h->ino, COW_TRIES);
	return -EIO;
}

static void handle_unpend(struct pending *p)
{
	pend_io_end(p);
	pend_put(p);
}

/* ---- open, create ---- */

/*
 * The kernel's inode is one version, always: if the name was replaced or
 * unlinked since the VFS looked it up, marud still opens that version while
 * anyone leases it (as a local filesystem opens the inode the lookup found).
 * Once it is gone, ESTALE: the VFS drops the dentry and walks the path again
 * with a fresh LOOKUP, which finds what the name holds now. Never serve
 * another version under this inode: its cached size and pages, and fstat,
 * belong to this one.
 */
static int lease_open(struct handle *h)
{
	struct mfs *m = h->m;
	char name[MARU_NAME_MAX + 1];
	uint64_t parent;
	int rc = maru_file_open_ino(m->c, h->ino, &h->lease);

	if (rc == -ESTALE) {
		CNT_INC(m, stale_opens);
		if (itab_name(m->tab, h->ino, &parent, name, sizeof(name)) == 0) {
			pin_want(m->pins, parent, name);	/* for the VFS's LOOKUP again */
			notify_inval_entry(m->nt, parent, name, 0);
		}
	}
	if (rc < 0)
		h->lease = NULL;
	return rc;
}

static int open_reader(struct mfs *m, uint64_t ino, struct handle **out, int *keep_cache)
{
	struct handle *h = handle_new(m, ino, 0);
	struct pending *p;
	int rc;

	if (!h)
		return -ENOMEM;
	*out = h;
	if (pin_take(m->pins, ino, &h->lease, &p) && p) {
		h->p = p;	/* the pin's reader attachment and ref are h's now */
		return 0;
	}
	p = h->lease ? NULL : pend_of_ino(m, ino, 0);
	if (p) {
		/* this mount is writing the file: read what it wrote */
		rc = pend_attach_reader(p, &h->active);
		if (rc == 0)
			h->p = p;
		pend_put(p);
		if (rc == 0)
			return 0;
	}
	if (!h->lease) {
		h->lease = lcache_take(m->lc, ino, h->epoch);
		if (h->lease)
			CNT_INC(m, lease_cache_hits);
	}
	rc = h->lease ? 0 : lease_open(h);
	if (rc < 0) {
		handle_free(h, 0);
		return rc;
	}
	*keep_cache = 1;	/* published bytes are immutable */
	return 0;
}

/*
 * A descriptor open for writing only never reads through the kernel's page
 * cache, so its writes need not go through it either: direct_io, one copy
 * less (the user's pages straight into the request) and no page cache to
 * fill and free. It cannot be mmap()ed (write-only), which direct_io would
 * refuse for MAP_SHARED.
 */
static int write_only(int flags)
{
	return (flags & O_ACCMODE) == O_WRONLY;
}

/* Attach writer h to p (ref the caller's) and truncate if asked. */
static int attach_writer(struct handle *h, struct pending *p, int trunc)
{
	int rc = pend_attach_writer(p, h->direct, &h->active);	/* -EAGAIN: published meanwhile */

	if (rc == 0)
		h->p = p;
	pend_put(p);
	if (rc == 0 && trunc)
		rc = pend_truncate(p, 0, 0);
	return rc;
}

static int open_writer(struct mfs *m, uint64_t ino, int flags, struct handle **out,
		       int *direct)
{
	struct handle *h = handle_new(m, ino, 1);
	struct pending *p;
	int rc = -EIO, tries;

	if (!h)
		return -ENOMEM;
	for (tries = 0; tries < OPEN_TRIES; tries++) {
		rc = rewrite_for_open(m, ino, !!(flags & O_TRUNC), &p, direct);
		if (rc < 0)
			break;
		h->direct = *direct = *direct || write_only(flags);
		rc = attach_writer(h, p, rc);
		if (rc == 0) {
			*out = h;
			return 0;
		}
		if (h->p) {
			/* attached but the truncate failed: let go, say why */
			handle_free(h, 0);
			if (io_errno(rc) == EIO)
				RATELOG_WARN("open(O_TRUNC) of inode %" PRIu64 ": truncate: "
					     "%s (EIO)", ino, maru_strerror(rc));
			return -io_errno(rc);
		}
	}
	handle_free(h, 0);
	if (rc == -EAGAIN)
		RATELOG_WARN("open for writing of inode %" PRIu64 ": each of %d pendings "
			     "it joined was published first: EIO", ino, OPEN_TRIES);
	else if (rc == -EIO)
		RATELOG_WARN("open for writing of inode %" PRIu64 ": EIO", ino);
	return rc == -ESTALE ? -ESTALE : -io_errno(rc == -EAGAIN ? -EIO : rc);
}

int handle_open(struct mfs *m, uint64_t ino, int flags, struct handle **out,
		int *keep_cache, int *direct)
{
	*keep_cache = 0;
	*direct = 0;
	if ((flags & O_ACCMODE) == O_RDONLY)
		return open_reader(m, ino, out, keep_cache);
	return open_writer(m, ino, flags, out, direct);
}

int handle_create(struct mfs *m, uint64_t parent, const char *name, mode_t mode,
		  uid_t uid, gid_t gid, int flags, struct handle **out, struct maru_attr *a)
{
	struct handle *h = handle_new(m, 0, 1);
	struct pending *p = NULL;
	int rc = -EIO, tries, trunc;

	if (!h)
		return -ENOMEM;
	h->direct = write_only(flags);
	for (tries = 0; tries < OPEN_TRIES; tries++) {
		rc = rewrite_for_create(m, parent, name, mode, uid, gid, flags, &p);
		if (rc < 0)
			break;
		trunc = rc;
		pend_get(p);	/* kept to link the inode below */
		rc = attach_writer(h, p, trunc);
		if (rc == 0)
			rc = pend_attr(p, a);
		if (rc == 0)
			break;
		pend_put(p);
		if (h->p) {
			handle_free(h, 0);	/* attached, then failed: say why */
			if (io_errno(rc) == EIO)
				RATELOG_WARN("create of %s: %s (EIO)", name, maru_strerror(rc));
			return -io_errno(rc);
		}
		if (rc != -EAGAIN && rc != -ENOENT)
			break;
	}
	if (rc < 0) {
		handle_free(h, 0);
		if (rc == -EAGAIN)
			RATELOG_WARN("create of %s: each of %d pendings it joined was "
				     "published first: EIO", name, OPEN_TRIES);
		else if (io_errno(rc) == EIO)
			RATELOG_WARN("create of %s: %s (EIO)", name, maru_strerror(rc));
		return -io_errno(rc == -EAGAIN ? -EIO : rc);
	}
	h->ino = a->ino;
	itab_remember(m->tab, a->ino, parent, name);
	pend_link_ino(m, a->ino, p);
	pend_put(p);
	*out = h;
	return 0;
}

/* ---- read, write ---- */

/* The lease of h, taken lazily if h has none; h->lock held. */
static int lease_get_locked(struct handle *h)
{
	uint64_t ino = h->ino;
	int rc = 0;

	if (!h->lease) {
		if (h->p && pend_ino(h->p))
			ino = pend_ino(h->p);
		rc = maru_file_open_ino(h->m->c, ino, &h->lease);
		if (rc < 0)
			h->lease = NULL;
	}
	return rc;
}

/* Read through the lease of h, taking one lazily if h has none. */
static ssize_t read_lease(struct handle *h, char *buf, size_t size, off_t off)
{
	int rc;

	pthread_mutex_lock(&h->lock);
	rc = lease_get_locked(h);
	pthread_mutex_unlock(&h->lock);
	if (rc < 0)
		return rc;
	return file_read_full(h->lease, buf, size, off);
}

ssize_t handle_read(struct handle *h, size_t size, off_t off, char **out)
{
	struct pending *p;
	ssize_t n = -ENOENT;
	int old = 0, rc;
	char *buf;

	if (stale(h))
		return -EIO;
	buf = tls_buf(size);
	if (!buf)
		return -ENOMEM;
	p = handle_pend(h);
	if (p) {
		n = pend_read(p, buf, size, off);
		old = pend_stale(p);
		pend_put(p);
	}
	if (n == -ENOENT && !h->lease && old)
		n = -EIO;
	else if (n == -ENOENT)
		n = read_lease(h, buf, size, off);
	/* tests: the bytes are read, the reader not answered yet */
	if (n >= 0) {
		rc = FAILPOINT("marufs.read.mid");
		if (rc < 0)
			n = rc;
	}
	*out = buf;
	return n;
}

/* ---- reads with the pool file as the source ---- */

/* The lease's extents for [off, off+size) of the pool file into src. */
static int lease_src(struct handle *h, int fd, uint64_t gen, size_t size, off_t off,
		     struct handle_src *src)
{
	struct maru_extent ext[SRC_EXTENTS];
	uint64_t fsize = maru_file_size(h->lease), len;
	ssize_t n;

	if ((uint64_t)off >= fsize)
		return -EAGAIN;	/* EOF: the copy path answers it */
	len = fsize - (uint64_t)off < size ? fsize - (uint64_t)off : size;
	n = maru_file_extents(h->lease, ext, SRC_EXTENTS);
	if (n < 0)
		return (int)n;
	if (n > SRC_EXTENTS)
		return -EAGAIN;
	if (poolsrc_bufs(&src->bv, HANDLE_SRC_BUFS, fd, ext, n, (uint64_t)off, len))
		return -EAGAIN;
	/* a restart since the extents were given would make them another's */
	if (!poolsrc_is(fd, &h->m->info, gen))
		return -EAGAIN;
	return 0;
}

/*
 * A read whose reply can name the pool file as its source: a published
 * version, through this handle's lease, over shm with coherent memory.
 * -EAGAIN: read by copy (handle_read); other errors are the read's.
 */
int handle_read_src(struct handle *h, size_t size, off_t off, struct handle_src *src)
{
	uint64_t gen = __atomic_load_n(&h->m->generation, __ATOMIC_ACQUIRE);
	struct pending *p;
	int fd, rc;

	if (stale(h))
		return -EIO;
	p = handle_pend(h);
	if (p) {
		pend_put(p);
		return -EAGAIN;
	}
	fd = poolsrc_fd(h->m, gen);
	if (fd < 0)
		return -EAGAIN;
	pthread_mutex_lock(&h->lock);
	rc = lease_get_locked(h);
	if (rc == 0)
		rc = lease_src(h, fd, gen, size, off, src);
	pthread_mutex_unlock(&h->lock);
	/* tests: the bytes are read, the reader not answered yet */
	if (rc == 0)
		rc = FAILPOINT("marufs.read.mid");
	return rc;
}

/*
 * A direct_io write went around the kernel's page cache: pages other
 * handles cached of what it replaced are dropped before it returns (the
 * kernel drops them before the write, so a read racing it may have cached
 * the old bytes again, and kernels before 6.6 do not drop them at all).
 */
static void direct_wrote(struct handle *h, struct pending *p)
{
	pend_direct_wrote(p);
	if (pend_cached_users(p) > 0)
		notify_inval_data(h->m->nt, h->ino);
}

ssize_t handle_write(struct handle *h, const char *buf, size_t size, off_t off)
{
	struct pending *p;
	ssize_t n;
	int rc;

	rc = handle_pending(h, &p);
	if (rc < 0)
		return rc;
	n = pend_write(p, buf, size, off);
	if (n > 0 && h->direct)
		direct_wrote(h, p);
	handle_unpend(p);
	return n;
}

/* ---- flush, fsync, fallocate, truncate, fstat ---- */

/*
 * Is the task closing this file dying of a signal? A writer killed mid-write
 * has its descriptors closed by the kernel (FLUSH, then RELEASE) exactly as
 * if it had called close(); only the task itself tells them apart: in
 * do_exit() it has PF_EXITING set and its exit code recorded before its
 * files are closed (proc(5) stat fields 9 and 52).
 */
static int killed_task(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long flags = 0, code = 0, v;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the command name may hold spaces */
	if (!p)
		return 0;
	/* field 3 (state, one letter) follows the name; then numbers */
	p += 4;
	for (field = 4; field <= 52 && *p; field++) {
		v = strtoull(p, &p, 10);
		if (field == 9)
			flags = v;
		else if (field == 52)
			code = v;
	}
	return (flags & TASK_PF_EXITING) && (code & 0x7f) != 0;
}

int handle_flush(struct handle *h, pid_t pid)
{
	struct pending *p;
	int active, rc = 0, killed;

	/* a writable zero-copy mapping is still writing: publish later */
	if (!h->writer || __atomic_load_n(&h->holds, __ATOMIC_ACQUIRE) > 0)
		return 0;
	killed = killed_task(pid);
	pthread_mutex_lock(&h->lock);
	p = h->p;
	pend_get(p);
	active = pend_set_active(p, &h->active, 0);
	pthread_mutex_unlock(&h->lock);
	/* A killed writer publishes nothing: release abandons its version
	 * unless a writer still alive flushes it later. */
	pend_set_killed(p, killed);
	if (active == 0 && !killed)
		rc = pend_finish(p, 1);
	pend_put(p);
	return rc;
}

int handle_fsync(struct handle *h)
{
	struct pending *p;
	int rc;

	if (!h->writer)
		return 0;
	p = handle_pend(h);
	rc = pend_sync(p);
	pend_put(p);
	return -io_errno(rc);
}

int handle_fallocate(struct handle *h, uint64_t end)
{
	struct pending *p;
	int rc;

	rc = handle_pending(h, &p);
	if (rc < 0)
		return -io_errno(rc);
	rc = pend_fallocate_held(p, end);
	handle_unpend(p);
	return -io_errno(rc);
}

int handle_truncate(struct handle *h, uint64_t size, struct maru_attr *a)
{
	struct pending *p;
	int rc;

	rc = handle_pending(h, &p);
	if (rc < 0)
		return rc == -ESTALE ? -EIO : rc;
	rc = pend_truncate_held(p, size, a);
	handle_unpend(p);
	return rc;
}

static int fstat_attr(struct handle *h, struct maru_attr *a)
{
	struct pending *p;
	int rc = -ENOENT;

	pthread_mutex_lock(&h->lock);
	p = h->p;
	if (p)
		pend_get(p);
	if (h->lease)
		rc = maru_file_attr(h->lease, a);
	pthread_mutex_unlock(&h->lock);
	if (p) {
		if (rc < 0)
			rc = pend_attr(p, a);
		pend_put(p);
	}
	return rc;
}

int handle_getattr(struct handle *h, uint64_t ino, struct maru_attr *a)
{
	int rc;

	/* fstat (or the kernel revalidating for a read) on a descriptor of an
	 * older pool generation */
	if (stale(h))
		return -EIO;
	rc = fstat_attr(h, a);
	/* the same, seen before the generation callback (another thread)
	 * bumped the epoch */
	if (rc == -ESTALE)
		return -EIO;
	if (rc == 0)
		return 0;
	rc = pend_ino_attr(h->m, ino, a);
	/* its version is gone: make the VFS look the name up again */
	if (rc == -ENOENT && ino != ROOT_INO)
		rc = -ESTALE;
	return rc;
}

/* ---- zero-copy ---- */

static int zc_pending(struct handle *h, struct zc_ref *z)
{
	struct pending *p = handle_pend(h);
	int rc;

	if (!p)
		return -ENOENT;
	rc = pend_zc_begin(p, h->writer, &z->file, &z->pending, &z->writable);
	if (rc == 0)
		z->p = p;
	else
		pend_put(p);
	return rc;
}

int handle_zc_get(struct handle *h, int want_write, struct zc_ref *z)
{
	struct pending *p;
	uint64_t ov;
	int rc;

	memset(z, 0, sizeof(*z));
	if (stale(h))
		return -EIO;
	if (want_write) {
		rc = handle_pending(h, &p);
		if (rc < 0)
			return rc;
		pend_mapped(p);
		__atomic_add_fetch(&h->holds, 1, __ATOMIC_ACQ_REL);
		z->p = p;
		z->file = pend_file_held(p);
		z->pending = z->writable = 1;
		return 0;
	}
	rc = zc_pending(h, z);
	if (rc != -ENOENT)
		return rc;
	rc = 0;
	pthread_mutex_lock(&h->lock);
	/* after an overflow (lost events, an unknown memory generation) marud
	 * vouches for the lease before it is mapped: by its open, or a recheck */
	ov = __atomic_load_n(&h->m->overflows, __ATOMIC_ACQUIRE);
	if (!h->lease) {
		rc = maru_file_open_ino(h->m->c, h->p && pend_ino(h->p) ? pend_ino(h->p) :
					h->ino, &h->lease);
		if (rc < 0)
			h->lease = NULL;
		else
			h->overflows = ov;
	}
	if (rc >= 0 && ov != h->overflows && (rc = maru_file_recheck(h->lease)) == 0)
		h->overflows = ov;
	z->file = h->lease;
	pthread_mutex_unlock(&h->lock);
	return rc < 0 ? rc : 0;
}

void handle_zc_put(struct zc_ref *z)
{
	if (z->p)
		handle_unpend(z->p);
	z->p = NULL;
}

int handle_zc_unhold(struct handle *h)
{
	int n = __atomic_load_n(&h->holds, __ATOMIC_ACQUIRE);

	while (n > 0)
		if (__atomic_compare_exchange_n(&h->holds, &n, n - 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 0;
	return -EINVAL;
}
