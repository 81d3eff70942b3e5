/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marufs.h: private interfaces between the parts of the marufs FUSE
 * daemon: the mount context (options, libmaru client, counters), the inode
 * and pending tables (inode.c), the notifier and event ring (notify.c), the
 * virtual .maru/ directory (virt.c), extended attributes (xattr.c) and the
 * request handlers (ops.c). Nothing here is visible outside marufs.
 *
 * Lock order (outermost first): pending->rw, then tab_lock (inode.c), then
 * the leaf locks of notify.c (queue, ring, dentry table). No lock is held
 * across a libmaru call except pending->rw, which serializes a pending
 * version's state changes (publish, close) against its I/O.
 */
#ifndef MARUFS_H
#define MARUFS_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include <maru/libmaru.h>

/* Inode numbers of the virtual .maru/ tree: a reserved top range. */
#define VIRT_INO_BASE	(UINT64_MAX - 16)
#define VIRT_INO_DIR	(VIRT_INO_BASE + 0)
#define VIRT_INO_STATS	(VIRT_INO_BASE + 1)
#define VIRT_INO_EVENTS	(VIRT_INO_BASE + 2)
#define VIRT_INO_POOL	(VIRT_INO_BASE + 3)
#define VIRT_DIR_NAME	".maru"

static inline int ino_is_virt(uint64_t ino)
{
	return ino >= VIRT_INO_BASE;
}

/* Counted FUSE request types, for .maru/stats. */
enum op_type {
	OP_LOOKUP, OP_FORGET, OP_GETATTR, OP_SETATTR, OP_MKNOD, OP_MKDIR,
	OP_UNLINK, OP_RMDIR, OP_RENAME, OP_OPEN, OP_CREATE, OP_READ, OP_WRITE,
	OP_FLUSH, OP_RELEASE, OP_FSYNC, OP_OPENDIR, OP_READDIR, OP_RELEASEDIR,
	OP_STATFS, OP_SETXATTR, OP_GETXATTR, OP_LISTXATTR, OP_REMOVEXATTR,
	OP_ACCESS, OP_FALLOCATE, OP_POLL, OP_IOCTL,
	OP_COUNT
};

enum hint_type { HINT_READ, HINT_READ_END, HINT_PROMOTE, HINT_WRITE, HINT_COUNT };

struct counters {
	uint64_t ops[OP_COUNT];
	uint64_t publishes;
	uint64_t publish_failures;
	uint64_t abandons;
	uint64_t cow_rewrites;
	uint64_t stale_opens;
	uint64_t inval_entry;
	uint64_t inval_inode;
	uint64_t lookup_pos;
	uint64_t lookup_neg;
	uint64_t events;
	uint64_t generations;
	uint64_t hints[HINT_COUNT];
};

#define CNT_INC(field) __atomic_add_fetch(&mfs->cnt.field, 1, __ATOMIC_RELAXED)

struct mfs_opts {
	char *pool;		/* POOL URI from the command line */
	char *mountpoint;
	char *data;		/* auto|shm|tcp|rdma */
	char *coherence;	/* hw|flush (DESIGN §5) */
	char *key_file;
	unsigned int timeout_ms;
	unsigned int max_conns;
	double entry_timeout;
	double attr_timeout;
	double negative_timeout;
	int show_help;
	int show_version;
};

struct notifier;
struct itab;

/* The one mount context; every handler reaches it via fuse_req_userdata(). */
struct mfs {
	struct mfs_opts o;
	struct maru_client *c;
	struct fuse_session *se;
	struct maru_pool_info info;
	struct itab *tab;
	struct notifier *nt;
	/* Bumped on every pool generation change; handles of older epochs fail. */
	uint64_t epoch;
	uint64_t generation;
	struct counters cnt;
};

extern struct mfs *mfs;

static inline uint64_t mfs_epoch(void)
{
	return __atomic_load_n(&mfs->epoch, __ATOMIC_ACQUIRE);
}

/* ---- pending (write) state, inode.c ---- */

enum pend_state {
	PEND_PENDING = 0,	/* file is a pending version */
	PEND_PUBLISHED,		/* file is now a lease on the published version */
	PEND_FAILED,		/* a write failed: never publish, abandon */
	PEND_DEAD,		/* abandoned or publish refused; file may be NULL */
};

/*
 * One pending version of this mount, shared by every FUSE handle that writes
 * the same name. refs counts handles and inode-table links; writers and
 * readers count the handles attached; active counts writer handles not
 * flushed since they last opened or wrote: a flush that drops it to zero
 * publishes, once data was written (else the last writer's release does).
 */
