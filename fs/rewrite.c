/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/rewrite.c: where new versions of a name come from. A write-open of an
 * inode joins this mount's live pending of that name or starts a rewrite
 * (a copy of the published bytes unless O_TRUNC); a create makes the name's
 * first pending or joins one; a writer whose version was published meanwhile
 * continues on a fresh rewrite (copy-on-write), or on a private detached copy
 * when the name moved on; a truncate of a file nobody here writes publishes
 * a new version at once. Part of the pending version (pending.c); no lock
 * of its own. pendslot.c calls it through rewrite.h; ns.c calls
 * pend_truncate_ino().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "dattr.h"
#include "notify.h"
#include "pending_priv.h"
#include "ratelog.h"
#include "rewrite.h"

#define ROOT_INO	1

/*
 * The kernel's inode is a version the name no longer has (replaced after the
 * VFS looked it up, possibly twice in a row under heavy rewriting). Rather
 * than fail the open with ESTALE, serve the name's current version under
 * that inode: such handles are direct_io, since the kernel's cached size and
 * pages belong to the old version; and the stale entry is dropped for the
 * next open.
 */
static int rewrite_by_name(struct mfs *m, uint64_t parent, const char *name, int trunc,
			   struct maru_file **f)
{
	struct maru_attr a;
	int rc;

	rc = maru_lookup(m->c, parent, name, &a);
	if (rc < 0 || S_ISDIR(a.mode))
		return -ESTALE;
	rc = maru_file_create(m->c, parent, name, a.mode, a.uid, a.gid,
			      trunc ? 0 : MARU_CREATE_COPY, 0, f);
	if (rc == 0)
		notify_inval_entry(m->nt, parent, name, 0);
	return rc;
}

/* A rewrite of ino (or of what its name holds now) into *f. */
static int new_rewrite(struct mfs *m, uint64_t ino, const char *name, uint64_t parent,
		       int trunc, struct maru_file **f, int *moved)
{
	int rc = maru_file_rewrite(m->c, ino, trunc ? 0 : MARU_CREATE_COPY, 0, f);

	if (rc == -ESTALE && name) {
		rc = rewrite_by_name(m, parent, name, trunc, f);
		*moved = rc == 0;
	}
	return rc;
}

int rewrite_for_open(struct mfs *m, uint64_t ino, int trunc, struct pending **out,
		     int *moved)
{
	char name[MARU_NAME_MAX + 1];
	struct pending *p = pend_of_ino(m, ino, 1);
	struct maru_file *f;
	uint64_t parent = 0, fino;
	int rc, named;

	named = itab_name(m->tab, ino, &parent, name, sizeof(name)) == 0;
	if (!p && named)
		p = pend_of_name(m, parent, name);
	if (!p) {
		rc = new_rewrite(m, ino, named ? name : NULL, parent, trunc, &f, moved);
		if (rc < 0)
			return rc;
		fino = maru_file_ino(f);
		p = pend_adopt(m, f, parent, named ? name : NULL, ino, trunc);
		if (!p)
			return -ENOMEM;
		if (pend_ino(p) == fino)
			trunc = 0;	/* ours, created empty already */
	}
	pend_link_ino(m, ino, p);
	*out = p;
	return trunc;	/* the caller truncates once attached */
}

#define CREATE_ROOM	(64u * 1024)	/* lib/file.c's first reservation */

static int create_file(struct mfs *m, uint64_t parent, const char *name, mode_t mode,
		       uid_t uid, gid_t gid, int flags, struct maru_file **f)
{
	unsigned int cf = (flags & O_EXCL) ? MARU_CREATE_EXCL : 0;
	uint32_t md = S_IFREG | (mode & 07777);
	int rc;

	/* Without O_TRUNC an existing file (our negative entry was stale)
	 * keeps its bytes, as POSIX open(O_CREAT) would. */
	if (!(flags & O_TRUNC) && !(flags & O_EXCL)) {
		rc = maru_file_create(m->c, parent, name, md, uid, gid,
				      cf | MARU_CREATE_COPY, 0, f);
		if (rc != -ENOENT)
			return rc;
	}
	/* Room for a small file with the create: its first write needs no
	 * RESERVE round trip. Publish trims what it did not use. */
	rc = maru_file_create(m->c, parent, name, md, uid, gid, cf, CREATE_ROOM, f);
	if (rc != -ENOSPC)
		return rc;
	return maru_file_create(m->c, parent, name, md, uid, gid, cf, 0, f);
}

