/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ioctl.c: the zero-copy ioctls of an open marufs file
 * (<maru/marufs_ioctl.h>). MARUFS_IOC_EXTENTS tells a process on a host that
 * shares the pool memory where the file's bytes are (pool path, UUID,
 * generation, extents), so that maru_map() can map them; with WANT_WRITE it
 * also takes a hold on this handle's pending version: the mapping writes
 * bytes marufs never sees, so no flush may publish until MARUFS_IOC_UNHOLD
 * (handle.c keeps the count and honours it). A mount that does not map the
 * pool itself (data=tcp, the isolated mode) hands out no addresses. No lock
 * of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <maru/marufs_ioctl.h>

#include "handle.h"
#include "ioctl.h"

/* Extents [first, first + MARUFS_EXT_MAX) of f into r; r->nextents = all. */
static int fill_extents(struct maru_file *f, uint32_t first, struct marufs_extents *r)
{
	struct maru_extent *ext;
	ssize_t total, n;
	size_t want;
	uint32_t i;

	total = maru_file_extents(f, NULL, 0);
	if (total < 0)
		return (int)total;
	if (first > (uint64_t)total)
		return -EINVAL;
	want = (size_t)first + MARUFS_EXT_MAX < (size_t)total ? (size_t)first + MARUFS_EXT_MAX :
								 (size_t)total;
	ext = calloc(want ? want : 1, sizeof(*ext));
	if (!ext)
		return -ENOMEM;
	n = maru_file_extents(f, ext, want);
	if (n >= 0 && (size_t)n < want)
		n = -EIO;	/* changed under us: a lease's extents never do */
	if (n >= 0) {
		r->nextents = (uint32_t)total;
		r->count = (uint32_t)(want - first);
		for (i = 0; i < r->count; i++) {
			r->ext[i].off = ext[first + i].off;
			r->ext[i].len = ext[first + i].len;
		}
	}
	free(ext);
	return n < 0 ? (int)n : 0;
}

/* Pool facts of the session the mount is in now. */
static int fill_pool(struct mfs *m, struct marufs_extents *r)
{
	struct maru_pool_info *info = malloc(sizeof(*info));
	int rc, n;

	if (!info)
		return -ENOMEM;
	rc = maru_client_pool_info(m->c, info);
	if (rc == 0 && info->data_path != MARU_DATA_SHM)
		rc = -EOPNOTSUPP;
	if (rc == 0) {
		memcpy(r->uuid, info->uuid, sizeof(r->uuid));
		r->generation = info->generation;
		r->pool_size = info->size;
		r->align = info->align;
		r->data_off = info->data_off;
		r->coherence = info->coherence == MARU_COHERENCE_FLUSH ?
			       MARUFS_COHERENCE_FLUSH : MARUFS_COHERENCE_HW;
		n = snprintf(r->pool_path, sizeof(r->pool_path), "%s", info->path);
		if (n < 0 || (size_t)n >= sizeof(r->pool_path))
			rc = -ENAMETOOLONG;
	}
	free(info);
	return rc;
}

static int extents_of(struct mfs *m, struct handle *h, const struct marufs_extents *q,
		      struct marufs_extents *r)
{
	int want_write = !!(q->flags & MARUFS_EXT_WANT_WRITE);
	struct zc_ref z;
	int rc;

	rc = fill_pool(m, r);
	if (rc)
		return rc;
	rc = handle_zc_get(h, want_write, &z);
	if (rc)
		return rc;
	/* no round trip: the handle knows its size, and extents check it is live */
	rc = fill_extents(z.file, q->first, r);
	if (rc == 0) {
		r->ino = maru_file_ino(z.file);
		r->size = maru_file_size(z.file);
		r->flags = (z.pending ? MARUFS_EXT_PENDING : 0) |
			   (z.writable ? MARUFS_EXT_WRITABLE : 0) |
			   (want_write ? MARUFS_EXT_HELD : 0);
	}
	handle_zc_put(&z);
	if (rc && want_write)
		handle_zc_unhold(h);
	return rc;
}

static void ioc_extents(fuse_req_t req, struct fuse_file_info *fi, const void *in,
			size_t in_size, size_t out_size)
{
	const struct marufs_extents *q = in;
	struct marufs_extents *r;
	int rc;

	if (in_size < sizeof(*q) || out_size < sizeof(*r) || q->magic != MARUFS_EXT_MAGIC ||
	    q->version != MARUFS_EXT_VERSION || (q->flags & ~MARUFS_EXT_WANT_WRITE) ||
	    (q->first && (q->flags & MARUFS_EXT_WANT_WRITE))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r->magic = MARUFS_EXT_MAGIC;
	r->version = MARUFS_EXT_VERSION;
	r->first = q->first;
	rc = extents_of(req_mfs(req), fh_handle(fi), q, r);
	/* a handle of an older generation: the bytes are not this pool's any more */
	if (rc == -ESTALE)
		rc = -EIO;
	if (rc)
		fuse_reply_err(req, -rc);
	else if (fuse_reply_ioctl(req, 0, r, sizeof(*r)) != 0 &&
		 (q->flags & MARUFS_EXT_WANT_WRITE))
		handle_zc_unhold(fh_handle(fi));	/* the caller never learnt of its hold */
	free(r);
}

void ioctl_handle(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, struct fuse_file_info *fi,
		  unsigned int flags, const void *in, size_t in_size, size_t out_size)
{
	if ((flags & FUSE_IOCTL_DIR) || !fi || !fi->fh) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	switch (cmd) {
	case MARUFS_IOC_EXTENTS:
		ioc_extents(req, fi, in, in_size, out_size);
		return;
	case MARUFS_IOC_UNHOLD:
		if (handle_zc_unhold(fh_handle(fi)))
			fuse_reply_err(req, EINVAL);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	fuse_reply_err(req, ENOTTY);
}