struct pending {
	pthread_rwlock_t rw;	/* rdlock: I/O; wrlock: state changes */
	struct maru_file *file;
	uint64_t ino;		/* the pending version id */
	uint64_t src_ino;	/* version rewritten (0 for a new file) */
	uint64_t epoch;
	int state;		/* enum pend_state, under rw (read racily ok) */
	int err;		/* -errno that failed it */
	int modified;		/* content differs from what it started as */
	int wrote;		/* data came through a handle (not just O_TRUNC) */
	int unlinked;		/* name removed: never publish */
	int killed;		/* last flush came from a task dying of a signal */
	/* under tab_lock: */
	uint64_t parent;
	char *name;
	int refs, writers, readers, active;
	int in_table;
	struct pending *hnext;
};

/* ---- inode table, inode.c ---- */

struct node {
	uint64_t ino;
	uint64_t parent;
	char *name;
	uint64_t nlookup;
	struct pending *pend;	/* ref held; this mount's write state */
	int hint;		/* last user.maru.hint + 1, 0 = none */
	struct node *ino_next, *name_next;
};

int itab_init(void);
void itab_destroy(void);
/* Kernel got an entry for (parent,name) -> ino: count it, remember the name. */
void itab_remember(uint64_t ino, uint64_t parent, const char *name);
void itab_forget(uint64_t ino, uint64_t n);
/* Copy out parent/name of a known inode; -ENOENT if unknown. */
int itab_name(uint64_t ino, uint64_t *parent, char *name, size_t len);
/* Pending linked to inode (ref taken) or NULL. */
struct pending *itab_pending(uint64_t ino);
void itab_link_pending(uint64_t ino, struct pending *p);
void itab_set_hint(uint64_t ino, int hint);
int itab_get_hint(uint64_t ino);
void itab_rename(uint64_t op, const char *on, uint64_t np, const char *nn);
size_t itab_count(void);
/* Call fn for every known inode (generation change); tab_lock held. */
void itab_foreach(void (*fn)(void *arg, uint64_t ino), void *arg);

/* Live pending for (parent,name) in this mount (ref taken), or NULL. */
struct pending *pend_find(uint64_t parent, const char *name);
/* New pending owning f (one ref for the caller, no handle attached). */
struct pending *pend_new(struct maru_file *f, uint64_t parent, const char *name,
			 uint64_t src_ino);
/*
 * Register p under its name. If a live pending already holds the name, p is
 * not inserted: returns 1 with that one in *out (ref taken). Else 0.
 */
int pend_insert(struct pending *p, struct pending **out);
void pend_get(struct pending *p);
void pend_put(struct pending *p);
/* Drop from the name table (published, abandoned, unlinked). */
void pend_unregister(struct pending *p);
void pend_rename(uint64_t op, const char *on, uint64_t np, const char *nn);
/* Name unlinked (or renamed over): its pending must never be published. */
void pend_detach_name(uint64_t parent, const char *name);
size_t pend_count(void);
/* Copy parent/name under the table lock; -ENOENT if p has no name. */
int pend_where(struct pending *p, uint64_t *parent, char *name, size_t len);
/* A handle attaches (ref + writer/reader count; writers start active). */
void pend_attach(struct pending *p, int writer, int *h_active);
/* A handle detaches; returns handles left, *writers_left. Ref dropped by caller. */
int pend_detach(struct pending *p, int writer, int *h_active, int *writers_left);
/* Handles attached (writers + readers). */
int pend_users(struct pending *p);
void pend_counts(struct pending *p, int *writers, int *active);
/* Set the handle's active flag; returns the pending's active writer count. */
int pend_set_active(struct pending *p, int *h_active, int on);

static inline int pend_live(const struct pending *p)
{
	return p->epoch == mfs_epoch() &&
	       __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PEND_PENDING;
}

/* ---- notifier and event ring, notify.c ---- */

int notify_init(void);
int notify_start(void);
void notify_stop(void);
/* Queue an entry invalidation; wait_ms > 0 waits (bounded) until sent. */
void notify_inval_entry(uint64_t parent, const char *name, int wait_ms);
void notify_inval_inode(uint64_t ino);
void notify_inval_all(void);
/*
 * Register before a change to (parent, name) that other mounts must see on
 * return (publish, rename, mkdir); then wait, bounded, until its event came
 * back (and, with applied, this mount's invalidation was sent: 1), or cancel
 * if the change failed. NULL (no event stream) is accepted by both and waits
 * for nothing. A handler whose request holds the parent directory locked in
 * the kernel (rename, mkdir, mknod) must not ask for applied: the
 * invalidation needs that lock.
 */