int rewrite_for_create(struct mfs *m, uint64_t parent, const char *name, mode_t mode,
		       uid_t uid, gid_t gid, int flags, struct pending **out)
{
	struct maru_file *f;
	struct pending *p;
	uint64_t fino;
	int rc;

	p = pend_of_name(m, parent, name);
	if (p && (flags & O_EXCL)) {
		pend_put(p);
		return -EEXIST;
	}
	if (!p) {
		rc = create_file(m, parent, name, mode, uid, gid, flags, &f);
		if (rc < 0)
			return rc;
		fino = maru_file_ino(f);
		p = pend_adopt(m, f, parent, name, 0, 1);
		if (!p)
			return -ENOMEM;
		if (pend_ino(p) == fino)
			flags &= ~O_TRUNC;	/* ours: as create_file made it */
	}
	*out = p;
	return !!(flags & O_TRUNC);	/* the caller truncates once attached */
}

/* ---- copy-on-write ---- */

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

struct copy_req {
	struct mfs *m;
	uint64_t parent, src_ino, tag;
	struct maru_file *f;
};

/* Under the old pending's lock, its file open: a hidden unlinked copy. */
static int copy_cb(void *arg, struct maru_file *src)
{
	struct copy_req *q = arg;
	struct maru_attr a;
	char tmp[96];
	int rc;

	rc = maru_file_attr(src, &a);
	if (rc < 0)
		return rc;
	snprintf(tmp, sizeof(tmp), ".maru-cow.%" PRIx64 ".%" PRIx64 ".tmp", q->src_ino,
		 q->tag);
	rc = maru_file_create(q->m->c, q->parent, tmp, a.mode, a.uid, a.gid,
			      MARU_CREATE_EXCL, a.size, &q->f);
	if (rc < 0)
		return rc;
	maru_unlink(q->m->c, q->parent, tmp);	/* detached: never published */
	rc = copy_bytes(src, q->f);
	if (rc < 0)
		maru_file_close(q->f);
	return rc;
}

/*
 * The writer's version is no longer the one bound to the name (replaced,
 * renamed over or unlinked meanwhile). POSIX writes then go to a file nobody
 * can open by name any more: a private copy of what it sees, whose writes
 * succeed, read back through the handle, and are never published.
 */
static int detached_copy(struct mfs *m, struct pending *old, uint64_t parent, uint64_t tag,
			 struct pending **out)
{
	struct copy_req q = { m, parent, pend_ino(old), tag, NULL };
	int rc = pend_with_file(old, copy_cb, &q);

	/* No file: closed, though the writer asking is attached to it (a
	 * handle's file stays open while any is), or of an older generation. */
	if (rc == -ENOENT) {
		RATELOG_WARN("copy-on-write of version %" PRIu64 ": its file is closed, "
			     "nothing to copy the private copy from: EIO", pend_ino(old));
		return -EIO;
	}
	if (rc < 0) {
		RATELOG_WARN("copy-on-write of version %" PRIu64 ": private copy: %s%s",
			     pend_ino(old), maru_strerror(rc), io_errno(rc) == EIO ? " (EIO)" : "");
		return rc;
	}
	/* unnamed and modified: an orphan from the start, never published */
	*out = pend_new(m, q.f, parent, NULL, pend_ino(old));
	if (!*out) {
		maru_file_close(q.f);
		return -ENOMEM;
	}
	pend_mark(*out, PM_MODIFIED);
	pend_move(*out, PEND_ORPHANED);
	return 0;
}

