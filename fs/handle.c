/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/handle.c: the open regular files of a mount. Readers hold a lease on
 * the published version the kernel's inode is (or share this mount's
 * pending version of it, or take over a pin from pin.c); writers share the
 * name's one pending version through their seat on it (struct pend_slot,
 * pendslot.c: open, write, copy-on-write, flush, release). Also the
 * zero-copy holds: a writable mapping writes bytes marufs never sees, so no
 * flush publishes while holds remain.
 * The registry of live handles lets the ones whose RELEASE never came be
 * freed at exit (at unmount the kernel may drop queued background RELEASEs).
 * A read of a published version over shm can name the pool file itself as
 * the source of the reply (handle_read_src): the kernel then splices the
 * pool's pages into it, with no copy through marufs (libmaru names them:
 * maru_file_splice_src()).
 * A descriptor open for writing only is direct_io (pendslot.c says why).
 *
 * Locks: h->lock guards h->lease, and is taken before the seat's lock and
 * any lock of the pending. hr->lock guards the registry list only, a leaf.
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
#include "log.h"
#include "notify.h"
#include "pending.h"
#include "pin.h"

#define ROOT_INO		1
#define TLS_BUF_MIN		65536
#define TASK_PF_EXITING		0x00000004	/* include/linux/sched.h */

struct handle {
	struct mfs *m;
	uint64_t ino;		/* the kernel's inode */
	uint64_t epoch;
	int writer;
	int direct;		/* direct_io: its writes bypass the kernel's page cache */
	struct pend_slot ps;	/* its pending version, if any */
	pthread_mutex_t lock;	/* lease */
	struct maru_file *lease;
	int holds;		/* writable zero-copy mappings (ioctl.c) */
	uint64_t overflows;	/* m->overflows when marud last vouched for it */
	/* the tasks that opened and last wrote through it, and their processes
	 * (handle_task): a FLUSH from another process closes a copy (fork) */
	pid_t opener_tid, opener_tgid, writer_tid, writer_tgid;
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
	return h->epoch != mfs_id_epoch(h->m, h->ino);
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
	h->epoch = mfs_id_epoch(m, ino);
	h->overflows = __atomic_load_n(&m->overflows, __ATOMIC_ACQUIRE);
	pthread_mutex_init(&h->lock, NULL);
	pend_slot_init(&h->ps, m, ino, writer);
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
	int had;

	/* a zero-copy writer that never released its mapping died with it */
	if (__atomic_load_n(&h->holds, __ATOMIC_ACQUIRE) > 0)
		failed = 1;
	had = pend_slot_release(&h->ps, failed);
	/* a reader's own lease of the kernel's inode: kept for its next open */
	if (h->lease && !had && !h->writer && !failed && !stale(h) && h->m->lc)
		maru_lease_cache_put(h->lease);
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
	if (pin_take(m->pins, ino, &h->lease, &p) && p)
		return pend_slot_reader(&h->ps, p);
	if (!h->lease && pend_slot_reader(&h->ps, NULL) == 0)
		return 0;
	/* take leaves h->lease NULL when nothing is kept */
	if (!h->lease && m->lc && maru_lease_cache_take(m->lc, ino, &h->lease) == 0)
		CNT_INC(m, lease_cache_hits);
	rc = h->lease ? 0 : lease_open(h);
	if (rc < 0) {
		handle_free(h, 0);
		return rc;
	}
	*keep_cache = 1;	/* published bytes are immutable */
	return 0;
}

static int open_writer(struct mfs *m, uint64_t ino, int flags, struct handle **out,
		       int *direct)
{
	struct handle *h = handle_new(m, ino, 1);
	int rc;

	if (!h)
		return -ENOMEM;
	rc = pend_slot_open(&h->ps, flags, direct);
	if (rc < 0) {
		handle_free(h, 0);
		return rc;
	}
	h->direct = *direct;
	*out = h;
	return 0;
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
	int rc;

	if (!h)
		return -ENOMEM;
	rc = pend_slot_create(&h->ps, parent, name, mode, uid, gid, flags, a, &h->direct);
	if (rc < 0) {
		handle_free(h, 0);
		return rc;
	}
	h->ino = a->ino;
	h->epoch = mfs_id_epoch(m, h->ino);
	*out = h;
	return 0;
}