struct ev_expect;
struct ev_expect *notify_expect(uint64_t parent, const char *name);
int notify_expect_wait(struct ev_expect *w, int wait_ms, int applied);
void notify_expect_cancel(struct ev_expect *w);
/* Remember a (parent,name) handed to the kernel with its entry timeout. */
void dcache_note(uint64_t parent, const char *name, double timeout);
size_t dcache_count(void);
/* Per-parent change counter, to shorten replies that raced an event. */
uint64_t dir_change_seq(uint64_t parent);

/* .maru/events ring */
struct ev_reader;
int ring_reader_open(struct ev_reader **out);
void ring_reader_close(struct ev_reader *r);
/* Blocks until data; -EINTR when interrupted, 0 on shutdown. */
void ring_reader_read(fuse_req_t req, struct ev_reader *r, size_t size);
void ring_reader_poll(fuse_req_t req, struct ev_reader *r, struct fuse_pollhandle *ph);

/* ---- .maru/ (virt.c) ---- */

int virt_lookup(uint64_t parent, const char *name, struct fuse_entry_param *e);
int virt_getattr(uint64_t ino, struct stat *st);
void virt_open(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi);
void virt_read(fuse_req_t req, struct fuse_file_info *fi, size_t size, off_t off);
void virt_release(struct fuse_file_info *fi);
void virt_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
void virt_readdir(fuse_req_t req, off_t off, size_t size);

/* ---- xattrs (xattr.c) ---- */

void xattr_get(fuse_req_t req, uint64_t ino, const char *name, size_t size);
void xattr_set(fuse_req_t req, uint64_t ino, const char *name, const char *value,
	       size_t size, int flags);
void xattr_list(fuse_req_t req, uint64_t ino, size_t size);
void xattr_remove(fuse_req_t req, uint64_t ino, const char *name);

/* ---- zero-copy ioctls (ioctl.c; the handle side in ops.c) ---- */

/* The file behind an open handle, pinned for one ioctl. */
struct zc_ref {
	struct maru_file *file;
	struct pending *p;	/* rw read-held and a ref taken; NULL: a lease */
	int pending;		/* file is a pending version */
	int writable;		/* and this handle may write it */
};

void ioctl_handle(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, struct fuse_file_info *fi,
		  unsigned int flags, const void *in, size_t in_size, size_t out_size);
/*
 * Pin the handle's file (0, or -errno). want_write: its live pending
 * (copied on write if it was published), marked written, and one hold taken:
 * flushes do not publish while holds remain; a release with holds left
 * publishes nothing.
 */
int handle_zc_get(struct fuse_file_info *fi, int want_write, struct zc_ref *z);
void handle_zc_put(struct zc_ref *z);
/* Drop one hold; -EINVAL if there is none. */
int handle_zc_unhold(struct fuse_file_info *fi);

/* ---- shared helpers (ops.c) ---- */

void attr_to_stat(const struct maru_attr *a, struct stat *st);
/* Attributes of ino with this mount's pending size overlaid. */
int node_getattr(uint64_t ino, struct maru_attr *a);
/* libmaru errors as FUSE replies: ESTALE on handles -> EIO. */
int io_errno(int rc);
void ops_init(struct fuse_lowlevel_ops *ops);
/* After the session loop: free the handles whose RELEASE never came. */
void ops_release_all(void);
/* pin.c: leases (or pending readers) taken at LOOKUP for the VFS's retry after a stale open. */
void pin_want(uint64_t parent, const char *name);
int pin_wanted(uint64_t parent, const char *name);
/* f: a lease; or p: a pending with a reader attached and a ref (ops.c's
 * pend_unpin() undoes both). pin_take: 1 when there was a pin for ino. */
void pin_put(uint64_t ino, struct maru_file *f, struct pending *p);
int pin_take(uint64_t ino, struct maru_file **f, struct pending **p);
void pend_unpin(struct pending *p);
void pin_expire(void);
void pin_drop_all(void);
unsigned int pin_count(void);

/* Prometheus text of marufs's own counters appended to buf at *pos. */
void stats_append(char **buf, size_t *len, size_t *pos);

#endif
