/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/dir.h: the pool directory, the single source of truth of
 * marud: namespace directories, names bound to immutable published
 * versions, pending versions owned by a session, leases, the LRU of
 * evictable versions, the event log and exact byte accounting. It owns the
 * allocator (alloc.h) and never touches pool memory itself, except through
 * the copy callback given at creation (used by CREATE_COPY and zero-fill).
 * The implementation is the files of daemon/dir/, one concern each (dir_priv.h).
 * Warm restart is daemon/persist/'s: the directory calls into it
 * (persist.h) and hands it a table to call back through (see the end of
 * this file); it never calls the directory by name.
 *
 * Thread-safety: one mutex inside struct dir guards everything; every dir_*
 * function takes it once and returns without it (a plain call with a copy
 * or zero-fill to do takes it twice and copies in between, unlocked: it
 * never copies pool bytes under the lock). Nothing here blocks on
 * I/O, so callers may do bulk copies in pool memory outside it: the extents
 * of a version a session holds (lease or pending) never move or change while
 * held (a pending version's list only grows at its tail or is trimmed by its
 * owner). The *_ext calls hand those extents back with the call's result,
 * so a request takes the lock once; the *_begin / dir_fill_done pairs run
 * CREATE_COPY and zero-fills outside the lock.
 *
 * Invariants (checked by dir_check()):
 *   free + used + pending + orphaned == capacity
 *   used      = bytes reserved by published versions bound to a name
 *   pending   = bytes reserved by pending versions
 *   orphaned  = bytes of unlinked/replaced/evicted versions still leased
 *   evictable = used bytes of versions with no lease and not ".tmp"-named
 * Ids: one 64-bit counter for directories and versions, root = 1, never reused.
 */
#ifndef MARUD_DIR_H
#define MARUD_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

#define DIR_ROOT_ID 1ULL

enum dir_eviction {
	DIR_EVICT_LRU = 0,
	DIR_EVICT_NONE = 1,
};

/* Same values as enum maru_state. */
enum dir_state {
	DIR_ST_DIR = 1,
	DIR_ST_PENDING = 2,
	DIR_ST_PUBLISHED = 3,
	DIR_ST_ORPHANED = 4,
};

/* Same values as enum maru_event_type. */
enum dir_event_type {
	DEV_PUBLISH = 1,
	DEV_REPLACE = 2,
	DEV_UNLINK = 3,
	DEV_EVICT = 4,
	DEV_MKDIR = 5,
	DEV_RMDIR = 6,
	DEV_RENAME = 7,
	DEV_SETATTR = 8,
	DEV_SYMLINK = 9,
	DEV_LINK = 10,
	DEV_MKNOD = 11,
	DEV_OVERFLOW = 100,
};

struct dir;
struct dir_session;

/*
 * Copy or zero pool bytes (src == NULL: zero). Only dir_fill_run() calls
 * it, never with the dir lock held: the plain calls that copy or zero
 * (dir_create with COPY, dir_truncate, dir_wrote and their *_ext forms)
 * are a *_begin, dir_fill_run() and dir_fill_done() in one go.
 */
typedef void (*dir_copy_fn)(void *arg, const struct extent_list *dst, uint64_t dst_off,
			    const struct extent_list *src, uint64_t src_off, uint64_t len);

struct dir_opts {
	struct alloc *alloc;		/* owned by the caller, outlives dir */
	enum dir_eviction eviction;
	uint32_t event_ring;		/* events kept for subscribers (default 65536) */
	dir_copy_fn copy;		/* required */
	void *copy_arg;
	/* Limits per session (0 = unlimited). */
	uint32_t max_leases;
	uint64_t max_pending_bytes;
	/* TTL pins (pinver.c): pinned bytes allowed in the pool (0: no pin is
	 * granted) and the longest pin in seconds (longer ones are clamped). */
	uint64_t pin_max_bytes;
	uint32_t pin_max_seconds;
	/* Optional: told of freed bytes before they can be reused (retire.c). */
	void (*retire)(void *arg, uint64_t off, uint64_t len);
	void *retire_arg;
};

