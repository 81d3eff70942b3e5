/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ops.c: the FUSE low-level request handlers of marufs, mapping POSIX
 * calls onto libmaru (DESIGN §4.1). Every regular-file open gets a struct
 * handle: readers hold a lease on the published version (or share this
 * mount's pending version of the name); writers share one struct pending per
 * name. A pending is published when its last active writer flushes after
 * data was written (so close() returns after the name has moved) or, failing
 * that, on the last writer's release; a write failure marks it failed so
 * nothing partial is ever published. A
 * write on a handle whose pending was already published starts a new one
 * (copy-on-write of the published bytes).
 *
 * Handlers never call fuse_lowlevel_notify_*: they queue work for the
 * notifier thread (notify.c). Locks: handle->lock guards handle->p and
 * handle->lease and is taken before pending->rw and tab_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "failpoint.h"
#include "log.h"
#include "marufs.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define PUBLISH_INVAL_WAIT_MS	1000
#define DIR_OFF_FIRST		3	/* ".", "..", ".maru" come first */

struct handle {
	uint64_t ino;		/* the kernel's inode */
	uint64_t epoch;
	int writer;
	int active;		/* writer not flushed since it last wrote */
	pthread_mutex_t lock;	/* p, lease, active */
	struct pending *p;	/* ref held */
	struct maru_file *lease;
	int holds;		/* writable zero-copy mappings (ioctl.c) */
	struct handle *hprev, *hnext;	/* handles_lock: every live handle */
};

/*
 * Every live handle, so that those whose RELEASE never came can be freed at
 * exit: at unmount the kernel may drop queued background RELEASEs.
 */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle *handles;

#define OP(name) CNT_INC(ops[OP_##name])


static inline struct handle *fh_handle(const struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

int io_errno(int rc)
{
	if (rc == -ESTALE)
		return EIO;	/* the handle predates a marud restart */
	return rc < 0 ? -rc : rc;
}

static int is_virt_name(uint64_t parent, const char *name)
{
	return parent == FUSE_ROOT_ID && strcmp(name, VIRT_DIR_NAME) == 0;
}

void attr_to_stat(const struct maru_attr *a, struct stat *st)
{
	uint64_t bytes = a->reserved > a->size ? a->reserved : a->size;

	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink ? a->nlink : (S_ISDIR(a->mode) ? 2 : 1);
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blksize = 1 << 20;	/* invite large I/O */
	st->st_blocks = (blkcnt_t)((bytes + 511) / 512);
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

static int pending_attr(struct pending *p, struct maru_attr *a)
{
	int rc = -ENOENT;

	pthread_rwlock_rdlock(&p->rw);
	if (p->file && p->epoch == mfs_epoch() &&
	    (p->state == PEND_PENDING || p->state == PEND_PUBLISHED ||
	     p->state == PEND_FAILED))
		rc = maru_file_attr(p->file, a);
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

int node_getattr(uint64_t ino, struct maru_attr *a)
{
	struct pending *p = itab_pending(ino);

	if (p) {
		int rc = pending_attr(p, a);

		pend_put(p);
		if (rc == 0)
			return 0;
	}
	return maru_getattr(mfs->c, ino, a);
}

/*
 * Attributes for a path-based stat of ino (no descriptor holds it: those
 * keep their version). When that version is gone (the name was rewritten
 * or removed after the kernel looked it up), answer for what the name holds
 * now, or ENOENT when it holds nothing, and drop the stale entry; ESTALE
 * (the VFS looks the name up again) only when the name became a directory
 * or is unknown here. Under heavy rewriting the VFS's single ESTALE retry
 * can lose the race again, so it is avoided where the answer is known.
 */
static int path_getattr(uint64_t ino, struct maru_attr *a)
{
	char name[MARU_NAME_MAX + 1];
	uint64_t parent;
	int rc;

	rc = node_getattr(ino, a);
	if (rc != -ENOENT && rc != -ESTALE)
		return rc;
	if (ino == FUSE_ROOT_ID || itab_name(ino, &parent, name, sizeof(name)) < 0)
		return -ESTALE;
	rc = maru_lookup(mfs->c, parent, name, a);
	notify_inval_entry(parent, name, 0);
	if (rc == -ENOENT)
		return -ENOENT;	/* gone now: what a stat issued now would say */
	if (rc < 0 || S_ISDIR(a->mode))
		return -ESTALE;
	return 0;
}

static double attr_timeout_of(const struct maru_attr *a)
{
	/* A pending file grows under us; published versions never change. */
	return a->state == MARU_STATE_PENDING ? 0 : mfs->o.attr_timeout;
}

static void fill_entry(struct fuse_entry_param *e, const struct maru_attr *a)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = __atomic_load_n(&mfs->generation, __ATOMIC_RELAXED);
	attr_to_stat(a, &e->attr);
	e->entry_timeout = mfs->o.entry_timeout;
	e->attr_timeout = attr_timeout_of(a);
}

/* Hand a positive entry to the kernel and account for it. */
static void reply_entry_known(fuse_req_t req, uint64_t parent, const char *name,
			      struct fuse_entry_param *e, struct pending *p)
{
	itab_remember(e->ino, parent, name);
	if (p)
		itab_link_pending(e->ino, p);
	dcache_note(parent, name, e->entry_timeout);
	if (fuse_reply_entry(req, e) != 0)
		itab_forget(e->ino, 1);
}

/* ---- per-thread read buffer ---- */

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
	struct tbuf *b;

	pthread_once(&buf_once, buf_key_init);
	b = pthread_getspecific(buf_key);
	if (b && b->cap >= size)
		return b->data;
	free(b);
	b = malloc(sizeof(*b) + (size < 65536 ? 65536 : size));
	pthread_setspecific(buf_key, b);
	if (!b)
		return NULL;
	b->cap = size < 65536 ? 65536 : size;
	return b->data;
}

/* ---- lookup, forget, getattr ---- */

static void reply_negative(fuse_req_t req, uint64_t parent, const char *name,
			   int raced)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.entry_timeout = raced ? 0 : mfs->o.negative_timeout;
	dcache_note(parent, name, e.entry_timeout);
	CNT_INC(lookup_neg);
	fuse_reply_entry(req, &e);
}

/*
 * Attach a reader to p whatever became of it (published, failed, abandoned)
 * while its file is still open: its bytes stay readable through the reader.
 * Takes a ref on p. The rw lock orders this against pend_close_file().
 */
static int reader_attach(struct pending *p, int *active)
{
	int rc = -EAGAIN;

	pthread_rwlock_rdlock(&p->rw);
	if (p->file && p->epoch == mfs_epoch()) {
		pend_attach(p, 0, active);
		rc = 0;
	}
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

/* A reader attached to this mount's pending p keeps its bytes open. */
static int pin_pending(struct pending *p)
{
	int active = 0;

	if (reader_attach(p, &active) < 0)
		return -ESTALE;
	pin_put(p->ino, NULL, p);
	return 0;
}

/*
 * The VFS's LOOKUP after a stale open of this name (pin.c): hold the
 * version found (a lease, or a reader on this mount's own pending file) so
 * that the OPEN that follows gets it. When it is gone before it could be
 * held, look again.
 */
static int lookup_pinned(uint64_t parent, const char *name, struct maru_attr *a)
{
	struct maru_file *f;
	struct pending *p;
	int tries, rc = 0;

	for (tries = 0; tries < 4 && !S_ISDIR(a->mode); tries++) {
		if (a->state == MARU_STATE_PENDING) {
			p = pend_find(parent, name);
			rc = p && p->ino == a->ino ? pin_pending(p) : -ESTALE;
			if (p)
				pend_put(p);
		} else {
			rc = maru_file_open_ino(mfs->c, a->ino, &f);
			if (rc == 0)
				pin_put(a->ino, f, NULL);
		}
		if (rc != -ESTALE)
			return 0;	/* held, or the plain answer stands */
		/* replaced, published or dropped already: look once more */
		rc = maru_lookup(mfs->c, parent, name, a);
		if (rc < 0)
			return rc;
	}
	return rc;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	struct pending *p = NULL;
	struct maru_attr a;
	uint64_t seq;
	int rc, want;

	OP(LOOKUP);
	if (is_virt_name(parent, name) || ino_is_virt(parent)) {
		rc = virt_lookup(parent, name, &e);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_entry(req, &e);
		return;
	}
	seq = dir_change_seq(parent);
	rc = maru_lookup(mfs->c, parent, name, &a);
	want = rc == 0 && pin_wanted(parent, name);
	if (want)
		rc = lookup_pinned(parent, name, &a);
	if (rc == -ENOENT) {
		reply_negative(req, parent, name, dir_change_seq(parent) != seq);
		return;
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (a.state == MARU_STATE_PENDING) {
		p = pend_find(parent, name);
		if (p)
			pending_attr(p, &a);	/* marud does not know a shm writer's size */
	}
	fill_entry(&e, &a);
	if (dir_change_seq(parent) != seq) {
		/* an event for this directory raced the lookup: do not cache it */
		e.entry_timeout = 0;
		e.attr_timeout = 0;
	}
	CNT_INC(lookup_pos);
	reply_entry_known(req, parent, name, &e, p);
	if (p)
		pend_put(p);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct maru_file *f;
	struct pending *p;

	OP(FORGET);
	if (pin_take(ino, &f, &p)) {
		if (f)
			maru_file_close(f);
		if (p)
			pend_unpin(p);
	}
	itab_forget(ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	size_t i;

	OP(FORGET);
	for (i = 0; i < count; i++)
		itab_forget(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void reply_attr(fuse_req_t req, const struct maru_attr *a, uint64_t ino)
{
	struct stat st;

	attr_to_stat(a, &st);
	st.st_ino = ino;
	fuse_reply_attr(req, &st, attr_timeout_of(a));
}

/* fstat: what this descriptor reads, even if its name is gone. */
static int handle_attr(struct handle *h, struct maru_attr *a)
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
			rc = pending_attr(p, a);
		pend_put(p);
	}
	return rc;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h = fi ? fh_handle(fi) : NULL;
	struct maru_attr a;
	struct stat st;
	int rc;

	OP(GETATTR);
	if (ino_is_virt(ino)) {
		rc = virt_getattr(ino, &st);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_attr(req, &st, 3600);
		return;
	}
	if (h && h->epoch != mfs_epoch()) {
		/* fstat (or the kernel revalidating for a read) on a descriptor
		 * of an older pool generation */
		fuse_reply_err(req, EIO);
		return;
	}
	rc = h ? handle_attr(h, &a) : -ENOENT;
	if (rc == -ESTALE) {
		/* the same, seen before the generation callback (another
		 * thread) bumped the epoch */
		fuse_reply_err(req, EIO);
		return;
	}
	if (rc < 0 && h) {
		rc = node_getattr(ino, &a);
		/* its version is gone: make the VFS look the name up again */
		if (rc == -ENOENT && ino != FUSE_ROOT_ID)
			rc = -ESTALE;
	} else if (rc < 0) {
		rc = path_getattr(ino, &a);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_attr(req, &a, ino);
}

/* ---- pending life cycle ---- */

/*
 * Never publish p. Handles still attached keep reading what was written,
 * as the open descriptors of an unlinked local file do: the file stays open
 * until the last of them goes (pend_close_file), which abandons it.
 */
static void pend_abandon_locked(struct pending *p)
{
	if (p->file && pend_users(p) == 0) {
		maru_file_close(p->file);
		p->file = NULL;
	}
	__atomic_store_n(&p->state, PEND_DEAD, __ATOMIC_RELEASE);
	CNT_INC(abandons);
}

static void pend_fail(struct pending *p, int err)
{
	int expect = PEND_PENDING;

	if (__atomic_compare_exchange_n(&p->state, &expect, PEND_FAILED, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		p->err = err;
}

/*
 * Last active writer is done: publish, or abandon what must not become
 * visible (a failed write, an unlinked name, an untouched rewrite copy).
 * Returns what close() should report.
 */
static int pend_finish(struct pending *p, int at_flush)
{
	char name[MARU_NAME_MAX + 1];
	struct ev_expect *w = NULL;
	uint64_t parent;
	int rc = 0, published = 0, st, named, writers, active;

	named = pend_where(p, &parent, name, sizeof(name)) == 0;
	pthread_rwlock_wrlock(&p->rw);
	st = p->state;
	/* A writer attached (attach_live) after the caller counted: it
	 * finishes the version when it is done, not us. */
	pend_counts(p, &writers, &active);
	if (at_flush ? active > 0 : writers > 0) {
		pthread_rwlock_unlock(&p->rw);
		return 0;
	}
	/* A flush before any data arrived is most likely the shell closing
	 * the fd it dup2()ed to stdout: publishing now would show an empty
	 * file first. Release publishes a file nothing was written to. An
	 * unlinked file is dropped at release too: a dup'd descriptor may
	 * still write and read it. */
	if ((st != PEND_PENDING && st != PEND_FAILED) ||
	    (at_flush && st == PEND_PENDING && (!p->wrote || p->unlinked) &&
	     p->epoch == mfs_epoch())) {
		pthread_rwlock_unlock(&p->rw);
		return 0;
	}
	if (p->epoch != mfs_epoch()) {
		rc = -EIO;
		pend_abandon_locked(p);
	} else if (st == PEND_FAILED) {
		rc = p->err;
		pend_abandon_locked(p);
	} else if (p->unlinked || p->killed || (p->src_ino && !p->modified)) {
		pend_abandon_locked(p);
	} else {
		if (named)
			w = notify_expect(parent, name);
		/* tests: stop or fail marufs with the last writer's close in hand */
		rc = FAILPOINT("marufs.flush.before_publish");
		if (rc == 0)
			rc = maru_file_publish(p->file);
		if (rc == 0) {
			__atomic_store_n(&p->state, PEND_PUBLISHED, __ATOMIC_RELEASE);
			CNT_INC(publishes);
			published = 1;
		} else {
			CNT_INC(publish_failures);
			log_debug("publish of version %" PRIu64 ": %s", p->ino,
				  maru_strerror(rc));
			pend_abandon_locked(p);
			/* Name or directory removed while pending: like a local
			 * unlinked file, close() succeeds and nothing appears. */
			if (rc == -ENOENT)
				rc = 0;
		}
	}
	pthread_rwlock_unlock(&p->rw);
	pend_unregister(p);
	if (!published) {
		notify_expect_cancel(w);
		return rc == -ESTALE ? -EIO : rc;
	}
	/* Close-to-open: return once the publish event was applied here (and
	 * so, very nearly, on every mount). Without the event stream, at least
	 * this mount must drop the old inode a rewrite replaced. */
	if (!notify_expect_wait(w, PUBLISH_INVAL_WAIT_MS, 1) && p->src_ino && named)
		notify_inval_entry(parent, name, PUBLISH_INVAL_WAIT_MS);
	return 0;
}

/* No handle uses p any more: drop its lease (or abandon it, if pending). */
static void pend_close_file(struct pending *p)
{
	pthread_rwlock_wrlock(&p->rw);
	if (pend_users(p) > 0) {
		/* a handle attached after the caller counted */
		pthread_rwlock_unlock(&p->rw);
		return;
	}
	if (p->file) {
		if (p->state == PEND_PENDING || p->state == PEND_FAILED)
			CNT_INC(abandons);
		maru_file_close(p->file);
		p->file = NULL;
	}
	__atomic_store_n(&p->state, PEND_DEAD, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&p->rw);
	pend_unregister(p);
}

static void pend_touched(struct pending *p, int wrote)
{
	__atomic_store_n(&p->modified, 1, __ATOMIC_RELEASE);
	if (wrote)
		__atomic_store_n(&p->wrote, 1, __ATOMIC_RELEASE);
}

static int pend_truncate(struct pending *p, uint64_t size, int wrote)
{
	int rc = -ESTALE;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p)) {
		rc = maru_file_truncate(p->file, size);
		if (rc == 0)
			pend_touched(p, wrote);
	}
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

/*
 * Register a fresh pending, or fall back to the one another thread of this
 * mount registered for the name first (then ours is abandoned).
 */
static struct pending *pend_adopt(struct maru_file *f, uint64_t parent,
				  const char *name, uint64_t src_ino, int modified)
{
	struct pending *p = pend_new(f, parent, name, src_ino), *cur;

	if (!p) {
		maru_file_close(f);
		return NULL;
	}
	p->modified = modified;
	if (pend_insert(p, &cur) == 1) {
		pend_put(p);
		p = cur;
	}
	return p;
}

/*
 * The kernel's inode is a version the name no longer has (replaced after the
 * VFS looked it up, possibly twice in a row under heavy rewriting). Rather
 * than fail the open with ESTALE, serve the name's current version under
 * that inode: such handles are direct_io, since the kernel's cached size and
 * pages belong to the old version; and the stale entry is dropped for the
 * next open.
 */
static int rewrite_by_name(uint64_t parent, const char *name, int trunc,
			   struct maru_file **f)
{
	struct maru_attr a;
	int rc;

	rc = maru_lookup(mfs->c, parent, name, &a);
	if (rc < 0 || S_ISDIR(a.mode))
		return -ESTALE;
	rc = maru_file_create(mfs->c, parent, name, a.mode, a.uid, a.gid,
			      trunc ? 0 : MARU_CREATE_COPY, 0, f);
	if (rc == 0)
		notify_inval_entry(parent, name, 0);
	return rc;
}

/*
 * The pending a writer of inode ino must use (ref taken). Returns 1 when the
 * caller must truncate it (O_TRUNC on a pending that has bytes), which it
 * does once attached: an attached writer keeps it from being published, so
 * the truncate cannot meet a published version.
 */
static int writer_pending(uint64_t ino, int trunc, struct pending **out, int *moved)
{
	char name[MARU_NAME_MAX + 1];
	struct pending *p = itab_pending(ino);
	struct maru_file *f;
	uint64_t parent = 0, fino;
	int rc, named;

	if (p && !pend_live(p)) {
		pend_put(p);
		p = NULL;
	}
	named = itab_name(ino, &parent, name, sizeof(name)) == 0;
	if (!p && named)
		p = pend_find(parent, name);
	if (!p) {
		rc = maru_file_rewrite(mfs->c, ino, trunc ? 0 : MARU_CREATE_COPY, 0, &f);
		if (rc == -ESTALE && named) {
			rc = rewrite_by_name(parent, name, trunc, &f);
			*moved = rc == 0;
		}
		if (rc < 0)
			return rc;
		fino = maru_file_ino(f);
		p = pend_adopt(f, parent, named ? name : NULL, ino, trunc);
		if (!p)
			return -ENOMEM;
		if (p->ino == fino)
			trunc = 0;	/* ours, created empty already */
	}
	itab_link_pending(ino, p);
	*out = p;
	return trunc;	/* the caller truncates once attached */
}

/*
 * Attach h to p if p is still pending. The rw lock orders this against
 * pend_close_file(), which closes a file only when no handle is attached.
 */
static int attach_live(struct pending *p, struct handle *h)
{
	int rc = -EAGAIN;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p)) {
		pend_attach(p, h->writer, &h->active);
		h->p = p;
		rc = 0;
	}
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

/* Reader h on this mount's pending p, while p's file is open. */
static int attach_reader(struct pending *p, struct handle *h)
{
	int rc = reader_attach(p, &h->active);

	if (rc == 0)
		h->p = p;
	return rc;
}

/* A pin on a pending (pin.c) ends unused: detach its reader. */
void pend_unpin(struct pending *p)
{
	int active = 0, wl;

	if (pend_detach(p, 0, &active, &wl) == 0)
		pend_close_file(p);
	pend_put(p);
}

/* Copy every byte of src into the pending dst. */
static int copy_bytes(struct maru_file *src, struct maru_file *dst)
{
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	uint64_t off = 0;
	ssize_t n, w;

	if (!buf)
		return -ENOMEM;
	while ((n = maru_file_pread(src, buf, chunk, off)) > 0) {
		w = maru_file_pwrite(dst, buf, (size_t)n, off);
		if (w < 0) {
			n = w;
			break;
		}
		off += (uint64_t)n;
	}
	free(buf);
	return n < 0 ? (int)n : 0;
}

/*
 * h writes again but its version is no longer the one bound to the name
 * (replaced, renamed over or unlinked meanwhile). POSIX writes then go to a
 * file nobody can open by name any more: give h a private copy of what it
 * sees, a pending version created under a hidden name and unlinked at once,
 * so its writes succeed, read back through h, and are never published.
 */
static int detached_copy(struct pending *old, struct handle *h, uint64_t parent,
			 struct pending **out)
{
	char tmp[96];
	struct maru_file *src = NULL, *f;
	struct maru_attr a;
	int rc;

	pthread_rwlock_rdlock(&old->rw);
	/* no file: marud refused its publish (name removed meanwhile) and
	 * dropped the bytes; nothing left to copy */
	rc = old->file ? maru_file_attr(old->file, &a) : -EIO;
	if (rc == 0) {
		snprintf(tmp, sizeof(tmp), ".maru-cow.%" PRIx64 ".%" PRIx64 ".tmp",
			 old->ino, (uint64_t)(uintptr_t)h);
		rc = maru_file_create(mfs->c, parent, tmp, a.mode, a.uid, a.gid,
				      MARU_CREATE_EXCL, a.size, &f);
	}
	if (rc == 0) {
		maru_unlink(mfs->c, parent, tmp);	/* detached: never published */
		src = old->file;
		rc = copy_bytes(src, f);
		if (rc < 0)
			maru_file_close(f);
	}
	pthread_rwlock_unlock(&old->rw);
	if (rc < 0)
		return rc;
	*out = pend_new(f, parent, NULL, old->ino);
	if (!*out) {
		maru_file_close(f);
		return -ENOMEM;
	}
	(*out)->unlinked = 1;
	(*out)->modified = 1;
	return 0;
}

/*
 * Copy-on-write: h's pending was published or abandoned and h writes again.
 * Switch h to the name's live pending, or a new rewrite of what is published.
 */
static int handle_cow(struct handle *h, struct pending *old)
{
	char name[MARU_NAME_MAX + 1];
	struct pending *p = NULL;
	struct maru_file *f;
	uint64_t parent = 0;
	int rc = 0, named, left, wl;

	pthread_mutex_lock(&h->lock);
	if (h->p != old)
		goto out;	/* another thread switched it already */
	named = pend_where(old, &parent, name, sizeof(name)) == 0;
	if (named)
		p = pend_find(parent, name);
	if (!p) {
		rc = maru_file_rewrite(mfs->c, old->ino, MARU_CREATE_COPY, 0, &f);
		if (rc == 0)
			p = pend_adopt(f, parent, named ? name : NULL, old->ino, 0);
		else if (rc == -ESTALE || rc == -ENOENT)
			rc = detached_copy(old, h, named ? parent : FUSE_ROOT_ID, &p);
		if (rc == 0 && !p)
			rc = -ENOMEM;
		if (rc < 0)
			goto out;
		CNT_INC(cow_rewrites);
	}
	left = pend_detach(old, 1, &h->active, &wl);
	if (attach_live(p, h) < 0) {
		/* published under us already: h stays on old, the caller retries */
		pend_attach(old, 1, &h->active);
		pend_put(old);	/* attach took a second ref for h */
		pend_put(p);
		goto out;
	}
	pthread_mutex_unlock(&h->lock);
	if (p->name)
		itab_link_pending(h->ino, p);
	pend_put(p);
	if (left == 0)
		pend_close_file(old);
	pend_put(old);	/* h's reference */
	return 0;
out:
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/*
 * h's live pending with its rw lock read-held and a ref taken, marking h an
 * active writer; copy-on-write when h's pending is no longer pending.
 */
static int handle_pending(struct handle *h, struct pending **out)
{
	struct pending *p;
	int tries, st, err;

	if (!h->writer)
		return -EBADF;
	for (tries = 0; tries < 4; tries++) {
		if (h->epoch != mfs_epoch())
			return -EIO;
		pthread_mutex_lock(&h->lock);
		p = h->p;
		pend_get(p);
		pthread_rwlock_rdlock(&p->rw);
		if (pend_live(p)) {
			pend_set_active(p, &h->active, 1);
			pthread_mutex_unlock(&h->lock);
			*out = p;
			return 0;
		}
		st = p->state;
		err = p->err;
		pthread_rwlock_unlock(&p->rw);
		pthread_mutex_unlock(&h->lock);
		if (p->epoch != mfs_epoch()) {
			pend_put(p);
			return -EIO;
		}
		if (st == PEND_FAILED) {
			pend_put(p);
			return err;
		}
		err = handle_cow(h, p);
		pend_put(p);
		if (err < 0)
			return err;
	}
	return -EIO;
}

static void handle_unpend(struct pending *p)
{
	pthread_rwlock_unlock(&p->rw);
	pend_put(p);
}

static struct handle *handle_new(uint64_t ino, int writer)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->ino = ino;
	h->writer = writer;
	h->epoch = mfs_epoch();
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_lock(&handles_lock);
	h->hnext = handles;
	if (handles)
		handles->hprev = h;
	handles = h;
	pthread_mutex_unlock(&handles_lock);
	return h;
}

/* Detach h from everything; the writer's release publishes if still due. */
static void handle_free(struct handle *h)
{
	struct pending *p = h->p;
	int left, wl;

	/* a zero-copy writer that never released its mapping died with it */
	if (p && __atomic_load_n(&h->holds, __ATOMIC_ACQUIRE) > 0)
		pend_fail(p, -EIO);
	if (p) {
		left = pend_detach(p, h->writer, &h->active, &wl);
		/* an unlinked file stays readable until its last reader closes */
		if (h->writer && wl == 0 && !(left > 0 && p->unlinked))
			pend_finish(p, 0);
		if (left == 0)
			pend_close_file(p);
		pend_put(p);
	}
	if (h->lease)
		maru_file_close(h->lease);
	pthread_mutex_lock(&handles_lock);
	if (h->hprev)
		h->hprev->hnext = h->hnext;
	else
		handles = h->hnext;
	if (h->hnext)
		h->hnext->hprev = h->hprev;
	pthread_mutex_unlock(&handles_lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void ops_release_all(void)
{
	struct handle *h;

	pin_drop_all();
	for (;;) {
		pthread_mutex_lock(&handles_lock);
		h = handles;
		pthread_mutex_unlock(&handles_lock);
		if (!h)
			return;
		/* never publish at exit what a writer may not have finished */
		if (h->p)
			pend_fail(h->p, -EIO);
		handle_free(h);
	}
}

/* ---- open, create, read, write, flush, release ---- */

/* keep_cache for immutable published bytes; direct_io when the kernel's
 * inode is not the version served (see rewrite_by_name). */
static void reply_open_handle(fuse_req_t req, struct fuse_file_info *fi,
			      struct handle *h, int keep_cache, int direct)
{
	fi->fh = (uintptr_t)h;
	fi->keep_cache = keep_cache && !direct;
	fi->direct_io = direct;
	if (fuse_reply_open(req, fi) != 0)
		handle_free(h);
}

static void open_reader(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char name[MARU_NAME_MAX + 1];
	struct handle *h = handle_new(ino, 0);
	struct pending *p;
	uint64_t parent;
	int rc;

	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (pin_take(ino, &h->lease, &p) && p) {
		h->p = p;	/* the pin's reader attachment and ref are h's now */
		reply_open_handle(req, fi, h, 0, 0);
		return;
	}
	p = h->lease ? NULL : itab_pending(ino);
	if (p) {
		/* this mount is writing the file: read what it wrote */
		rc = attach_reader(p, h);
		pend_put(p);
		if (rc == 0) {
			reply_open_handle(req, fi, h, 0, 0);
			return;
		}
	}
	/*
	 * The kernel's inode is one version, always: if the name was replaced
	 * or unlinked since the VFS looked it up, marud still opens that
	 * version while anyone leases it (as a local filesystem opens the
	 * inode the lookup found). Once it is gone, ESTALE: the VFS drops the
	 * dentry and walks the path again with a fresh LOOKUP, which finds
	 * what the name holds now. Never serve another version under this
	 * inode: its cached size and pages, and fstat, belong to this one.
	 */
	rc = h->lease ? 0 : maru_file_open_ino(mfs->c, ino, &h->lease);
	if (rc == -ESTALE) {
		CNT_INC(stale_opens);
		if (itab_name(ino, &parent, name, sizeof(name)) == 0) {
			pin_want(parent, name);	/* for the VFS's LOOKUP again */
			notify_inval_entry(parent, name, 0);	/* queued, not waited for */
		}
	}
	if (rc < 0) {
		h->lease = NULL;
		handle_free(h);
		fuse_reply_err(req, -rc);
		return;
	}
	reply_open_handle(req, fi, h, 1, 0);	/* published bytes are immutable */
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h;
	struct pending *p;
	int rc = -EIO, tries, moved = 0, trunc;

	OP(OPEN);
	if (ino_is_virt(ino)) {
		virt_open(req, ino, fi);
		return;
	}
	if ((fi->flags & O_ACCMODE) == O_RDONLY) {
		open_reader(req, ino, fi);
		return;
	}
	h = handle_new(ino, 1);
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (tries = 0; tries < 8; tries++) {
		rc = writer_pending(ino, !!(fi->flags & O_TRUNC), &p, &moved);
		if (rc < 0)
			break;
		trunc = rc;
		rc = attach_live(p, h);	/* -EAGAIN: published meanwhile */
		pend_put(p);
		if (rc == 0 && trunc)
			rc = pend_truncate(p, 0, 0);
		if (rc == 0) {
			reply_open_handle(req, fi, h, 0, moved);
			return;
		}
		if (h->p) {
			/* attached but the truncate failed: let go, say why */
			handle_free(h);
			fuse_reply_err(req, io_errno(rc));
			return;
		}
	}
	handle_free(h);
	fuse_reply_err(req, rc == -ESTALE ? ESTALE : io_errno(rc == -EAGAIN ? -EIO : rc));
}

static int create_file(uint64_t parent, const char *name, mode_t mode,
		       const struct fuse_ctx *ctx, int flags, struct maru_file **f)
{
	unsigned int cf = (flags & O_EXCL) ? MARU_CREATE_EXCL : 0;
	uint32_t m = S_IFREG | (mode & 07777);
	int rc;

	/* Without O_TRUNC an existing file (our negative entry was stale)
	 * keeps its bytes, as POSIX open(O_CREAT) would. */
	if (!(flags & O_TRUNC) && !(flags & O_EXCL)) {
		rc = maru_file_create(mfs->c, parent, name, m, ctx->uid, ctx->gid,
				      cf | MARU_CREATE_COPY, 0, f);
		if (rc != -ENOENT)
			return rc;
	}
	return maru_file_create(mfs->c, parent, name, m, ctx->uid, ctx->gid, cf, 0, f);
}

/*
 * This mount's live pending for a created name, or a new one (ref taken).
 * Returns 1 when the caller must truncate it once attached (O_TRUNC on
 * another thread's pending), as in writer_pending().
 */
static int create_pending(fuse_req_t req, fuse_ino_t parent, const char *name,
			  mode_t mode, int flags, struct pending **out)
{
	struct maru_file *f;
	struct pending *p;
	uint64_t fino;
	int rc;

	p = pend_find(parent, name);
	if (p && (flags & O_EXCL)) {
		pend_put(p);
		return -EEXIST;
	}
	if (!p) {
		rc = create_file(parent, name, mode, fuse_req_ctx(req), flags, &f);
		if (rc < 0)
			return rc;
		fino = maru_file_ino(f);
		p = pend_adopt(f, parent, name, 0, 1);
		if (!p)
			return -ENOMEM;
		if (p->ino == fino)
			flags &= ~O_TRUNC;	/* ours: as create_file made it */
	}
	*out = p;
	return !!(flags & O_TRUNC);	/* the caller truncates once attached */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct maru_attr a;
	struct pending *p;
	struct handle *h;
	int rc = -EIO, tries, trunc;

	OP(CREATE);
	if (is_virt_name(parent, name) || ino_is_virt(parent)) {
		fuse_reply_err(req, is_virt_name(parent, name) ? EEXIST : EACCES);
		return;
	}
	h = handle_new(0, 1);
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (tries = 0; tries < 8; tries++) {
		rc = create_pending(req, parent, name, mode, fi->flags, &p);
		if (rc < 0)
			break;
		trunc = rc;
		rc = attach_live(p, h);	/* -EAGAIN: published meanwhile */
		if (rc == 0 && trunc)
			rc = pend_truncate(p, 0, 0);
		if (rc == 0)
			rc = pending_attr(p, &a);
		if (rc == 0)
			break;
		pend_put(p);
		if (h->p) {
			handle_free(h);	/* attached, then failed: say why */
			fuse_reply_err(req, io_errno(rc));
			return;
		}
		if (rc != -EAGAIN && rc != -ENOENT)
			break;
	}
	if (rc < 0) {
		handle_free(h);
		fuse_reply_err(req, io_errno(rc == -EAGAIN ? -EIO : rc));
		return;
	}
	h->ino = a.ino;
	fill_entry(&e, &a);
	itab_remember(a.ino, parent, name);
	itab_link_pending(a.ino, p);
	pend_put(p);
	dcache_note(parent, name, e.entry_timeout);
	fi->fh = (uintptr_t)h;
	fi->keep_cache = 0;
	if (fuse_reply_create(req, &e, fi) != 0) {
		itab_forget(a.ino, 1);
		handle_free(h);
	}
}

static ssize_t read_full(struct maru_file *f, char *buf, size_t size, off_t off)
{
	size_t got = 0;
	ssize_t n;

	/* Never hand the kernel a short read inside the file: it would take
	 * it for EOF (O_DIRECT readers see a truncated block). */
	while (got < size) {
		n = maru_file_pread(f, buf + got, size - got, (uint64_t)off + got);
		if (n < 0)
			return got ? (ssize_t)got : n;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Read through the lease of h, taking one lazily if h has none. */
static ssize_t read_lease(struct handle *h, char *buf, size_t size, off_t off)
{
	uint64_t ino = h->ino;
	int rc = 0;

	pthread_mutex_lock(&h->lock);
	if (!h->lease) {
		if (h->p && h->p->ino)
			ino = h->p->ino;
		rc = maru_file_open_ino(mfs->c, ino, &h->lease);
		if (rc < 0)
			h->lease = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	if (rc < 0)
		return rc;
	return read_full(h->lease, buf, size, off);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct handle *h = fh_handle(fi);
	struct pending *p;
	ssize_t n = -ENOENT;
	char *buf;
	int st;

	OP(READ);
	if (ino_is_virt(ino)) {
		virt_read(req, fi, size, off);
		return;
	}
	if (h->epoch != mfs_epoch()) {
		fuse_reply_err(req, EIO);
		return;
	}
	buf = tls_buf(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&h->lock);
	p = h->p;
	if (p)
		pend_get(p);
	pthread_mutex_unlock(&h->lock);
	if (p) {
		pthread_rwlock_rdlock(&p->rw);
		st = p->state;
		if (p->file && p->epoch == mfs_epoch())
			n = read_full(p->file, buf, size, off);
		pthread_rwlock_unlock(&p->rw);
		pend_put(p);
	}
	if (n == -ENOENT && !h->lease && p && p->epoch != mfs_epoch())
		n = -EIO;
	else if (n == -ENOENT)
		n = read_lease(h, buf, size, off);
	/* tests: the bytes are read, the reader not answered yet */
	if (n >= 0) {
		st = FAILPOINT("marufs.read.mid");
		if (st < 0)
			n = st;
	}
	if (n < 0)
		fuse_reply_err(req, io_errno((int)n));
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct pending *p;
	size_t done = 0;
	ssize_t n = 0;
	int rc;

	OP(WRITE);
	rc = handle_pending(fh_handle(fi), &p);
	if (rc < 0) {
		fuse_reply_err(req, io_errno(rc));
		return;
	}
	while (done < size) {
		n = maru_file_pwrite(p->file, buf + done, size - done, (uint64_t)off + done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	/* tests: the bytes are in the pending version, the writer not told yet */
	if (done == size) {
		rc = FAILPOINT("marufs.write.mid");
		if (rc < 0) {
			n = rc;
			done = 0;
		}
	}
	if (n < 0 || (n == 0 && done < size)) {
		/* never publish a file a write failed in */
		pend_fail(p, n < 0 ? (int)n : -EIO);
	} else {
		pend_touched(p, 1);
	}
	handle_unpend(p);
	if (done < size)
		fuse_reply_err(req, io_errno(n < 0 ? (int)n : -EIO));
	else
		fuse_reply_write(req, done);
}

#define TASK_PF_EXITING 0x00000004	/* include/linux/sched.h */

/*
 * Is the task closing this file dying of a signal? A writer killed mid-write
 * has its descriptors closed by the kernel (FLUSH, then RELEASE) exactly as
 * if it had called close(); only the task itself tells them apart: in
 * do_exit() it has PF_EXITING set and its exit code recorded before its
 * files are closed (proc(5) stat fields 9 and 52).
 */
static int flush_by_killed_task(fuse_req_t req)
{
	char path[64], buf[1024], *p;
	unsigned long long flags = 0, code = 0, v;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)fuse_req_ctx(req)->pid);
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

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h = fh_handle(fi);
	struct pending *p;
	int active, rc = 0, killed;

	OP(FLUSH);
	/* a writable zero-copy mapping is still writing: publish later */
	if (ino_is_virt(ino) || !h->writer || __atomic_load_n(&h->holds, __ATOMIC_ACQUIRE) > 0) {
		fuse_reply_err(req, 0);
		return;
	}
	killed = flush_by_killed_task(req);
	pthread_mutex_lock(&h->lock);
	p = h->p;
	pend_get(p);
	active = pend_set_active(p, &h->active, 0);
	pthread_mutex_unlock(&h->lock);
	/* A killed writer publishes nothing: release abandons its version
	 * unless a writer still alive flushes it later. */
	__atomic_store_n(&p->killed, killed, __ATOMIC_RELEASE);
	if (active == 0 && !killed)
		rc = pend_finish(p, 1);
	pend_put(p);
	fuse_reply_err(req, -rc);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(RELEASE);
	pin_expire();
	if (ino_is_virt(ino))
		virt_release(fi);
	else if (fi->fh)
		handle_free(fh_handle(fi));
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct handle *h = fh_handle(fi);
	struct pending *p;
	int rc = 0;

	OP(FSYNC);
	if (ino_is_virt(ino) || !h->writer) {
		fuse_reply_err(req, 0);
		return;
	}
	pthread_mutex_lock(&h->lock);
	p = h->p;
	pend_get(p);
	pthread_mutex_unlock(&h->lock);
	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p))
		rc = maru_file_sync(p->file);
	else if (p->epoch != mfs_epoch())
		rc = -EIO;
	pthread_rwlock_unlock(&p->rw);
	pend_put(p);
	fuse_reply_err(req, io_errno(rc));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	struct maru_attr a;
	struct pending *p;
	uint64_t end = (uint64_t)off + (uint64_t)len;
	int rc;

	OP(FALLOCATE);
	if (mode != 0 || ino_is_virt(ino)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	rc = handle_pending(fh_handle(fi), &p);
	if (rc < 0) {
		fuse_reply_err(req, io_errno(rc));
		return;
	}
	rc = maru_file_reserve(p->file, end);
	if (rc == 0)
		rc = maru_file_attr(p->file, &a);
	if (rc == 0 && a.size < end) {
		/* mode 0 extends the size, as POSIX requires */
		rc = maru_file_truncate(p->file, end);
		if (rc == 0)
			pend_touched(p, 1);
	}
	handle_unpend(p);
	fuse_reply_err(req, io_errno(rc));
}

/* ---- setattr ---- */

static void to_maru_setattr(const struct stat *attr, int to_set, struct maru_setattr *sa)
{
	memset(sa, 0, sizeof(*sa));
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa->mask |= MARU_SET_MODE;
		sa->mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa->mask |= MARU_SET_UID;
		sa->uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa->mask |= MARU_SET_GID;
		sa->gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		sa->mask |= MARU_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa->mask |= MARU_SET_ATIME;
		sa->atime = attr->st_atim;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		sa->mask |= MARU_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa->mask |= MARU_SET_MTIME;
		sa->mtime = attr->st_mtim;
	}
}

/* truncate(2) of a published file nobody here writes: a new version. */
static int truncate_published(uint64_t ino, uint64_t size, struct maru_attr *a)
{
	char name[MARU_NAME_MAX + 1];
	struct ev_expect *w;
	struct maru_file *f;
	uint64_t parent;
	int rc, named;

	named = itab_name(ino, &parent, name, sizeof(name)) == 0;
	rc = maru_file_rewrite(mfs->c, ino, size ? MARU_CREATE_COPY : 0, 0, &f);
	if (rc == -ESTALE && named) {
		rc = rewrite_by_name(parent, name, size == 0, &f);
		if (rc == -ESTALE)
			rc = -ENOENT;	/* the name went away meanwhile */
	}
	if (rc < 0)
		return rc;
	w = named ? notify_expect(parent, name) : NULL;
	rc = maru_file_truncate(f, size);
	if (rc == 0)
		rc = maru_file_publish(f);
	if (rc == 0)
		rc = maru_file_attr(f, a);
	maru_file_close(f);
	if (rc < 0) {
		notify_expect_cancel(w);
		return rc;
	}
	CNT_INC(publishes);
	if (!notify_expect_wait(w, PUBLISH_INVAL_WAIT_MS, 1) && named)
		notify_inval_entry(parent, name, 0);
	return 0;
}

/* Truncate p (read-locked by the caller) and report its attributes. */
static int truncate_locked(struct pending *p, uint64_t size, struct maru_attr *a)
{
	int rc = maru_file_truncate(p->file, size);

	if (rc == 0) {
		pend_touched(p, 1);
		rc = maru_file_attr(p->file, a);
	}
	return rc;
}

/* ftruncate/truncate: the writer's pending, this mount's, or a new version. */
static int setattr_size(fuse_ino_t ino, uint64_t size, struct fuse_file_info *fi,
			struct maru_attr *a)
{
	struct handle *h = fi ? fh_handle(fi) : NULL;
	char name[MARU_NAME_MAX + 1];
	struct pending *p;
	uint64_t parent;
	int rc;

	if (h && h->writer) {
		rc = handle_pending(h, &p);
		if (rc < 0)
			return rc == -ESTALE ? -EIO : rc;
		rc = truncate_locked(p, size, a);
		handle_unpend(p);
		return rc;
	}
	p = itab_pending(ino);
	if (p && !pend_live(p)) {
		pend_put(p);
		p = NULL;
	}
	if (!p && itab_name(ino, &parent, name, sizeof(name)) == 0)
		p = pend_find(parent, name);
	if (p) {
		pthread_rwlock_rdlock(&p->rw);
		rc = pend_live(p) ? truncate_locked(p, size, a) : -EAGAIN;
		pthread_rwlock_unlock(&p->rw);
		pend_put(p);
		if (rc != -EAGAIN)
			return rc;
		/* published meanwhile: truncate what the name holds now */
	}
	return truncate_published(ino, size, a);
}

/* chmod/chown/utimens, also on a pending rewrite that will replace ino. */
static int setattr_stored(fuse_ino_t ino, const struct maru_setattr *sa,
			  struct maru_attr *a)
{
	struct pending *p;
	int rc, prc;

	rc = maru_setattr(mfs->c, ino, sa, a);
	p = itab_pending(ino);
	if (p && pend_live(p) && p->ino != ino) {
		prc = maru_setattr(mfs->c, p->ino, sa, a);
		if (rc < 0)
			rc = prc;
	}
	if (p)
		pend_put(p);
	return rc;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct maru_setattr sa;
	struct maru_attr a, sized;
	int rc = 0, have = 0;

	OP(SETATTR);
	if (ino_is_virt(ino)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = setattr_size(ino, (uint64_t)attr->st_size, fi, &sized);
		if (rc < 0) {
			fuse_reply_err(req, -rc);
			return;
		}
		have = 1;
	}
	to_maru_setattr(attr, to_set, &sa);
	if (sa.mask) {
		rc = setattr_stored(ino, &sa, &a);
		if (rc < 0)
			goto out;
	}
	rc = path_getattr(ino, &a);
	if (rc < 0 && have) {
		/* the truncate moved the name to a new version */
		a = sized;
		rc = 0;
	}
out:
	/* ENOENT: the version behind a cached name is gone; let the VFS
	 * look the name up again */
	if (rc < 0)
		fuse_reply_err(req, (rc == -ENOENT || rc == -ESTALE) ? ESTALE : -rc);
	else
		reply_attr(req, &a, ino);
}

/* ---- namespace ---- */

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fuse_entry_param e;
	struct ev_expect *w;
	struct maru_file *f;
	struct maru_attr a;
	int rc;

	OP(MKNOD);
	if (!S_ISREG(mode)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (is_virt_name(parent, name) || ino_is_virt(parent)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	rc = maru_file_create(mfs->c, parent, name, S_IFREG | (mode & 07777),
			      ctx->uid, ctx->gid, MARU_CREATE_EXCL, 0, &f);
	if (rc < 0) {
		fuse_reply_err(req, io_errno(rc));
		return;
	}
	w = notify_expect(parent, name);
	rc = maru_file_publish(f);
	if (rc == 0)
		rc = maru_file_attr(f, &a);
	maru_file_close(f);
	if (rc < 0) {
		notify_expect_cancel(w);
		fuse_reply_err(req, io_errno(rc));
		return;
	}
	notify_expect_wait(w, PUBLISH_INVAL_WAIT_MS, 0);
	CNT_INC(publishes);
	fill_entry(&e, &a);
	reply_entry_known(req, parent, name, &e, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct ev_expect *w;
	struct fuse_entry_param e;
	struct maru_attr a;
	int rc;

	OP(MKDIR);
	if (is_virt_name(parent, name) || ino_is_virt(parent)) {
		fuse_reply_err(req, is_virt_name(parent, name) ? EEXIST : EACCES);
		return;
	}
	w = notify_expect(parent, name);
	rc = maru_mkdir(mfs->c, parent, name, S_IFDIR | (mode & 07777), ctx->uid,
			ctx->gid, &a);
	if (rc < 0) {
		notify_expect_cancel(w);
		fuse_reply_err(req, -rc);
		return;
	}
	notify_expect_wait(w, PUBLISH_INVAL_WAIT_MS, 0);
	fill_entry(&e, &a);
	reply_entry_known(req, parent, name, &e, NULL);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int rc;

	OP(UNLINK);
	if (is_virt_name(parent, name) || ino_is_virt(parent)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	rc = maru_unlink(mfs->c, parent, name);
	if (rc == 0)
		pend_detach_name(parent, name);
	fuse_reply_err(req, -rc);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	OP(RMDIR);
	if (is_virt_name(parent, name) || ino_is_virt(parent)) {
		fuse_reply_err(req, EBUSY);
		return;
	}
	fuse_reply_err(req, -maru_rmdir(mfs->c, parent, name));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct ev_expect *w;
	int rc;

	OP(RENAME);
	if (flags & ~(unsigned int)RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);	/* RENAME_EXCHANGE, WHITEOUT */
		return;
	}
	if (is_virt_name(parent, name) || is_virt_name(newparent, newname) ||
	    ino_is_virt(parent) || ino_is_virt(newparent)) {
		fuse_reply_err(req, EBUSY);
		return;
	}
	w = notify_expect(newparent, newname);
	rc = maru_rename(mfs->c, parent, name, newparent, newname,
			 (flags & RENAME_NOREPLACE) ? MARU_RENAME_NOREPLACE : 0);
	if (rc < 0)
		notify_expect_cancel(w);
	else
		notify_expect_wait(w, PUBLISH_INVAL_WAIT_MS, 0);
	if (rc == 0 && !(parent == newparent && strcmp(name, newname) == 0)) {
		/* whatever this mount was writing at the target lost its name */
		pend_detach_name(newparent, newname);
		pend_rename(parent, name, newparent, newname);
		itab_rename(parent, name, newparent, newname);
	}
	fuse_reply_err(req, -rc);
}

/* ---- directories ---- */

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(OPENDIR);
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(RELEASEDIR);
	fuse_reply_err(req, 0);
}

struct rd_state {
	fuse_req_t req;
	char *buf;
	size_t size, pos;
	int full;
};

static int rd_add(struct rd_state *rd, const char *name, uint64_t ino,
		  uint32_t mode, off_t next)
{
	struct stat st;
	size_t n;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = mode & S_IFMT;
	n = fuse_add_direntry(rd->req, rd->buf + rd->pos, rd->size - rd->pos,
			      name, &st, next);
	if (n > rd->size - rd->pos) {
		rd->full = 1;
		return 1;
	}
	rd->pos += n;
	return 0;
}

static int rd_cb(void *arg, const struct maru_dirent *de)
{
	struct rd_state *rd = arg;
	char name[MARU_NAME_MAX + 1];
	size_t len = de->namelen > MARU_NAME_MAX ? MARU_NAME_MAX : de->namelen;

	memcpy(name, de->name, len);
	name[len] = '\0';
	return rd_add(rd, name, de->ino, de->mode,
		      (off_t)(de->cookie + DIR_OFF_FIRST));
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct rd_state rd = { .req = req, .size = size };
	uint64_t cookie;
	int rc = 0;

	OP(READDIR);
	if (ino == VIRT_INO_DIR) {
		virt_readdir(req, off, size);
		return;
	}
	rd.buf = malloc(size ? size : 1);
	if (!rd.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off < 1 && rd_add(&rd, ".", ino, S_IFDIR, 1))
		goto out;
	if (off < 2 && rd_add(&rd, "..", FUSE_ROOT_ID, S_IFDIR, 2))
		goto out;
	if (off < 3 && ino == FUSE_ROOT_ID &&
	    rd_add(&rd, VIRT_DIR_NAME, VIRT_INO_DIR, S_IFDIR, 3))
		goto out;
	cookie = off < DIR_OFF_FIRST ? 0 : (uint64_t)off - DIR_OFF_FIRST;
	rc = maru_readdir(mfs->c, ino, cookie, rd_cb, &rd);
out:
	if (rc < 0 && rd.pos == 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, rd.buf, rd.pos);
	free(rd.buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct maru_statfs s;
	struct statvfs st;
	int rc;

	OP(STATFS);
	rc = maru_statfs(mfs->c, &s);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.f_bsize = 4096;
	st.f_frsize = 4096;
	st.f_blocks = s.capacity / 4096;
	st.f_bfree = s.free / 4096;
	st.f_bavail = (s.free + s.evictable) / 4096;
	/* every file needs at least a block, so free inodes track free blocks;
	 * the total counts both so that df -i shows used = names + dirs */
	st.f_ffree = st.f_bavail;
	st.f_favail = st.f_bavail;
	st.f_files = s.names + s.dirs + st.f_ffree;
	st.f_namemax = MARU_NAME_MAX;
	fuse_reply_statfs(req, &st);
}

/* ---- misc ---- */

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct maru_attr a;
	int rc = 0;

	OP(ACCESS);
	if (!ino_is_virt(ino))
		rc = node_getattr(ino, &a);
	fuse_reply_err(req, -rc);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	OP(POLL);
	if (ino_is_virt(ino)) {
		virt_poll(req, fi, ph);
		return;
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	OP(GETXATTR);
	xattr_get(req, ino, name, size);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	OP(SETXATTR);
	xattr_set(req, ino, name, value, size, flags);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	OP(LISTXATTR);
	xattr_list(req, ino, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	OP(REMOVEXATTR);
	xattr_remove(req, ino, name);
}

/* ---- zero-copy (ioctl.c) ---- */

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned int flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	OP(IOCTL);
	ioctl_handle(req, ino, cmd, fi, flags, in_buf, in_bufsz, out_bufsz);
}

static int zc_pending(struct handle *h, struct zc_ref *z)
{
	struct pending *p;
	int rc;

	pthread_mutex_lock(&h->lock);
	p = h->p;
	if (p)
		pend_get(p);
	pthread_mutex_unlock(&h->lock);
	if (!p)
		return -ENOENT;
	pthread_rwlock_rdlock(&p->rw);
	if (p->file && p->epoch == mfs_epoch() && p->state != PEND_DEAD) {
		z->p = p;
		z->file = p->file;
		z->pending = p->state == PEND_PENDING || p->state == PEND_FAILED;
		z->writable = h->writer && p->state == PEND_PENDING;
		return 0;
	}
	rc = p->epoch != mfs_epoch() ? -EIO : -ENOENT;
	handle_unpend(p);
	return rc;
}

int handle_zc_get(struct fuse_file_info *fi, int want_write, struct zc_ref *z)
{
	struct handle *h = fh_handle(fi);
	struct pending *p;
	uint64_t ino = h->ino;
	int rc;

	memset(z, 0, sizeof(*z));
	if (h->epoch != mfs_epoch())
		return -EIO;
	if (want_write) {
		rc = handle_pending(h, &p);
		if (rc < 0)
			return rc;
		pend_touched(p, 1);
		__atomic_add_fetch(&h->holds, 1, __ATOMIC_ACQ_REL);
		z->p = p;
		z->file = p->file;
		z->pending = z->writable = 1;
		return 0;
	}
	rc = zc_pending(h, z);
	if (rc != -ENOENT)
		return rc;
	rc = 0;
	pthread_mutex_lock(&h->lock);
	if (!h->lease) {
		if (h->p && h->p->ino)
			ino = h->p->ino;
		rc = maru_file_open_ino(mfs->c, ino, &h->lease);
		if (rc < 0)
			h->lease = NULL;
	}
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

int handle_zc_unhold(struct fuse_file_info *fi)
{
	struct handle *h = fh_handle(fi);
	int n = __atomic_load_n(&h->holds, __ATOMIC_ACQUIRE);

	while (n > 0)
		if (__atomic_compare_exchange_n(&h->holds, &n, n - 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 0;
	return -EINVAL;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	conn->max_write = 1 << 20;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* open(O_TRUNC) must reach open(), not become a separate setattr
	 * that would publish an empty version first */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* publish semantics need every write to arrive before flush */
	conn->want &= ~(unsigned int)FUSE_CAP_WRITEBACK_CACHE;
	conn->want &= ~(unsigned int)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				      FUSE_CAP_SPLICE_MOVE);
}

void ops_init(struct fuse_lowlevel_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->init = op_init;
	ops->lookup = op_lookup;
	ops->forget = op_forget;
	ops->forget_multi = op_forget_multi;
	ops->getattr = op_getattr;
	ops->setattr = op_setattr;
	ops->mknod = op_mknod;
	ops->mkdir = op_mkdir;
	ops->unlink = op_unlink;
	ops->rmdir = op_rmdir;
	ops->rename = op_rename;
	ops->open = op_open;
	ops->create = op_create;
	ops->read = op_read;
	ops->write = op_write;
	ops->flush = op_flush;
	ops->release = op_release;
	ops->fsync = op_fsync;
	ops->opendir = op_opendir;
	ops->readdir = op_readdir;
	ops->releasedir = op_releasedir;
	ops->statfs = op_statfs;
	ops->setxattr = op_setxattr;
	ops->getxattr = op_getxattr;
	ops->listxattr = op_listxattr;
	ops->removexattr = op_removexattr;
	ops->access = op_access;
	ops->fallocate = op_fallocate;
	ops->poll = op_poll;
	ops->ioctl = op_ioctl;
}

/* ---- marufs's own metrics for .maru/stats ---- */

static const char *const op_names[OP_COUNT] = {
	"lookup", "forget", "getattr", "setattr", "mknod", "mkdir", "unlink",
	"rmdir", "rename", "open", "create", "read", "write", "flush", "release",
	"fsync", "opendir", "readdir", "releasedir", "statfs", "setxattr",
	"getxattr", "listxattr", "removexattr", "access", "fallocate", "poll",
	"ioctl",
};

static const char *const hint_labels[HINT_COUNT] = {
	"read", "read_end", "promote", "write",
};

static void sappend(char **buf, size_t *cap, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void sappend(char **buf, size_t *cap, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	char *nb;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(*buf + *pos, *cap - *pos, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < *cap - *pos) {
			*pos += (size_t)n;
			return;
		}
		nb = realloc(*buf, *cap * 2 + (size_t)n);
		if (!nb)
			return;
		*buf = nb;
		*cap = *cap * 2 + (size_t)n;
	}
}

static uint64_t cnt(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

#define COUNTER(name, help, val) do { \
	sappend(buf, cap, pos, "# HELP " name " " help "\n# TYPE " name " counter\n" \
		name " %" PRIu64 "\n", (uint64_t)(val)); \
} while (0)
#define GAUGE(name, help, val) do { \
	sappend(buf, cap, pos, "# HELP " name " " help "\n# TYPE " name " gauge\n" \
		name " %" PRIu64 "\n", (uint64_t)(val)); \
} while (0)

void stats_append(char **buf, size_t *cap, size_t *pos)
{
	const struct counters *c = &mfs->cnt;
	int i;

	sappend(buf, cap, pos, "# HELP marufs_fuse_ops_total FUSE requests handled, by type.\n"
		"# TYPE marufs_fuse_ops_total counter\n");
	for (i = 0; i < OP_COUNT; i++)
		sappend(buf, cap, pos, "marufs_fuse_ops_total{op=\"%s\"} %" PRIu64 "\n",
			op_names[i], cnt(&c->ops[i]));
	sappend(buf, cap, pos, "# HELP marufs_lookups_total Lookups answered, by result.\n"
		"# TYPE marufs_lookups_total counter\n"
		"marufs_lookups_total{result=\"positive\"} %" PRIu64 "\n"
		"marufs_lookups_total{result=\"negative\"} %" PRIu64 "\n",
		cnt(&c->lookup_pos), cnt(&c->lookup_neg));
	sappend(buf, cap, pos, "# HELP marufs_invalidations_total Kernel cache invalidations sent.\n"
		"# TYPE marufs_invalidations_total counter\n"
		"marufs_invalidations_total{kind=\"entry\"} %" PRIu64 "\n"
		"marufs_invalidations_total{kind=\"inode\"} %" PRIu64 "\n",
		cnt(&c->inval_entry), cnt(&c->inval_inode));
	sappend(buf, cap, pos, "# HELP marufs_hints_total user.maru.hint values accepted.\n"
		"# TYPE marufs_hints_total counter\n");
	for (i = 0; i < HINT_COUNT; i++)
		sappend(buf, cap, pos, "marufs_hints_total{hint=\"%s\"} %" PRIu64 "\n",
			hint_labels[i], cnt(&c->hints[i]));
	COUNTER("marufs_publishes_total", "Versions published by this mount.", cnt(&c->publishes));
	COUNTER("marufs_publish_failures_total", "Publishes refused by marud.",
		cnt(&c->publish_failures));
	COUNTER("marufs_abandons_total", "Pending versions abandoned (failed, unlinked or untouched).",
		cnt(&c->abandons));
	COUNTER("marufs_cow_rewrites_total", "Writes after publish that started a new version.",
		cnt(&c->cow_rewrites));
	COUNTER("marufs_stale_opens_total",
		"Opens of a version gone since the kernel looked its name up (ESTALE, the VFS looks again).",
		cnt(&c->stale_opens));
	COUNTER("marufs_events_total", "Pool events received.", cnt(&c->events));
	COUNTER("marufs_generation_changes_total", "marud restarts seen.", cnt(&c->generations));
	GAUGE("marufs_inodes", "Inodes the kernel holds.", itab_count());
	GAUGE("marufs_pending_files", "Pending versions this mount writes.", pend_count());
	GAUGE("marufs_lookup_pins", "Leases taken at a lookup after a stale open, not yet opened.",
	      pin_count());
	GAUGE("marufs_cached_entries", "Names (positive and negative) handed to the kernel cache.",
	      dcache_count());
}
