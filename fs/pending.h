/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pending.h: the pending version, marufs's open-file object (pending.c
 * draws its states; pendlife.c, pendio.c, rewrite.c and pendslot.c are the
 * rest of it). A struct pending is one new version of a file being
 * written, shared by every handle that writes one name; it is opaque here.
 * handle.c holds one through a struct pend_slot and calls the pend_slot_*
 * functions only; ns.c asks about names and inodes; what a pending reads,
 * how big it is and whether it is readable at all are decided inside.
 */
#ifndef MARUFS_PENDING_H
#define MARUFS_PENDING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inode.h"
#include "mount.h"

struct pending;
struct ptab;

/* ---- the mount's table (mfs.c, metrics.c) ---- */

/* How the inode table holds pendings linked to inodes. */
extern const struct itab_payload_ops pend_payload_ops;
int ptab_new(struct ptab **out);
void ptab_free(struct ptab *pt);
size_t pend_count(struct mfs *m);

/* ---- names and inodes (ns.c, xattr.c) ---- */

/* Live pending for (parent,name) in this mount (ref taken), or NULL. */
struct pending *pend_of_name(struct mfs *m, uint64_t parent, const char *name);
/* The same, with *a overlaid by what it holds (its size) when it has bytes. */
struct pending *pend_lookup(struct mfs *m, uint64_t parent, const char *name,
			    struct maru_attr *a);
/* The pending linked to inode ino (ref taken), or NULL; live: only if live. */
struct pending *pend_of_ino(struct mfs *m, uint64_t ino, int live);
/* The version id of inode ino's live pending here, or 0. */
uint64_t pend_live_version(struct mfs *m, uint64_t ino);
void pend_link_ino(struct mfs *m, uint64_t ino, struct pending *p);
void pend_get(struct pending *p);
void pend_put(struct pending *p);
uint64_t pend_ino(const struct pending *p);
/* Attributes (size included) of what p holds: THE size of a pending file. */
int pend_attr(struct pending *p, struct maru_attr *a);
/* Attributes of inode ino as this mount sees it (its pending's overlaid). */
int pend_ino_attr(struct mfs *m, uint64_t ino, struct maru_attr *a);
/* Name unlinked: its pending is orphaned, never published. */
void pend_unlinked(struct mfs *m, uint64_t parent, const char *name);
/* Renamed: a pending at the target is orphaned, the source's moves there. */
void pend_renamed(struct mfs *m, uint64_t op, const char *on, uint64_t np, const char *nn);
/* truncate(2) with no writable handle: this mount's pending or a new version. */
int pend_truncate_ino(struct mfs *m, uint64_t ino, uint64_t size, struct maru_attr *a);
/*
 * A pin's hold on the name's pending, version ino: a reader attached and
 * its ref (both the pin's, pin.h), or NULL when it is not that version.
 */
struct pending *pend_pin_name(struct mfs *m, uint64_t parent, const char *name,
			      uint64_t ino);
/* A pin on a pending (pin.c) ends unused: detach its reader, drop its ref. */
void pend_unpin(struct pending *p);
/* user.maru.size: reserve bytes in a live pending (-EPERM if not live). */
int pend_reserve(struct pending *p, uint64_t bytes);
/* fn(arg, file) while p is readable; -ENOENT when not. */
int pend_with_file(struct pending *p, int (*fn)(void *arg, struct maru_file *f), void *arg);

/* ---- a handle's seat on a pending (handle.c) ---- */

/* Embedded in a handle; its fields are pendslot.c's. */
struct pend_slot {
	struct mfs *m;
	pthread_mutex_t lock;	/* p, active */
	struct pending *p;	/* ref held; NULL: none (a leased reader) */
	uint64_t ino;		/* the kernel's inode */
	uint64_t epoch;
	int writer, direct, active;
};

void pend_slot_init(struct pend_slot *s, struct mfs *m, uint64_t ino, int writer);
/*
 * Writer open of s->ino: join or start its pending, truncate if O_TRUNC.
 * *direct: the handle is direct_io (write-only, or the kernel's inode is
 * not the version served). 0 or -errno (-ESTALE: look the name up again).
 */
int pend_slot_open(struct pend_slot *s, int flags, int *direct);
/* A create of (parent, name): its pending, attached; *a its attributes. */
int pend_slot_create(struct pend_slot *s, uint64_t parent, const char *name, mode_t mode,
		     uid_t uid, gid_t gid, int flags, struct maru_attr *a, int *direct);
/*
 * Reader open: take over pinned (a pin's reader and ref), or attach to this
 * mount's pending of s->ino; -ENOENT: none, the handle reads a lease.
 */
int pend_slot_reader(struct pend_slot *s, struct pending *pinned);
/* The handle goes; failed: never publish. 1 when it had a pending. */
int pend_slot_release(struct pend_slot *s, int failed);
/* -ENOENT: nothing to read here (*stale: because of an older generation). */
ssize_t pend_slot_read(struct pend_slot *s, char *buf, size_t size, off_t off, int *stale);
/* Writes copy on write into a new version if s's was published meanwhile. */
ssize_t pend_slot_write(struct pend_slot *s, const char *buf, size_t size, off_t off);
int pend_slot_truncate(struct pend_slot *s, uint64_t size, struct maru_attr *a);
int pend_slot_fallocate(struct pend_slot *s, uint64_t end);
/* FLUSH of a writer: the last active one publishes (killed: never). */
int pend_slot_flush(struct pend_slot *s, int killed);
int pend_slot_sync(struct pend_slot *s);
/* Attributes of s's pending; -ENOENT: none, or no bytes. */
int pend_slot_attr(struct pend_slot *s, struct maru_attr *a);
/* The version id of s's pending, 0 if none. */
uint64_t pend_slot_version(struct pend_slot *s);
/*
 * Zero-copy: the file of s's pending read-locked in *held (end with
 * pend_zc_end) and its kind; want_write: the live one (copied on write),
 * marked written through a mapping. -ENOENT: no pending file.
 */
int pend_slot_zc_begin(struct pend_slot *s, int want_write, struct maru_file **f,
		       int *pending, int *writable, struct pending **held);
void pend_zc_end(struct pending *p);

/* ---- lower level: pin.c's pins and the unit tests ---- */

/*
 * Register a fresh pending owning f under its name, or, when another thread
 * of this mount registered a live one there first, return that one (ref
 * taken; f's is dropped). modified: its content already differs from what
 * it started as (a create, an O_TRUNC rewrite). NULL: out of memory.
 */
struct pending *pend_adopt(struct mfs *m, struct maru_file *f, uint64_t parent,
			   const char *name, uint64_t src_ino, int modified);
/*
 * A writer handle attaches while p is live (-EAGAIN if it is not any more).
 * direct: its writes bypass the kernel's page cache (a direct_io handle).
 */
int pend_attach_writer(struct pending *p, int direct, int *h_active);
/* A reader attaches while p is readable (-EAGAIN if not); takes a ref. */
int pend_attach_reader(struct pending *p, int *h_active);
/*
 * A handle lets go of p and of its ref: a writer's release publishes if
 * still due; the last handle closes the file. failed: never publish (a
 * zero-copy writer that died with its mapping, shutdown).
 */
void pend_release(struct pending *p, int writer, int direct, int *h_active, int failed);

#endif
