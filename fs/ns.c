/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ns.c: the FUSE handlers of the pool's namespace: lookup (with the pins
 * of pin.c), forget, getattr and setattr, mknod (regular files here; FIFOs,
 * sockets and devices via link.c), mkdir, unlink, rmdir, rename, create,
 * and access, mapping them onto libmaru
 * names and this mount's handles and pendings. Entries handed to the kernel
 * are counted in the inode table and noted in the dentry table; changes
 * other mounts must see on return wait for their event (notify.c). While
 * marud cannot be reached, lookup and getattr answer what it last said
 * (away.c), uncached by the kernel. No lock of its own. Directory listings
 * and statfs are nsdir.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "away.h"
#include "dattr.h"
#include "dcache.h"
#include "handle.h"
#include "hints.h"
#include "notify.h"
#include "ns.h"
#include "pending.h"
#include "pin.h"
#include "vdir.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#define PIN_TRIES	4
#define AWAY_ROOT	UINT64_MAX	/* away.c's parent of the root, named "/" */

static void attr_to_stat(const struct maru_attr *a, struct stat *st)
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
	st->st_rdev = a->rdev;
}

static double attr_timeout_of(struct mfs *m, const struct maru_attr *a)
{
	/* A pending file grows under us; published versions never change. */
	return a->state == MARU_STATE_PENDING ? 0 : m->o.attr_timeout;
}

void ns_fill_entry(struct mfs *m, struct fuse_entry_param *e, const struct maru_attr *a)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = __atomic_load_n(&m->generation, __ATOMIC_RELAXED);
	attr_to_stat(a, &e->attr);
	e->entry_timeout = m->o.entry_timeout;
	e->attr_timeout = attr_timeout_of(m, a);
}

static void reply_attr(fuse_req_t req, const struct maru_attr *a, uint64_t ino)
{
	struct stat st;

	attr_to_stat(a, &st);
	st.st_ino = ino;
	fuse_reply_attr(req, &st, attr_timeout_of(req_mfs(req), a));
}

static void reply_attr_uncached(fuse_req_t req, const struct maru_attr *a, uint64_t ino)
{
	struct stat st;

	attr_to_stat(a, &st);
	st.st_ino = ino;
	fuse_reply_attr(req, &st, 0);
}

/* Hand a positive entry to the kernel and account for it. */
void ns_reply_entry(fuse_req_t req, uint64_t parent, const char *name,
		       struct fuse_entry_param *e, struct pending *p)
{
	struct mfs *m = req_mfs(req);

	itab_remember(m->tab, e->ino, parent, name);
	if (p)
		pend_link_ino(m, e->ino, p);
	dcache_note(m->dc, parent, name, e->entry_timeout);
	if (fuse_reply_entry(req, e) != 0)
		itab_forget(m->tab, e->ino, 1);
}

static void reply_negative(fuse_req_t req, uint64_t parent, const char *name, int raced)
{
	struct mfs *m = req_mfs(req);
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.entry_timeout = raced ? 0 : m->o.negative_timeout;
	dcache_note(m->dc, parent, name, e.entry_timeout);
	CNT_INC(m, lookup_neg);
	fuse_reply_entry(req, &e);
}

/* Changes to parent's names seen since (or a new pool generation). */
static uint64_t dir_seq(struct mfs *m, uint64_t parent)
{
	return dcache_dir_seq(m->dc, parent) + mfs_epoch(m);
}

/* ---- lookup, forget ---- */

/* Hold the version a lookup found (pin.c); -ESTALE: gone before it could. */
static int pin_found(struct mfs *m, uint64_t parent, const char *name,
		     const struct maru_attr *a)
{
	struct maru_file *f;
	struct pending *p;
	int rc;

	if (a->state == MARU_STATE_PENDING) {
		/* a reader on this mount's own pending keeps its bytes open */
		p = pend_pin_name(m, parent, name, a->ino);
		if (!p)
			return -ESTALE;
		pin_put(m->pins, a->ino, NULL, p);
		return 0;
	}
	rc = maru_file_open_ino(m->c, a->ino, &f);
	if (rc == 0)
		pin_put(m->pins, a->ino, f, NULL);
	return rc;
}

