/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pendslot.c: a handle's seat on the pending version (pending.c), all
 * that handle.c sees of it. A writer's seat joins or starts the name's
 * pending at open or create (rewrite.c finds or makes it); a write on a
 * seat whose pending was published or abandoned meanwhile moves it to a new
 * one: copy-on-write. A reader's seat shares this mount's pending of the
 * inode, or takes over a pin's. A descriptor open for writing only is
 * direct_io (write_only()).
 *
 * Locks: s->lock guards s->p and s->active; it is taken after the handle's
 * own lock and before any lock of the pending.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "notify.h"
#include "pending_priv.h"
#include "ratelog.h"
#include "rewrite.h"

#define OPEN_TRIES		8
#define COW_TRIES		4

void pend_slot_init(struct pend_slot *s, struct mfs *m, uint64_t ino, int writer)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->ino = ino;
	s->writer = writer;
	s->epoch = mfs_id_epoch(m, ino);
	pthread_mutex_init(&s->lock, NULL);
}

/* s->p with a ref for the caller, or NULL. */
static struct pending *slot_get(struct pend_slot *s)
{
	struct pending *p;

	pthread_mutex_lock(&s->lock);
	p = s->p;
	if (p)
		pend_get(p);
	pthread_mutex_unlock(&s->lock);
	return p;
}

/* Let go of s's pending; only the handle's last user gets here. */
static void drop(struct pend_slot *s, int failed)
{
	struct pending *p = s->p;

	if (p) {
		s->p = NULL;
		pend_release(p, s->writer, s->direct, &s->active, failed);
	}
}

int pend_slot_release(struct pend_slot *s, int failed)
{
	int had = s->p != NULL;

	drop(s, failed);
	pthread_mutex_destroy(&s->lock);
	return had;
}

uint64_t pend_slot_version(struct pend_slot *s)
{
	uint64_t v = 0;

	pthread_mutex_lock(&s->lock);
	if (s->p)
		v = pend_ino(s->p);
	pthread_mutex_unlock(&s->lock);
	return v;
}

/* ---- copy-on-write ---- */