int rewrite_for_cow(struct mfs *m, struct pending *old, uint64_t tag, struct pending **out)
{
	char name[MARU_NAME_MAX + 1];
	struct pending *p = NULL;
	struct maru_file *f;
	uint64_t parent = 0;
	int rc, named;

	named = pend_where(old, &parent, name, sizeof(name)) == 0;
	if (named)
		p = pend_of_name(m, parent, name);
	if (p) {
		*out = p;
		return 0;
	}
	rc = maru_file_rewrite(m->c, pend_ino(old), MARU_CREATE_COPY, 0, &f);
	if (rc == 0) {
		p = pend_adopt(m, f, parent, named ? name : NULL, pend_ino(old), 0);
		if (!p)
			return -ENOMEM;
	} else if (rc == -ESTALE || rc == -ENOENT) {
		rc = detached_copy(m, old, named ? parent : ROOT_INO, tag, &p);
	} else {
		RATELOG_WARN("copy-on-write of version %" PRIu64 ": rewrite: %s%s",
			     pend_ino(old), maru_strerror(rc), io_errno(rc) == EIO ? " (EIO)" : "");
	}
	if (rc < 0)
		return rc;
	CNT_INC(m, cow_rewrites);
	*out = p;
	return 0;
}

/* ---- truncate ---- */

/* truncate(2) of a published file nobody here writes: a new version. */
static int truncate_published(struct mfs *m, uint64_t ino, uint64_t size,
			      struct maru_attr *a)
{
	char name[MARU_NAME_MAX + 1];
	struct maru_attr dir = { 0 };
	struct ev_expect *w;
	struct maru_file *f;
	uint64_t parent = 0;
	int rc, named;

	named = itab_name(m->tab, ino, &parent, name, sizeof(name)) == 0;
	rc = maru_file_rewrite(m->c, ino, size ? MARU_CREATE_COPY : 0, 0, &f);
	if (rc == -ESTALE && named) {
		rc = rewrite_by_name(m, parent, name, size == 0, &f);
		if (rc == -ESTALE)
			rc = -ENOENT;	/* the name went away meanwhile */
	}
	if (rc < 0)
		return rc;
	w = named ? notify_expect(m->nt, parent, name) : NULL;
	rc = maru_file_truncate(f, size);
	if (rc == 0)
		rc = maru_file_publish_dir(f, &dir);
	if (rc == 0)
		rc = maru_file_attr(f, a);
	maru_file_close(f);
	/* the directory's times moved (or may have): ask marud next time */
	if (rc == 0 && !dir.ino)
		dir.ino = a->parent;	/* a marud that sends no directory */
	dattr_changed(m->da, dir.ino ? dir.ino : parent);
	if (rc < 0) {
		notify_expect_cancel(m->nt, w);
		RATELOG_WARN("truncate of inode %" PRIu64 " to %" PRIu64 ": new version: %s",
			     ino, size, maru_strerror(rc));
		return rc;
	}
	CNT_INC(m, publishes);
	if (!notify_expect_wait(m->nt, w, 1) && named)
		notify_inval_entry(m->nt, parent, name, 0);
	return 0;
}

int pend_truncate_ino(struct mfs *m, uint64_t ino, uint64_t size, struct maru_attr *a)
{
	char name[MARU_NAME_MAX + 1];
	struct pending *p = pend_of_ino(m, ino, 1);
	uint64_t parent;
	int rc;

	if (!p && itab_name(m->tab, ino, &parent, name, sizeof(name)) == 0)
		p = pend_of_name(m, parent, name);
	if (p) {
		rc = pend_io_begin(p);
		if (rc == 0) {
			rc = pend_truncate_held(p, size, a);
			pend_io_end(p);
		} else {
			rc = -EAGAIN;
		}
		pend_put(p);
		if (rc != -EAGAIN)
			return rc;
		/* published meanwhile: truncate what the name holds now */
	}
	return truncate_published(m, ino, size, a);
}