struct dir_attr {
	uint64_t ino, parent, size, reserved;
	uint64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t xxh3;
	uint32_t mode, uid, gid, nlink;	/* nlink: names bound to the version */
	uint32_t state, leases;
	uint32_t rdev;			/* device nodes */
};

struct dir_setattr {
	uint32_t mask;		/* SETATTR_* of proto.h */
	uint32_t mode, uid, gid;
	uint64_t atime_ns, mtime_ns;
};

struct dir_stats {
	uint64_t capacity, free, used, pending, orphaned, evictable;
	uint64_t names, dirs, versions;	/* versions: every live version */
	uint64_t leases, sessions;
	uint64_t publishes, replaces, unlinks, evictions, evicted_bytes;
	uint64_t creates, abandons, lease_grants, enospc;
	uint64_t event_seq;
	uint64_t block;
	/* journal checkpoints (persist/ckpt.c): under the lock, by a forked child,
	 * failed in the background; the longest lock hold one took; 1 while a
	 * background one is under way */
	uint64_t ckpt_sync, ckpt_bg, ckpt_failed, ckpt_hold_ns, ckpt_running;
	/* TTL pins (pinver.c): bytes and versions pinned now; pins that ran
	 * out; pins refused over a cap */
	uint64_t pinned_bytes, pins, pin_expired, pin_refused;
};

struct dir_event {
	uint64_t seq, time_ns;
	uint32_t type;
	uint64_t origin;	/* dir_session_id() of the session that made it, 0: none */
	uint64_t ino, parent, parent2;
	char name[256], name2[256];
	char path[4096], path2[4096];
};

int dir_new(const struct dir_opts *opts, struct dir **out);
/* Frees every session, version and name; gives extents back to the allocator. */
void dir_destroy(struct dir *d);

/* ---- sessions ---- */

int dir_session_new(struct dir *d, struct dir_session **out);
/* Release every lease and abandon every pending version, then free. */
void dir_session_end(struct dir *d, struct dir_session *s);
uint64_t dir_session_id(const struct dir_session *s);

/* ---- namespace ---- (names: nlen bytes, not NUL-terminated) */

int dir_mkdir(struct dir *d, uint64_t parent, const char *name, size_t nlen,
	      uint32_t mode, uint32_t uid, uint32_t gid, struct dir_attr *out);
/* -ENOTEMPTY, -ENOTDIR, -ENOENT; -EBUSY for the root. */
int dir_rmdir(struct dir *d, uint64_t parent, const char *name, size_t nlen);
/* Session s may be NULL; with s, its pending version of the name wins. */
int dir_lookup(struct dir *d, struct dir_session *s, uint64_t parent,
	       const char *name, size_t nlen, struct dir_attr *out);
/* Directories, published, orphaned and (s's own) pending versions. */
int dir_getattr(struct dir *d, struct dir_session *s, uint64_t ino, struct dir_attr *out);
int dir_setattr(struct dir *d, struct dir_session *s, uint64_t ino,
		const struct dir_setattr *sa, struct dir_attr *out);
/*
 * Rebind. Moves the published version (or directory) and retargets s's
 * pending versions of oldname. NOREPLACE: -EEXIST if newname is bound.
 * Replacing a directory with a file or vice versa: -EISDIR / -ENOTDIR;
 * over a non-empty directory: -ENOTEMPTY; into its own subtree: -EINVAL.
 */
int dir_rename(struct dir *d, struct dir_session *s, uint64_t oldparent,
	       const char *oldname, size_t oldlen, uint64_t newparent,
	       const char *newname, size_t newlen, uint32_t flags);
/*
 * dir_rename, and *seq (if not NULL) = the seq of the DEV_RENAME it pushed,
 * 0 when it pushed none: only s's pending version moved, old == new, or
 * both names bind one version (POSIX: nothing happens).
 */
