/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pending.h: this mount's pending (write) versions (pending.c). A struct
 * pending is shared by every handle that writes one name; it is opaque here:
 * its state machine, its one "readable?" test, its size and its name table
 * are pending.c's alone (its one "readable?" test: the file is still open
 * and of this pool generation).
 */
#ifndef MARUFS_PENDING_H
#define MARUFS_PENDING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inode.h"
#include "mount.h"

struct pending;
struct ptab;

/* How the inode table holds pendings linked to inodes. */
extern const struct itab_payload_ops pend_payload_ops;

int ptab_new(struct ptab **out);
void ptab_free(struct ptab *pt);

/* ---- references, names ---- */

/* New pending owning f (one ref for the caller, no handle attached). */
struct pending *pend_new(struct mfs *m, struct maru_file *f, uint64_t parent,
			 const char *name, uint64_t src_ino);
/*
 * Register a fresh pending owning f under its name, or, when another thread
 * of this mount registered a live one there first, return that one (ref
 * taken; f's is dropped). modified: its content already differs from what
 * it started as (a create, an O_TRUNC rewrite). NULL: out of memory.
 */
struct pending *pend_adopt(struct mfs *m, struct maru_file *f, uint64_t parent,
			   const char *name, uint64_t src_ino, int modified);
/* Live pending for (parent,name) in this mount (ref taken), or NULL. */
struct pending *pend_find(struct mfs *m, uint64_t parent, const char *name);
/* The pending linked to inode ino (ref taken), or NULL; live: only if live. */
struct pending *pend_of_ino(struct mfs *m, uint64_t ino, int live);
void pend_link_ino(struct mfs *m, uint64_t ino, struct pending *p);
void pend_get(struct pending *p);
void pend_put(struct pending *p);
void pend_rename(struct mfs *m, uint64_t op, const char *on, uint64_t np, const char *nn);
/* Name unlinked (or renamed over): its pending must never be published. */
void pend_detach_name(struct mfs *m, uint64_t parent, const char *name);
size_t pend_count(struct mfs *m);
/* Copy parent/name; -ENOENT if p has no name. */
int pend_where(struct pending *p, uint64_t *parent, char *name, size_t len);
uint64_t pend_ino(const struct pending *p);
int pend_has_name(struct pending *p);

/* ---- state ---- */

/* Writable: a pending version of this pool generation, not failed. */
int pend_live(struct pending *p);
/* Of an older pool generation: every use fails with EIO. */
int pend_stale(const struct pending *p);
/* Attributes (size included) of what p holds: THE size of a pending file. */
int pend_attr(struct pending *p, struct maru_attr *a);
/* Attributes of inode ino as this mount sees it (its pending's overlaid). */
int pend_ino_attr(struct mfs *m, uint64_t ino, struct maru_attr *a);

/* ---- handles ---- */

/*
 * A writer handle attaches while p is live (-EAGAIN if it is not any more).
 * direct: its writes bypass the kernel's page cache (a direct_io handle).
 */
int pend_attach_writer(struct pending *p, int direct, int *h_active);
/* A reader attaches while p is readable (-EAGAIN if not); takes a ref. */
int pend_attach_reader(struct pending *p, int *h_active);
/* A direct_io handle wrote p: the kernel's page cache has none of it. */
void pend_direct_wrote(struct pending *p);
/* Handles on p whose kernel file caches pages: readers, writers not direct
 * (a direct writer must drop those pages of what it overwrote). */
int pend_cached_users(struct pending *p);
/* Set the handle's active flag; returns the pending's active writer count. */
int pend_set_active(struct pending *p, int *h_active, int on);
/*
 * A handle lets go of p and of its ref: a writer's release publishes if
 * still due; the last handle closes the file. failed: never publish (a
 * zero-copy writer that died with its mapping, shutdown).
 */
void pend_release(struct pending *p, int writer, int direct, int *h_active, int failed);
/*
 * A writer moves from old to p (copy-on-write): returns the handles left on
 * old, to hand to pend_let_go() with the handle's old ref once the handle's
 * lock is dropped; -EAGAIN: p is not live, the writer stays on old.
 */
int pend_switch_writer(struct pending *old, struct pending *p, int direct, int *h_active);
void pend_let_go(struct pending *old, int left);
/* A pin on a pending (pin.c) ends unused: detach its reader, drop its ref. */
void pend_unpin(struct pending *p);

/* ---- I/O ---- */

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
/* Mark written (zero-copy writers write bytes marufs never sees). */
void pend_touched(struct pending *p, int wrote);
/* Written through a zero-copy mapping: the kernel's pages are not its bytes. */
void pend_mapped(struct pending *p);
/* Never publish p: a write failed in it. */
void pend_fail(struct pending *p, int err);
/* Truncate if live (-ESTALE if not); wrote: counts as data written. */
int pend_truncate(struct pending *p, uint64_t size, int wrote);
/* Read while readable; -ENOENT when not. */
ssize_t pend_read(struct pending *p, char *buf, size_t size, off_t off);
int pend_sync(struct pending *p);
/* user.maru.size: reserve bytes in a live pending (-EPERM if not live). */
int pend_reserve(struct pending *p, uint64_t bytes);
/* fn(arg, file) while p is readable; -ENOENT when not. */
int pend_with_file(struct pending *p, int (*fn)(void *arg, struct maru_file *f), void *arg);
void pend_set_killed(struct pending *p, int killed);
/* The last active writer flushed: publish (or abandon); what close() says. */
int pend_finish(struct pending *p, int at_flush);
/*
 * Zero-copy: p's file read-locked (end with pend_io_end) with its kind, or
 * -EIO (older generation) / -ENOENT (no file any more).
 */
int pend_zc_begin(struct pending *p, int writer, struct maru_file **f, int *pending,
		  int *writable);
/* A pending of a private copy (rewrite.c): unnamed, modified, never published. */
struct pending *pend_new_detached(struct mfs *m, struct maru_file *f, uint64_t parent,
				  uint64_t src_ino);

#endif