/*
 * The VFS's LOOKUP after a stale open of this name (pin.c): hold the
 * version found (a lease, or a reader on this mount's own pending file) so
 * that the OPEN that follows gets it. When it is gone before it could be
 * held, look again.
 */
static int lookup_pinned(struct mfs *m, uint64_t parent, const char *name,
			 struct maru_attr *a)
{
	int tries, rc = 0;

	for (tries = 0; tries < PIN_TRIES && !S_ISDIR(a->mode); tries++) {
		rc = pin_found(m, parent, name, a);
		if (rc != -ESTALE)
			return 0;	/* held, or the plain answer stands */
		/* replaced, published or dropped already: look once more */
		rc = maru_lookup(m->c, parent, name, a);
		if (rc < 0)
			return rc;
	}
	return rc;
}

void ns_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs *m = req_mfs(req);
	struct fuse_entry_param e;
	struct pending *p = NULL;
	struct maru_attr a;
	uint64_t seq;
	int rc;

	seq = dir_seq(m, parent);
	rc = maru_lookup(m->c, parent, name, &a);
	if (rc == 0 && pin_wanted(m->pins, parent, name))
		rc = lookup_pinned(m, parent, name, &a);
	if (rc == -ENOENT) {
		away_forget(m->aw, parent, name);
		reply_negative(req, parent, name, dir_seq(m, parent) != seq);
		return;
	}
	if (rc < 0 && !(away_err(rc) && away_answer(rc, "lookup",
					  away_get(m->aw, parent, name, &a)) == 0)) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (rc == 0)
		away_put(m->aw, parent, name, &a);
	if (a.state == MARU_STATE_PENDING)
		p = pend_lookup(m, parent, name, &a);
	ns_fill_entry(m, &e, &a);
	if (rc < 0 || dir_seq(m, parent) != seq) {
		/* an event for this directory raced the lookup: do not cache it */
		e.entry_timeout = 0;
		e.attr_timeout = 0;
	}
	CNT_INC(m, lookup_pos);
	if (a.state == MARU_STATE_PUBLISHED && S_ISREG(a.mode))	/* files only */
		lookup_hints_seen(m, parent, name, a.ino);	/* lookup_hints.c */
	ns_reply_entry(req, parent, name, &e, p);
	if (p)
		pend_put(p);
}

void ns_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct mfs *m = req_mfs(req);
	struct maru_file *f;
	struct pending *p;

	if (pin_take(m->pins, ino, &f, &p)) {
		if (f)
			maru_file_close(f);
		if (p)
			pend_unpin(p);
	}
	maru_lease_cache_drop(m->lc, ino);
	itab_forget(m->tab, ino, nlookup);
	fuse_reply_none(req);
}