/* ---- read, write ---- */

/* The lease of h, taken lazily if h has none; h->lock held. */
static int lease_get_locked(struct handle *h)
{
	uint64_t ino = h->ino, v;
	int rc = 0;

	if (!h->lease) {
		v = pend_slot_version(&h->ps);
		if (v)
			ino = v;
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
	ssize_t n;
	int old, rc;
	char *buf;

	if (stale(h))
		return -EIO;
	buf = tls_buf(size);
	if (!buf)
		return -ENOMEM;
	n = pend_slot_read(&h->ps, buf, size, off, &old);
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

/*
 * The lease's bytes [off, off+size) as pieces of the descriptor libmaru
 * names for them (maru_file_splice_src); h->lock held. -EAGAIN: read by
 * copy, which also says what is wrong when something is.
 */
static int lease_src(struct handle *h, size_t size, off_t off, struct handle_src *src)
{
	uint64_t fsize = maru_file_size(h->lease), pos = (uint64_t)off, end, fd_off;
	struct fuse_bufvec *bv = &src->bv;
	size_t len;
	int fd;

	if (pos >= fsize)
		return -EAGAIN;	/* EOF: the copy path answers it */
	end = fsize - pos < size ? fsize : pos + size;
	*bv = (struct fuse_bufvec){ .count = 0 };
	while (pos < end) {
		if (bv->count == HANDLE_SRC_BUFS ||
		    maru_file_splice_src(h->lease, pos, &fd, &fd_off, &len) < 0 || !len)
			return -EAGAIN;
		if (len > end - pos)
			len = (size_t)(end - pos);
		bv->buf[bv->count++] = (struct fuse_buf){
			.size = len, .flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK,
			.fd = fd, .pos = (off_t)fd_off };
		pos += len;
	}
	return 0;
}

/*
 * A read whose reply can name the pool file as its source: a published
 * version, through this handle's lease, over shm with coherent memory.
 * -EAGAIN: read by copy (handle_read); other errors are the read's.
 */
int handle_read_src(struct handle *h, size_t size, off_t off, struct handle_src *src)
{
	int rc;

	if (stale(h))
		return -EIO;
	if (pend_slot_version(&h->ps))
		return -EAGAIN;	/* a pending version: read by copy */
	pthread_mutex_lock(&h->lock);
	rc = lease_get_locked(h);
	if (rc == 0)
		rc = lease_src(h, size, off, src);
	pthread_mutex_unlock(&h->lock);
	/* tests: the bytes are read, the reader not answered yet */
	if (rc == 0)
		rc = FAILPOINT("marufs.read.mid");
	return rc;
}

ssize_t handle_write(struct handle *h, const char *buf, size_t size, off_t off)
{
	return pend_slot_write(&h->ps, buf, size, off);
}

/* ---- flush, fsync, fallocate, truncate, fstat ---- */

/* The start of /proc/PID/WHAT in buf (NUL-ended); -1 when it cannot be read. */
static int proc_read(pid_t pid, const char *what, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/*
 * Is the task closing this file dying of a signal? A writer killed mid-write
 * has its descriptors closed by the kernel (FLUSH, then RELEASE) exactly as
 * if it had called close(); only the task itself tells them apart: in
 * do_exit() it has PF_EXITING set and its exit code recorded before its
 * files are closed (proc(5) stat fields 9 and 52).
 */
static int killed_task(pid_t pid)
{
	unsigned long long flags = 0, code = 0, v;
	char buf[1024], *p;
	int field;

	if (proc_read(pid, "stat", buf, sizeof(buf)))
		return 0;
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

/* The process (thread group) of task pid, 0 when it is gone. */
static pid_t tgid_of(pid_t pid)
{
	char buf[512], *p;

	if (proc_read(pid, "status", buf, sizeof(buf)))
		return 0;
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : 0;
}

void handle_task(struct handle *h, pid_t pid, int wrote)
{
	pid_t *tid = wrote ? &h->writer_tid : &h->opener_tid;
	pid_t *tg = wrote ? &h->writer_tgid : &h->opener_tgid;

	if (!h->writer || pid <= 0 || __atomic_load_n(tid, __ATOMIC_RELAXED) == pid)
		return;
	__atomic_store_n(tg, tgid_of(pid), __ATOMIC_RELAXED);
	__atomic_store_n(tid, pid, __ATOMIC_RELEASE);
}

/*
 * A FLUSH from a process that neither opened nor wrote through h: the
 * close of a copy of the descriptor another process holds (a child after
 * fork, or its exit). Not the close that ends the writing: it publishes
 * nothing and asks marud nothing; the writer's own close (or the RELEASE
 * of the last copy) does.
 */
static int closes_a_copy(struct handle *h, pid_t pid)
{
	pid_t otid = __atomic_load_n(&h->opener_tid, __ATOMIC_ACQUIRE);
	pid_t wtid = __atomic_load_n(&h->writer_tid, __ATOMIC_ACQUIRE);
	pid_t tg;

	if (pid <= 0 || (!otid && !wtid) || pid == otid || pid == wtid)
		return 0;
	tg = tgid_of(pid);
	return tg && tg != __atomic_load_n(&h->opener_tgid, __ATOMIC_RELAXED) &&
	       tg != __atomic_load_n(&h->writer_tgid, __ATOMIC_RELAXED);
}

int handle_flush(struct handle *h, pid_t pid)
{
	/* a writable zero-copy mapping is still writing: publish later */
	if (!h->writer || __atomic_load_n(&h->holds, __ATOMIC_ACQUIRE) > 0)
		return 0;
	if (closes_a_copy(h, pid)) {
		log_debug("flush of inode %" PRIu64 " from task %d, which neither opened "
			  "nor wrote through the descriptor: a copy closes, nothing to do",
			  h->ino, (int)pid);
		return 0;
	}
	return pend_slot_flush(&h->ps, killed_task(pid));
}

int handle_fsync(struct handle *h)
{
	return pend_slot_sync(&h->ps);
}

int handle_fallocate(struct handle *h, uint64_t end)
{
	return pend_slot_fallocate(&h->ps, end);
}

int handle_truncate(struct handle *h, uint64_t size, struct maru_attr *a)
{
	return pend_slot_truncate(&h->ps, size, a);
}

static int fstat_attr(struct handle *h, struct maru_attr *a)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&h->lock);
	if (h->lease)
		rc = maru_file_attr(h->lease, a);
	pthread_mutex_unlock(&h->lock);
	if (rc < 0)
		rc = pend_slot_attr(&h->ps, a);
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

int handle_zc_get(struct handle *h, int want_write, struct zc_ref *z)
{
	uint64_t ov, v;
	int rc;

	memset(z, 0, sizeof(*z));
	if (stale(h))
		return -EIO;
	rc = pend_slot_zc_begin(&h->ps, want_write, &z->file, &z->pending, &z->writable,
				&z->p);
	if (rc == 0 && want_write)
		__atomic_add_fetch(&h->holds, 1, __ATOMIC_ACQ_REL);
	if (rc != -ENOENT || want_write)
		return rc;
	rc = 0;
	v = pend_slot_version(&h->ps);
	pthread_mutex_lock(&h->lock);
	/* after an overflow (lost events, an unknown memory generation) marud
	 * vouches for the lease before it is mapped: by its open, or a recheck */
	ov = __atomic_load_n(&h->m->overflows, __ATOMIC_ACQUIRE);
	if (!h->lease) {
		rc = maru_file_open_ino(h->m->c, v ? v : h->ino, &h->lease);
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
		pend_zc_end(z->p);
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
