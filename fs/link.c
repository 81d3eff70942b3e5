/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/link.c: the FUSE handlers of names that are not plain files: symlink
 * and readlink, link (a hard link: one more name of a published version)
 * and mknod of FIFOs, sockets and device nodes (metadata-only entries in
 * the pool). Each new name waits for its pool event like mkdir does, so
 * other mounts see it on return. No lock, no state of its own.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "dattr.h"
#include "dcache.h"
#include "link.h"
#include "notify.h"
#include "ns.h"

/*
 * Answer a new name: wait for its event, hand the entry to the kernel (the
 * directory's attributes kept here are stale from now on, dattr.h). Its
 * owner is the caller's; under a set-group-ID directory marud gives it the
 * directory's group (marud knows the directory's mode).
 */
static void reply_new(fuse_req_t req, fuse_ino_t parent, const char *name,
		      struct ev_expect *w, int rc, const struct maru_attr *a)
{
	struct mfs *m = req_mfs(req);
	struct fuse_entry_param e;

	dattr_changed(m->da, parent);
	if (rc < 0) {
		notify_expect_cancel(m->nt, w);
		fuse_reply_err(req, -rc);
		return;
	}
	ns_wait_own(m, w);
	ns_fill_entry(m, &e, a);
	ns_reply_entry(req, parent, name, &e, NULL);
}

void link_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mfs *m = req_mfs(req);
	struct ev_expect *w;
	struct maru_attr a;
	int rc;

	w = notify_expect(m->nt, parent, name);
	rc = maru_symlink(m->c, parent, name, link, ctx->uid, ctx->gid, &a);
	reply_new(req, parent, name, w, rc, &a);
}

void link_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[MARU_PATH_MAX];
	int rc = maru_readlink(req_mfs(req)->c, ino, buf, sizeof(buf));

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

void link_hardlink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mfs *m = req_mfs(req);
	struct ev_expect *w;
	struct maru_attr a;
	int rc;

	w = notify_expect(m->nt, newparent, newname);
	rc = maru_link(m->c, ino, newparent, newname, &a);
	/* A version this mount is still writing has no name to link yet. */
	if (rc == -ENOENT)
		rc = -EPERM;
	reply_new(req, newparent, newname, w, rc, &a);
}

void link_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      dev_t rdev)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mfs *m = req_mfs(req);
	struct ev_expect *w;
	struct maru_attr a;
	int rc;

	if (!S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) && !S_ISBLK(mode)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	w = notify_expect(m->nt, parent, name);
	rc = maru_mknod(m->c, parent, name, mode & (S_IFMT | 07777), (uint32_t)rdev,
			ctx->uid, ctx->gid, &a);
	reply_new(req, parent, name, w, rc, &a);
}