void ns_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct mfs *m = req_mfs(req);
	size_t i;

	for (i = 0; i < count; i++) {
		maru_lease_cache_drop(m->lc, forgets[i].ino);
		itab_forget(m->tab, forgets[i].ino, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

/* ---- getattr, setattr ---- */

/*
 * Attributes for a path-based stat of ino (no descriptor holds it: those
 * keep their version). When that version is gone (the name was rewritten
 * or removed after the kernel looked it up), answer for what the name holds
 * now, or ENOENT when it holds nothing, and drop the stale entry; ESTALE
 * (the VFS looks the name up again) only when the name became a directory
 * or is unknown here. Under heavy rewriting the VFS's single ESTALE retry
 * can lose the race again, so it is avoided where the answer is known.
 */
static int path_getattr(struct mfs *m, uint64_t ino, struct maru_attr *a)
{
	char name[MARU_NAME_MAX + 1];
	uint64_t parent, gen;
	int rc;

	/* a directory this mount knows as it is (dattr.h) */
	if (dattr_get(m->da, ino, a) == 0) {
		CNT_INC(m, dir_attr_hits);
		return 0;
	}
	gen = dattr_gen(m->da, ino);
	rc = pend_ino_attr(m, ino, a);
	if (rc == 0 && S_ISDIR(a->mode))
		dattr_put(m->da, a, gen);
	if (rc != -ENOENT && rc != -ESTALE)
		return rc;
	if (ino == FUSE_ROOT_ID || itab_name(m->tab, ino, &parent, name, sizeof(name)) < 0)
		return -ESTALE;
	rc = maru_lookup(m->c, parent, name, a);
	notify_inval_entry(m->nt, parent, name, 0);
	if (rc == -ENOENT)
		return -ENOENT;	/* gone now: what a stat issued now would say */
	if (rc < 0 || S_ISDIR(a->mode))
		return -ESTALE;
	return 0;
}

/* What marud last said of ino, under the name the kernel knows it by. */
static int away_getattr(struct mfs *m, uint64_t ino, struct maru_attr *a, int put)
{
	char name[MARU_NAME_MAX + 1];
	uint64_t parent = AWAY_ROOT;

	if (ino == FUSE_ROOT_ID)
		snprintf(name, sizeof(name), "/");
	else if (itab_name(m->tab, ino, &parent, name, sizeof(name)) < 0)
		return -ENOENT;
	if (put)
		away_put(m->aw, parent, name, a);
	return put ? 0 : away_get_ino(m->aw, parent, name, ino, a);
}

void ns_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mfs *m = req_mfs(req);
	struct maru_attr a;
	int rc;

	if (fi && fi->fh)
		rc = handle_getattr(fh_handle(fi), ino, &a);
	else
		rc = path_getattr(m, ino, &a);
	if (rc == 0 && !(fi && fi->fh))
		away_getattr(m, ino, &a, 1);
	if (rc < 0 && away_err(rc) && away_answer(rc, "getattr",
						  away_getattr(m, ino, &a, 0)) == 0) {
		reply_attr_uncached(req, &a, ino);
		return;
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_attr(req, &a, ino);
}

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
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa->mask |= MARU_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa->mask |= MARU_SET_ATIME;
		sa->atime = attr->st_atim;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa->mask |= MARU_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa->mask |= MARU_SET_MTIME;
		sa->mtime = attr->st_mtim;
	}
}

/* ftruncate/truncate: the writer's pending, this mount's, or a new version. */
static int setattr_size(struct mfs *m, fuse_ino_t ino, uint64_t size,
			struct fuse_file_info *fi, struct maru_attr *a)
{
	struct handle *h = fi && fi->fh ? fh_handle(fi) : NULL;

	if (h && handle_is_writer(h))
		return handle_truncate(h, size, a);
	return pend_truncate_ino(m, ino, size, a);
}

/* chmod/chown/utimens, also on a pending rewrite that will replace ino. */
static int setattr_stored(struct mfs *m, fuse_ino_t ino, const struct maru_setattr *sa,
			  struct maru_attr *a)
{
	uint64_t v;
	int rc, prc;

	rc = maru_setattr(m->c, ino, sa, a);
	v = pend_live_version(m, ino);
	if (v && v != ino) {
		prc = maru_setattr(m->c, v, sa, a);
		if (rc < 0)
			rc = prc;
	}
	return rc;
}

void ns_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi)
{
	struct mfs *m = req_mfs(req);
	struct maru_setattr sa;
	struct maru_attr a, sized;
	int rc = 0, have = 0;

	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = setattr_size(m, ino, (uint64_t)attr->st_size, fi, &sized);
		if (rc < 0) {
			fuse_reply_err(req, -rc);
			return;
		}
		have = 1;
	}
	to_maru_setattr(attr, to_set, &sa);
	if (sa.mask) {
		rc = setattr_stored(m, ino, &sa, &a);
		dattr_changed(m->da, ino);	/* a directory's own mode, owner or times */
		if (rc < 0)
			goto out;
	}
	rc = path_getattr(m, ino, &a);
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

/* ---- names ---- */

/*
 * Wait (bounded) for the pool's event of this mount's own change w to come
 * back, so other mounts see it on return (close-to-open); counted, and so
 * are the waits that ran out, for .maru/stats.
 */
void ns_wait_own(struct mfs *m, struct ev_expect *w)
{
	if (!w)
		return;
	CNT_INC(m, event_waits);
	if (!notify_expect_wait(m->nt, w, 0))
		CNT_INC(m, event_wait_timeouts);
}