int dir_rename_ev(struct dir *d, struct dir_session *s, uint64_t oldparent,
		  const char *oldname, size_t oldlen, uint64_t newparent,
		  const char *newname, size_t newlen, uint32_t flags, uint64_t *seq);
/*
 * -ENOENT if neither a published version nor s's pending has the name;
 * -EISDIR. A version with other names (hard links) keeps them.
 */
int dir_unlink(struct dir *d, struct dir_session *s, uint64_t parent,
	       const char *name, size_t nlen);

struct dir_dirent {
	uint64_t ino, cookie;
	uint32_t mode, state;
	const char *name;
	size_t nlen;
};
/* Non-zero from cb stops the walk. */
typedef int (*dir_readdir_cb)(void *arg, const struct dir_dirent *de);
/*
 * Entries of dir with cookie > `cookie`, ascending, at most max; includes s's
 * pending files (s may be NULL). *eof = 1 when no more entries follow.
 * O(log n + returned).
 */
int dir_readdir(struct dir *d, struct dir_session *s, uint64_t dir, uint64_t cookie,
		uint32_t max, dir_readdir_cb cb, void *arg, int *eof);
/*
 * Is id inside the subtree of directory root (root itself included)?
 * DIR_WITHIN_YES, DIR_WITHIN_NO, DIR_WITHIN_UNNAMED (a version with no name
 * now: orphaned, or pending and unlinked; its holder alone can reach it),
 * or -ENOENT. within.c; scoped sessions (daemon/tenant.h) ask it.
 */
enum { DIR_WITHIN_NO = 0, DIR_WITHIN_YES = 1, DIR_WITHIN_UNNAMED = 2 };
int dir_within(struct dir *d, uint64_t id, uint64_t root);
/* 1 if bound (published file or directory), 0 if not, -errno. */
int dir_exists(struct dir *d, uint64_t parent, const char *name, size_t nlen);
struct dir_name {
	const char *name;
	size_t nlen;
};
/*
 * dir_exists of n names under parent in one lock hold: yes[i] = 1 if bound,
 * else 0 (a missing or non-directory parent too). 0, or the first other
 * -errno (a bad name), with yes[] set up to that name.
 */
int dir_exists_n(struct dir *d, uint64_t parent, const struct dir_name *names,
		 uint32_t n, uint8_t *yes);

/* ---- links and special files (link.c) ----
 *
 * A hard link binds one more name to a published version: every name
 * shows the same ino, nlink counts them, unlinking one keeps the others,
 * leases hold the version whatever happens to its names, and eviction of
 * the version removes all of its names at once. A new version published
 * under one of the names rebinds that name only (write-once: the others
 * keep the old version). Symlinks and special files are published
 * versions with no pool memory, never evicted.
 */
/* -ENOENT unless ino is a published version; -EPERM for a directory; -EEXIST. */
int dir_link(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t parent,
	     const char *name, size_t nlen, struct dir_attr *out);
/* target: tlen bytes, 1..PROTO_PATH_MAX-1, no NUL (-ENAMETOOLONG, -EINVAL). */
int dir_symlink(struct dir *d, struct dir_session *s, uint64_t parent,
		const char *name, size_t nlen, const char *target, size_t tlen,
		uint32_t uid, uint32_t gid, struct dir_attr *out);
/* mode: S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK | permissions (-EINVAL otherwise). */
int dir_mknod(struct dir *d, struct dir_session *s, uint64_t parent,
	      const char *name, size_t nlen, uint32_t mode, uint32_t rdev,
	      uint32_t uid, uint32_t gid, struct dir_attr *out);
/* Copy a symlink's target into buf; returns its length, -EINVAL if not one, -ERANGE. */
int dir_readlink(struct dir *d, uint64_t ino, char *buf, size_t cap);

/* ---- versions ---- */

