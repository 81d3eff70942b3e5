/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pending_priv.h: the inside of the pending version (the object of
 * pending.c, whose header draws its states), shared by the files that make
 * it up and by nothing else: pending.c (refs, names, states), pendlife.c
 * (handles attached, finish, publish, close), pendio.c (I/O under p->rw),
 * rewrite.c (where versions come from) and pendslot.c (a handle's seat).
 */
#ifndef MARUFS_PENDING_PRIV_H
#define MARUFS_PENDING_PRIV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "htab.h"
#include "mount.h"
#include "pending.h"

/* Slots the name table starts with: few files are written at once, and it
 * doubles (htab.h, the table marud and marufs share). */
#define PTAB_MIN	64u

/*
 * What became of the version; moved only by pend_move(). A version of an
 * older pool generation is stale whatever its state (pend_stale()).
 */
enum pend_state {
	PEND_WRITING = 0,	/* a pending version that publishes when done */
	PEND_ORPHANED,		/* its name was removed: writable, never published */
	PEND_FAILED,		/* a write failed: never published, writes refused */
	PEND_PUBLISHED,		/* file is now a lease on the published version */
	PEND_ABANDONED,		/* never published; file kept for handles left */
	PEND_NSTATES
};

/* Marks on the content, set in any state; they decide what finishing means. */
#define PM_MODIFIED	0x01u	/* differs from what it started as */
#define PM_WROTE	0x02u	/* data came through a handle (not just O_TRUNC) */
#define PM_MAPPED	0x04u	/* a zero-copy mapping wrote bytes the kernel never saw */
#define PM_DIRECT	0x08u	/* a direct_io write did: the kernel cached none of them */
#define PM_KILLED	0x10u	/* the last flush came from a task dying of a signal */

/*
 * refs counts handles, pins and inode-table links; writers and readers
 * count the handles attached; active counts writer handles not flushed
 * since they last opened or wrote.
 */
struct pending {
	struct mfs *m;
	pthread_rwlock_t rw;
	struct maru_file *file;
	uint64_t ino;		/* the pending version id */
	uint64_t src_ino;	/* version rewritten (0 for a new file) */
	uint64_t epoch;
	int state;		/* enum pend_state: pend_move() only (read racily ok) */
	int err;		/* -errno that failed it */
	unsigned int marks;	/* PM_*, atomic */
	int refs;
	/* under pt->lock: */
	uint64_t parent;
	char *name;
	int writers, readers, active;
	int cached;		/* handles that go through the kernel's page cache
				 * of the inode: readers, writers not direct_io */
	int in_table;		/* in pt->names: parent and name stay put */
};

struct ptab {
	pthread_mutex_t lock;
	struct htab names;	/* struct pending by (parent, name) */
	size_t count;
};

/*
 * Move p to state to: 0, or -EINVAL when the move is not one the diagram
 * in pending.c has (p is left as it was). Safe against concurrent moves.
 */
int pend_move(struct pending *p, int to);
int pend_state_of(const struct pending *p);
/* Is from -> to an edge of the diagram? */
int pend_move_legal(int from, int to);
const char *pend_state_name(int state);

void pend_mark(struct pending *p, unsigned int marks);
void pend_unmark(struct pending *p, unsigned int marks);
int pend_marked(const struct pending *p, unsigned int mark);

/* p's bytes are readable (its file open, its generation current); p->rw held. */
int pend_readable_locked(const struct pending *p);
/* Off the name table (if on it). */
void pend_unregister(struct pending *p);
/* A new pending owning f (one ref for the caller, no handle attached). */
struct pending *pend_new(struct mfs *m, struct maru_file *f, uint64_t parent,
			 const char *name, uint64_t src_ino);

/* ---- pending.c: state, names ---- */

/* Writable: a pending version of this pool generation, writing or orphaned. */
int pend_live(struct pending *p);
/* Of an older pool generation: every use fails with EIO. */
int pend_stale(const struct pending *p);
/*
 * Never publish p: what (a write, a sync, a truncate...) failed in it with
 * err (FAILED, if it was live). The first failure is logged with the file's
 * name; close and fsync then return err.
 */
void pend_fail(struct pending *p, int err, const char *what);
/* The error that failed p (FAILED), else 0. */
int pend_failed_err(const struct pending *p);
/*
 * Does a failed call with err leave the version in a state nobody knows
 * (a transfer, a timeout, a lost session)? Refusals of the request itself
 * (EINVAL, EFBIG, EPERM, EBADF, EOPNOTSUPP) leave it as it was.
 */
int pend_err_poisons(int err);
/* Copy parent/name; -ENOENT if p has no name. */
int pend_where(struct pending *p, uint64_t *parent, char *name, size_t len);
int pend_has_name(struct pending *p);

/* ---- pendlife.c: handles, finish ---- */

/* Handles on p whose kernel file caches pages: readers, writers not direct
 * (a direct writer must drop those pages of what it overwrote). */
int pend_cached_users(struct pending *p);
/* Set the handle's active flag; returns the pending's active writer count. */
int pend_set_active(struct pending *p, int *h_active, int on);
/*
 * A writer moves from old to p (copy-on-write): returns the handles left on
 * old, to hand to pend_let_go() with the handle's old ref once the handle's
 * lock is dropped; -EAGAIN: p is not live, the writer stays on old.
 */
int pend_switch_writer(struct pending *old, struct pending *p, int direct, int *h_active);
void pend_let_go(struct pending *old, int left);
/* The last active writer flushed: publish (or abandon); what close() says. */
int pend_finish(struct pending *p, int at_flush);

/* ---- pendio.c: I/O ---- */

/*
 * Begin writing p: 0 with p read-locked (end with pend_io_end), or -EIO
 * (older generation), the error that failed it, or -EAGAIN (published or
 * abandoned: the writer needs a new version).
 */
int pend_io_begin(struct pending *p);
void pend_io_end(struct pending *p);
/* Under pend_io_begin: */
ssize_t pend_write(struct pending *p, const char *buf, size_t size, off_t off);
int pend_truncate_held(struct pending *p, uint64_t size, struct maru_attr *a);
int pend_fallocate_held(struct pending *p, uint64_t end);
struct maru_file *pend_file_held(struct pending *p);
/* Written through a zero-copy mapping: the kernel's pages are not its bytes. */
void pend_mapped(struct pending *p);
/* A direct_io handle wrote p: the kernel's page cache has none of it. */
void pend_direct_wrote(struct pending *p);
/* Truncate if live (-ESTALE if not); wrote: counts as data written. */
int pend_truncate(struct pending *p, uint64_t size, int wrote);
/* Read while readable; -ENOENT when not. */
ssize_t pend_read(struct pending *p, char *buf, size_t size, off_t off);
int pend_sync(struct pending *p);
void pend_set_killed(struct pending *p, int killed);
/*
 * Zero-copy: p's file read-locked (end with pend_io_end) with its kind, or
 * -EIO (older generation) / -ENOENT (no file any more).
 */
int pend_zc_begin(struct pending *p, int writer, struct maru_file **f, int *pending,
		  int *writable);

#endif