void ns_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mfs *m = req_mfs(req);
	struct fuse_entry_param e;
	struct ev_expect *w;
	struct maru_file *f;
	struct maru_attr a;
	int rc;

	if (!S_ISREG(mode)) {	/* ops.c routes the others to link.c */
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = maru_file_create(m->c, parent, name, S_IFREG | (mode & 07777), ctx->uid,
			      ctx->gid, MARU_CREATE_EXCL, 0, &f);
	if (rc < 0) {
		fuse_reply_err(req, io_errno(rc));
		return;
	}
	w = notify_expect(m->nt, parent, name);
	rc = maru_file_publish(f);
	dattr_changed(m->da, parent);
	if (rc == 0)
		rc = maru_file_attr(f, &a);
	maru_file_close(f);
	if (rc < 0) {
		notify_expect_cancel(m->nt, w);
		fuse_reply_err(req, io_errno(rc));
		return;
	}
	ns_wait_own(m, w);
	CNT_INC(m, publishes);
	ns_fill_entry(m, &e, &a);
	ns_reply_entry(req, parent, name, &e, NULL);
}

void ns_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mfs *m = req_mfs(req);
	struct fuse_entry_param e;
	struct ev_expect *w;
	struct maru_attr a;
	int rc;

	w = notify_expect(m->nt, parent, name);
	rc = maru_mkdir(m->c, parent, name, S_IFDIR | (mode & 07777), ctx->uid, ctx->gid, &a);
	dattr_changed(m->da, parent);
	if (rc < 0) {
		notify_expect_cancel(m->nt, w);
		fuse_reply_err(req, -rc);
		return;
	}
	ns_wait_own(m, w);
	ns_fill_entry(m, &e, &a);
	ns_reply_entry(req, parent, name, &e, NULL);
}

void ns_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs *m = req_mfs(req);
	int rc = maru_unlink(m->c, parent, name);

	dattr_changed(m->da, parent);
	if (rc == 0)
		pend_unlinked(m, parent, name);
	fuse_reply_err(req, -rc);
}

void ns_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs *m = req_mfs(req);
	int rc = maru_rmdir(m->c, parent, name);

	dattr_changed(m->da, parent);
	fuse_reply_err(req, -rc);
}

void ns_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	struct mfs *m = req_mfs(req);
	struct ev_expect *w;
	uint64_t seq = 0;
	int rc;

	if (flags & ~(unsigned int)RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);	/* RENAME_EXCHANGE, WHITEOUT */
		return;
	}
	w = notify_expect(m->nt, newparent, newname);
	rc = maru_rename_seq(m->c, parent, name, newparent, newname,
			     (flags & RENAME_NOREPLACE) ? MARU_RENAME_NOREPLACE : 0, &seq);
	dattr_changed(m->da, parent);
	dattr_changed(m->da, newparent);
	/* No event made (only this mount's pending file moved): none to wait for. */
	if (rc < 0 || seq == 0)
		notify_expect_cancel(m->nt, w);
	else
		ns_wait_own(m, w);
	if (rc == 0 && !(parent == newparent && strcmp(name, newname) == 0)) {
		/* whatever this mount was writing at the target lost its name */
		pend_renamed(m, parent, name, newparent, newname);
		itab_rename(m->tab, parent, name, newparent, newname);
	}
	fuse_reply_err(req, -rc);
}

void ns_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mfs *m = req_mfs(req);
	struct fuse_entry_param e;
	struct maru_attr a;
	struct handle *h;
	int rc;

	rc = handle_create(m, parent, name, mode, ctx->uid, ctx->gid, fi->flags, &h, &a);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	ns_fill_entry(m, &e, &a);
	/* The kernel sees every change of the file it just made (writes,
	 * truncates and chmods through it update or drop its attributes): no
	 * GETATTR for the permission check of the open that follows. Publish
	 * drops them (pendlife.c). */
	e.attr_timeout = m->o.attr_timeout;
	dcache_note(m->dc, parent, name, e.entry_timeout);
	fi->fh = (uintptr_t)h;
	fi->keep_cache = 0;
	fi->direct_io = handle_is_direct(h);
	if (fuse_reply_create(req, &e, fi) != 0) {
		itab_forget(m->tab, a.ino, 1);
		handle_close(h);
	}
}

void ns_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct maru_attr a;

	(void)mask;
	fuse_reply_err(req, -pend_ino_attr(req_mfs(req), ino, &a));
}