#define DIR_CREATE_EXCL 1u
#define DIR_CREATE_COPY 2u
/*
 * New pending version owned by s, targeting parent/name (or, parent == 0,
 * the name from_ino is currently published under: -ESTALE if none).
 * EXCL: -EEXIST if the name is bound (file or dir) or s has a pending one.
 * Name is a directory: -EISDIR. COPY: the version starts as a copy of the
 * currently published bytes (copy callback). size_hint bytes reserved.
 * Returns attrs and (via dir_extents) its extents.
 */
int dir_create(struct dir *d, struct dir_session *s, uint64_t parent,
	       const char *name, size_t nlen, uint64_t from_ino, uint32_t flags,
	       uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size_hint,
	       struct dir_attr *out);
/* Pending of s only (-EPERM otherwise). Reserve >= bytes (evicting if needed). */
int dir_reserve(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t bytes,
		struct dir_attr *out);
/*
 * Pending of s only: set size; growing reserves and zero-fills
 * [old size, size) through the copy callback.
 */
int dir_truncate(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		 struct dir_attr *out);
/*
 * Pending of s only: record that bytes up to `end` were written (size =
 * max(size, end)); zero-fills a hole [size, start) first. -EINVAL if end >
 * reserved.
 */
int dir_wrote(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t start,
	      uint64_t end, struct dir_attr *out);
/*
 * Pending of s only: bind to its target name atomically; size <= reserved
 * (tail reservation freed); the version becomes a lease of s (released by
 * dir_release). The previously bound version becomes orphaned if leased,
 * else is freed. -ENOENT (version abandoned) if the target was unlinked or
 * its directory removed; -EISDIR if a directory took the name.
 */
int dir_publish(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		uint64_t xxh3, struct dir_attr *out, struct dir_attr *dir_out);
int dir_abandon(struct dir *d, struct dir_session *s, uint64_t ino);
/* Lease the published version of parent/name (or version ino if still bound). */
int dir_open(struct dir *d, struct dir_session *s, uint64_t parent, const char *name,
	     size_t nlen, uint64_t ino, struct dir_attr *out);
/* Drop one lease of s on ino (-EINVAL if s holds none). */
int dir_release(struct dir *d, struct dir_session *s, uint64_t ino);
/* Leases s holds on ino (the rdma rights end with the last one). */
uint32_t dir_lease_count(struct dir *d, struct dir_session *s, uint64_t ino);
/*
 * Copy the extents of a version s holds (lease or own pending) into *out
 * (caller frees with alloc_extent_list_free). -EPERM if s holds no such version.
 * want_write: -EPERM unless it is s's pending version.
 */
int dir_extents(struct dir *d, struct dir_session *s, uint64_t ino, int want_write,
		struct extent_list *out, struct dir_attr *attr);
/* Mark a version recently used (LRU) after a read through a lease. */
void dir_touch(struct dir *d, uint64_t ino);

/* ---- one lock hold per request ----
 *
 * Each *_ext call is its plain call plus, when ext != NULL and the call
 * succeeds, a heap copy of the version's extents into *ext (caller frees
 * with alloc_extent_list_free), taken under the same lock hold. With ext == NULL
 * they are exactly the plain call. On failure *ext is untouched.
 */
/* dir_open + the extents of the version leased. */
int dir_open_ext(struct dir *d, struct dir_session *s, uint64_t parent,
		 const char *name, size_t nlen, uint64_t ino, struct dir_attr *out,
		 struct extent_list *ext);
/* dir_create + the new version's extents (a COPY runs outside the lock). */
int dir_create_ext(struct dir *d, struct dir_session *s, uint64_t parent,
		   const char *name, size_t nlen, uint64_t from_ino, uint32_t flags,
		   uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size_hint,
		   struct dir_attr *out, struct extent_list *ext);
/*
 * dir_reserve + the extents: a writer's "extents covering at least `bytes`,
 * reserving if short" in one call (a no-op reserve when already covered).
 */