/* s's pending was published or abandoned and s writes again: switch it. */
static int slot_cow(struct pend_slot *s, struct pending *old)
{
	struct pending *p;
	int rc, left;

	pthread_mutex_lock(&s->lock);
	if (s->p != old) {
		pthread_mutex_unlock(&s->lock);
		return 0;	/* another thread switched it already */
	}
	rc = rewrite_for_cow(s->m, old, (uint64_t)(uintptr_t)s, &p);
	if (rc < 0) {
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	left = pend_switch_writer(old, p, s->direct, &s->active);
	if (left < 0) {
		pthread_mutex_unlock(&s->lock);
		pend_put(p);
		return 0;	/* published under us already: the caller retries */
	}
	s->p = p;
	pthread_mutex_unlock(&s->lock);
	if (pend_has_name(p))
		pend_link_ino(s->m, s->ino, p);
	pend_put(p);
	pend_let_go(old, left);
	return 0;
}

/*
 * s's live pending locked for I/O (end with unpend) and a ref taken,
 * marking s an active writer; copy-on-write when it is no longer pending.
 */
static int slot_pending(struct pend_slot *s, struct pending **out)
{
	struct pending *p;
	int tries, rc;

	if (!s->writer)
		return -EBADF;
	for (tries = 0; tries < COW_TRIES; tries++) {
		if (s->epoch != mfs_id_epoch(s->m, s->ino)) {
			RATELOG_WARN("write to inode %" PRIu64 ": opened before marud's pool "
				     "generation changed: EIO", s->ino);
			return -EIO;
		}
		pthread_mutex_lock(&s->lock);
		p = s->p;
		pend_get(p);
		rc = pend_io_begin(p);
		if (rc == 0) {
			pend_set_active(p, &s->active, 1);
			pthread_mutex_unlock(&s->lock);
			*out = p;
			return 0;
		}
		pthread_mutex_unlock(&s->lock);
		if (rc == -EAGAIN)
			rc = slot_cow(s, p);
		pend_put(p);
		if (rc < 0)
			return rc;
	}
	RATELOG_WARN("write to inode %" PRIu64 ": each of %d copy-on-write versions was "
		     "published before the write reached it: EIO", s->ino, COW_TRIES);
	return -EIO;
}

static void unpend(struct pending *p)
{
	pend_io_end(p);
	pend_put(p);
}

/* ---- open, create ---- */

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

/* p was published or abandoned under an attached writer: not a failure. */
static int pend_moved_on(struct pending *p)
{
	int st = pend_state_of(p);

	return st == PEND_PUBLISHED || st == PEND_ABANDONED;
}

/* Attach writer s to p (ref the caller's) and truncate if asked. */
static int attach_writer(struct pend_slot *s, struct pending *p, int trunc)
{
	int rc = pend_attach_writer(p, s->direct, &s->active);	/* -EAGAIN: published meanwhile */

	if (rc == 0)
		s->p = p;
	pend_put(p);
	if (rc == 0 && trunc)
		rc = pend_truncate(p, 0, 0);
	return rc;
}

int pend_slot_open(struct pend_slot *s, int flags, int *direct)
{
	struct pending *p;
	int rc = -EIO, tries;

	*direct = 0;
	for (tries = 0; tries < OPEN_TRIES; tries++) {
		rc = rewrite_for_open(s->m, s->ino, !!(flags & O_TRUNC), &p, direct);
		if (rc < 0)
			break;
		s->direct = *direct = *direct || write_only(flags);
		rc = attach_writer(s, p, rc);
		if (rc == 0)
			return 0;
		if (s->p) {
			/* attached but the truncate failed: let go; published
			 * (renamed) meanwhile, the name is free: open again */
			int moved = pend_moved_on(s->p);

			drop(s, 0);
			if (moved) {
				rc = -EAGAIN;
				continue;
			}
			if (io_errno(rc) == EIO)
				RATELOG_WARN("open(O_TRUNC) of inode %" PRIu64 ": truncate: "
					     "%s (EIO)", s->ino, maru_strerror(rc));
			return -io_errno(rc);
		}
	}
	if (rc == -EAGAIN)
		RATELOG_WARN("open for writing of inode %" PRIu64 ": each of %d pendings "
			     "it joined was published first: EIO", s->ino, OPEN_TRIES);
	else if (rc == -EIO)
		RATELOG_WARN("open for writing of inode %" PRIu64 ": EIO", s->ino);
	else if (rc == -ENOENT)
		RATELOG_WARN("open for writing of inode %" PRIu64 ": ENOENT", s->ino);
	return rc == -ESTALE ? -ESTALE : -io_errno(rc == -EAGAIN ? -EIO : rc);
}

/* Attach s to p found for a create (ref the caller's, one kept in *p). */
static int attach_created(struct pend_slot *s, struct pending *p, int trunc,
			  struct maru_attr *a)
{
	int rc;

	pend_get(p);	/* kept to link the inode */
	rc = attach_writer(s, p, trunc);
	if (rc == 0)
		rc = pend_attr(p, a);
	if (rc < 0)
		pend_put(p);
	return rc;
}

int pend_slot_create(struct pend_slot *s, uint64_t parent, const char *name, mode_t mode,
		     uid_t uid, gid_t gid, int flags, struct maru_attr *a, int *direct)
{
	struct pending *p = NULL;
	int rc = -EIO, tries;

	s->direct = *direct = write_only(flags);
	for (tries = 0; tries < OPEN_TRIES; tries++) {
		rc = rewrite_for_create(s->m, parent, name, mode, uid, gid, flags, &p);
		if (rc < 0)
			break;
		rc = attach_created(s, p, rc, a);
		if (rc == 0)
			break;
		if (s->p) {
			/* attached, then failed. Published (renamed by another
			 * writer) between the attach and the truncate or the
			 * attributes: that rename came first and the name is
			 * free, so create again. Else say why. */
			int moved = pend_moved_on(s->p);

			drop(s, 0);
			if (moved) {
				rc = -EAGAIN;
				continue;
			}
			if (io_errno(rc) == EIO)
				RATELOG_WARN("create of %s: %s (EIO)", name, maru_strerror(rc));
			return -io_errno(rc);
		}
		if (rc != -EAGAIN && rc != -ENOENT)
			break;
	}
	if (rc < 0) {
		if (rc == -EAGAIN)
			RATELOG_WARN("create of %s: each of %d pendings it joined was "
				     "published first: EIO", name, OPEN_TRIES);
		else if (rc == -ENOENT)
			/* the directory gone, or a race not understood yet
			 * (engine_lmcache saw this once in ~30 runs) */
			RATELOG_WARN("create of %s in directory %" PRIu64 ": ENOENT (the "
				     "last try was %s)", name, parent,
				     p ? "attaching to this mount's pending" : "creating");
		else if (io_errno(rc) == EIO)
			RATELOG_WARN("create of %s: %s (EIO)", name, maru_strerror(rc));
		return -io_errno(rc == -EAGAIN ? -EIO : rc);
	}
	s->ino = a->ino;
	s->epoch = mfs_id_epoch(s->m, a->ino);
	itab_remember(s->m->tab, a->ino, parent, name);
	pend_link_ino(s->m, a->ino, p);
	pend_put(p);
	return 0;
}

int pend_slot_reader(struct pend_slot *s, struct pending *pinned)
{
	struct pending *p;
	int rc;

	if (pinned) {
		s->p = pinned;	/* the pin's reader attachment and ref are s's now */
		return 0;
	}
	/* this mount is writing the file: read what it wrote */
	p = pend_of_ino(s->m, s->ino, 0);
	if (!p)
		return -ENOENT;
	rc = pend_attach_reader(p, &s->active);
	if (rc == 0)
		s->p = p;
	pend_put(p);
	return rc == 0 ? 0 : -ENOENT;
}

/* ---- I/O ---- */

ssize_t pend_slot_read(struct pend_slot *s, char *buf, size_t size, off_t off, int *stale)
{
	struct pending *p = slot_get(s);
	ssize_t n;

	*stale = 0;
	if (!p)
		return -ENOENT;
	n = pend_read(p, buf, size, off);
	*stale = pend_stale(p);
	pend_put(p);
	return n;
}

/*
 * A direct_io write went around the kernel's page cache: pages other
 * handles cached of what it replaced are dropped before it returns (the
 * kernel drops them before the write, so a read racing it may have cached
 * the old bytes again, and kernels before 6.6 do not drop them at all).
 */
static void direct_wrote(struct pend_slot *s, struct pending *p)
{
	pend_direct_wrote(p);
	if (pend_cached_users(p) > 0)
		notify_inval_data(s->m->nt, s->ino);
}

ssize_t pend_slot_write(struct pend_slot *s, const char *buf, size_t size, off_t off)
{
	struct pending *p;
	ssize_t n;
	int rc;

	rc = slot_pending(s, &p);
	if (rc < 0)
		return rc;
	n = pend_write(p, buf, size, off);
	if (n > 0 && s->direct)
		direct_wrote(s, p);
	unpend(p);
	return n;
}

int pend_slot_truncate(struct pend_slot *s, uint64_t size, struct maru_attr *a)
{
	struct pending *p;
	int rc;

	rc = slot_pending(s, &p);
	if (rc < 0)
		return rc == -ESTALE ? -EIO : rc;
	rc = pend_truncate_held(p, size, a);
	unpend(p);
	return rc;
}

int pend_slot_fallocate(struct pend_slot *s, uint64_t end)
{
	struct pending *p;
	int rc;

	rc = slot_pending(s, &p);
	if (rc < 0)
		return -io_errno(rc);
	rc = pend_fallocate_held(p, end);
	unpend(p);
	return -io_errno(rc);
}

int pend_slot_flush(struct pend_slot *s, int killed)
{
	struct pending *p;
	int active, rc = 0;

	pthread_mutex_lock(&s->lock);
	p = s->p;
	pend_get(p);
	active = pend_set_active(p, &s->active, 0);
	pthread_mutex_unlock(&s->lock);
	/* A killed writer publishes nothing: release abandons its version
	 * unless a writer still alive flushes it later. */
	pend_set_killed(p, killed);
	if (active == 0 && !killed)
		rc = pend_finish(p, 1);
	pend_put(p);
	return rc;
}

int pend_slot_sync(struct pend_slot *s)
{
	struct pending *p;
	int rc;

	if (!s->writer)
		return 0;
	p = slot_get(s);
	rc = pend_sync(p);
	pend_put(p);
	return -io_errno(rc);
}

int pend_slot_attr(struct pend_slot *s, struct maru_attr *a)
{
	struct pending *p = slot_get(s);
	int rc;

	if (!p)
		return -ENOENT;
	rc = pend_attr(p, a);
	pend_put(p);
	return rc;
}

/* ---- zero-copy ---- */

int pend_slot_zc_begin(struct pend_slot *s, int want_write, struct maru_file **f,
		       int *pending, int *writable, struct pending **held)
{
	struct pending *p;
	int rc;

	if (want_write) {
		rc = slot_pending(s, &p);
		if (rc < 0)
			return rc;
		pend_mapped(p);
		*held = p;
		*f = pend_file_held(p);
		*pending = *writable = 1;
		return 0;
	}
	p = slot_get(s);
	if (!p)
		return -ENOENT;
	rc = pend_zc_begin(p, s->writer, f, pending, writable);
	if (rc == 0)
		*held = p;
	else
		pend_put(p);
	return rc;
}

void pend_zc_end(struct pending *p)
{
	unpend(p);
}