int dir_reserve_ext(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t bytes,
		    struct dir_attr *out, struct extent_list *ext);
/* dir_truncate (the zero-fill runs outside the lock) + the extents. */
int dir_truncate_ext(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		     struct dir_attr *out, struct extent_list *ext);
/*
 * hint.c, for hints: the extents of a version s may read (a lease it
 * holds, its own pending version, or a published one), or with want_write
 * only of s's own pending version. -ENOENT unknown, -EPERM not readable.
 */
int dir_hint_extents(struct dir *d, struct dir_session *s, uint64_t ino, int want_write,
		     struct extent_list *out, struct dir_attr *attr);
/* dir_extents(want_write = 0) + dir_touch, in one lock hold. */
int dir_read_extents(struct dir *d, struct dir_session *s, uint64_t ino,
		     struct extent_list *out, struct dir_attr *attr);

/* ---- TTL pins (pinver.c, over ttlpin.c) ----
 *
 * A pin keeps one published version from eviction until a wall-clock
 * deadline. It belongs to the version, not to the name: renaming the
 * version keeps it; replacing the name (a new version published, a rename
 * over it), unlinking it or evicting it after expiry ends it, and the new
 * version starts unpinned. Pins are journalled (JR_PIN) and come back
 * after a restart with the same deadline.
 */
/*
 * seconds > 0: pin ino (a published regular file; a hard link names the
 * same version) for that long, clamped to pin_max_seconds, or give an
 * already pinned version a new deadline. seconds == 0: unpin (no pin: 0).
 * *left (may be NULL): seconds granted, 0 after an unpin. tenant: the
 * caller's tenant (its root directory id) for its cap, 0 none. -ENOENT unknown; -EISDIR
 * directory; -EINVAL symlink or special file; -EBUSY a pending version
 * (not published yet); -ESTALE replaced or unlinked (orphaned);
 * -ENOSPC over the pool's or the tenant's cap (nothing else changes).
 */
int dir_pin(struct dir *d, uint64_t ino, uint32_t seconds, uint64_t tenant, uint32_t *left);
/* Seconds left of ino's pin (0: none); -ENOENT unknown ino, -EISDIR. */
int dir_pin_left(struct dir *d, uint64_t ino, uint32_t *left);
/* Cap the pinned bytes of tenant (its root id, not 0); 0 lifts its cap. */
int dir_pin_tenant_cap(struct dir *d, uint64_t tenant, uint64_t max_bytes);
/* Bytes tenant has pinned now. */
uint64_t dir_pin_tenant_bytes(struct dir *d, uint64_t tenant);

/* ---- bulk copies outside the lock ----
 *
 * A *_begin call does its plain call's directory work under the lock but
 * leaves the copy or zero-fill to the caller, described by a struct
 * dir_fill: copy src [0, len) -- or zeros when src_ino == 0 -- into dst
 * [dst_off, dst_off + len). Until dir_fill_done():
 *  - the source version is pinned by a lease of s (not counted as a grant):
 *    neither eviction nor unlink nor replace frees its bytes (unlinked or
 *    replaced, it stays orphaned until the pin goes);
 *  - the destination (s's pending version f->ino) is "filling": its size is
 *    the old one, and dir_reserve/truncate/wrote/publish/abandon on it and
 *    dir_session_end(s) wait for dir_fill_done() (so never call those from
 *    the thread that owns the fill before it is done).
 * The caller then runs dir_fill_run() (or its own copy over f->dst/f->src)
 * with no lock held, and must call dir_fill_done() after every successful
 * *_begin, even when f->len == 0 (nothing to copy, nothing pinned).
 */
struct dir_fill {
	uint64_t ino;			/* destination: s's pending version */
	uint64_t src_ino;		/* pinned source version; 0: zero-fill */
	struct extent_list dst, src;	/* heap copies, freed by dir_fill_done */
	uint64_t dst_off, len;		/* bytes to fill; len == 0: none */
	uint64_t size;			/* the version's size once filled */
	uint32_t kind;			/* internal: create, truncate or wrote */
};
/*
 * dir_create; with DIR_CREATE_COPY and a published source the copy of its
 * size bytes is left to the caller (size 0 until done). *out: the new
 * version as created (size 0 while a copy is due).
 */
int dir_create_begin(struct dir *d, struct dir_session *s, uint64_t parent,
		     const char *name, size_t nlen, uint64_t from_ino, uint32_t flags,
		     uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size_hint,
		     struct dir_attr *out, struct dir_fill *f);
/* dir_truncate; growing leaves the zero-fill of [old size, size) to the caller. */
int dir_truncate_begin(struct dir *d, struct dir_session *s, uint64_t ino,
		       uint64_t size, struct dir_attr *out, struct dir_fill *f);
/* dir_wrote; a hole [size, start) is left to the caller to zero. */
int dir_wrote_begin(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t start,
		    uint64_t end, struct dir_attr *out, struct dir_fill *f);
/* Run f through the dir's copy callback; takes no lock. */
void dir_fill_run(struct dir *d, const struct dir_fill *f);
/*
 * End a fill: unpin the source, end "filling". err == 0: the version takes
 * its new size (f->size), *out its attributes, and (ext != NULL) *ext takes
 * over f->dst, the version's extents. err != 0 (the copy failed or the
 * caller gave up): a created version is abandoned, a truncated or written
 * one keeps its old size (*out says so); returns err. f's lists are freed
 * either way. -ENOENT/-EPERM if f->ino is no longer s's pending version.
 * With err == 0 and f->len == 0 the begin call already finished: no lock is
 * taken and *out stays as the begin call set it.
 */
int dir_fill_done(struct dir *d, struct dir_session *s, struct dir_fill *f, int err,
		  struct dir_attr *out, struct extent_list *ext);

/* ---- accounting, events ---- */

void dir_stats(struct dir *d, struct dir_stats *out);
/* Verify the invariants above; 0 or -EUCLEAN with a log line saying which. */
int dir_check(struct dir *d);

/*
 * Copy events with seq > after into out (at most max), waiting up to
 * timeout_ms for the first one. Returns the count (0 on timeout). If events
 * after `after` were already dropped from the ring, returns one DEV_OVERFLOW
 * event whose seq is the oldest kept minus one.
 */
int dir_events_wait(struct dir *d, uint64_t after, struct dir_event *out, int max,
		    int timeout_ms);
uint64_t dir_event_seq(struct dir *d);
/* Wake every dir_events_wait() (shutdown). */
void dir_events_kick(struct dir *d);
/*
 * Push a DEV_OVERFLOW event: every subscriber drops all it caches (the
 * memory may have changed under every name).
 */
void dir_events_gap(struct dir *d);

/* ---- warm restart (dir/record.c, dir/replay.c, over daemon/persist/) ----
 *
 * With a struct persist set, every namespace change is also recorded
 * there, under the lock, in the order it happens; publish, mkdir, rename,
 * link, symlink and mknod answer -ENOSPC when even a checkpoint leaves no
 * room for their record. persist/ reaches the directory only through the
 * owner table dir_persist_owner() fills: its lock, a walk of the live
 * items (checkpoints, checksums) and the replay of one record (replay.c).
 */
struct persist;
struct persist_owner;
struct persist_scratch;

/* The table persist_new(), persist_start() take to reach d. */
void dir_persist_owner(struct dir *d, struct persist_owner *out);
/*
 * Start recording into p (NULL: stop). dir_destroy() stops p's checkpoint
 * thread; p itself is freed by its owner after dir_destroy().
 */
void dir_set_persist(struct dir *d, struct persist *p);
/* Scratch directories for persist_check (`marud -n`). */
extern const struct persist_scratch dir_scratch;

#endif
