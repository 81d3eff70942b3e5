/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/vdir.c: the virtual .maru/ directory in the mount root, with request
 * handlers of its own (vdir_ops): ops.c routes every request about its
 * inodes here. stats and pool are snapshotted into the handle at open (so a
 * read sees one consistent text however it is split); events is a blocking
 * stream over the ring of evring.c. All three are direct_io: their getattr
 * size is 0 and the kernel must not clip reads to it. hints is write-only:
 * each write() is whole lines of hints (hints.c), EINVAL if any is bad.
 * Everything else asked
 * of .maru/ is refused with the errno a read-only directory would give. No
 * lock of its own: a handle belongs to one open.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evring.h"
#include "hints.h"
#include "metrics.h"
#include "vdir.h"

struct vhandle {
	uint64_t ino;
	char *buf;
	size_t len;
	struct ev_reader *r;
};

static const struct {
	const char *name;
	uint64_t ino;
} virt_files[] = {
	{ "stats", VIRT_INO_STATS },
	{ "events", VIRT_INO_EVENTS },
	{ "pool", VIRT_INO_POOL },
	{ "hints", VIRT_INO_HINTS },
};

#define NVIRT (sizeof(virt_files) / sizeof(virt_files[0]))

#define VIRT_TIMEOUT	3600.0

static int virt_stat(struct mfs *m, uint64_t ino, struct stat *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atim = st->st_mtim = st->st_ctim = m->mounted;
	st->st_blksize = 4096;
	if (ino == VIRT_INO_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	for (i = 0; i < NVIRT; i++) {
		if (virt_files[i].ino == ino) {
			st->st_mode = S_IFREG | (ino == VIRT_INO_HINTS ? 0222 : 0444);
			st->st_nlink = 1;
			return 0;
		}
	}
	return -ENOENT;
}

static int virt_entry(struct mfs *m, uint64_t parent, const char *name,
		      struct fuse_entry_param *e)
{
	uint64_t ino = 0;
	size_t i;

	memset(e, 0, sizeof(*e));
	if (parent == FUSE_ROOT_ID && strcmp(name, VIRT_DIR_NAME) == 0)
		ino = VIRT_INO_DIR;
	for (i = 0; parent == VIRT_INO_DIR && i < NVIRT; i++)
		if (strcmp(name, virt_files[i].name) == 0)
			ino = virt_files[i].ino;
	if (!ino)
		return -ENOENT;
	e->ino = ino;
	e->generation = 1;
	e->entry_timeout = VIRT_TIMEOUT;
	e->attr_timeout = VIRT_TIMEOUT;
	return virt_stat(m, ino, &e->attr);
}

static int stats_snapshot(struct mfs *m, struct vhandle *h)
{
	char *buf;
	size_t len;

	metrics_text(m, &buf, &len);
	if (!buf)
		return -ENOMEM;
	h->buf = buf;
	h->len = len;
	return 0;
}

static const char *path_name(enum maru_data_path p)
{
	switch (p) {
	case MARU_DATA_SHM: return "shm";
	case MARU_DATA_RDMA: return "rdma";
	case MARU_DATA_TCP: return "tcp";
	default: return "auto";
	}
}

int vdir_pool_text(struct mfs *m, const struct maru_pool_info *pi, char *buf, size_t cap)
{
	const uint8_t *u = pi->uuid;
	const char *rights;
	int n;

	n = snprintf(buf, cap,
		     "uri %s\n"
		     "uuid %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		     "%02x%02x%02x%02x%02x%02x\n"
		     "capacity %" PRIu64 "\n"
		     "align %" PRIu64 "\n"
		     "data_path %s\n"
		     "path %s\n"
		     "generation %" PRIu64 "\n"
		     "coherence %s\n",
		     pi->uri[0] ? pi->uri : m->o.pool,
		     u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		     u[10], u[11], u[12], u[13], u[14], u[15],
		     pi->size, pi->align, path_name(pi->data_path), pi->path,
		     pi->generation,
		     pi->coherence == MARU_COHERENCE_FLUSH ? "flush" : "hw");
	if (n < 0)
		return 0;
	rights = maru_client_rdma_rights(m->c);
	if (rights && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, "rdma_rights %s\n", rights);
	return (size_t)n < cap ? n : (int)cap - 1;
}

/*
 * A cluster mount (maru+etcd://): one line per pool after the cluster's
 * own lines: "pool UUID URI STATE DATA_PATH PATH" (a path "-" while the
 * pool's client is not connected).
 */
static size_t pools_text(struct mfs *m, struct maru_pool_info *pi, char *buf, size_t cap)
{
	static const char *const states[] = { "active", "draining", "gone" };
	struct maru_cluster_pool p;
	size_t n = 0;
	unsigned int i;
	int st, k;

	for (i = 0; n < cap && maru_client_pool_at(m->c, i, &p, pi, &st) == 0; i++) {
		k = snprintf(buf + n, cap - n, "pool %s %s %s %s %.256s\n", p.uuid, p.uri,
			     st >= 0 && st <= 2 ? states[st] : "?",
			     pi->info_size ? path_name(pi->data_path) : "-",
			     pi->info_size && pi->path[0] ? pi->path : "-");
		if (k < 0)
			break;
		n += (size_t)k;
	}
	return n < cap ? n : cap - 1;
}

static int pool_snapshot(struct mfs *m, struct vhandle *h)
{
	struct maru_pool_info *pi = malloc(sizeof(*pi));
	size_t cap = 2 * MARU_PATH_MAX + 1024 + 64 * 700;
	int rc;

	if (!pi)
		return -ENOMEM;
	rc = maru_client_pool_info(m->c, pi);
	if (rc < 0)
		goto out;
	h->buf = malloc(cap);
	if (!h->buf) {
		rc = -ENOMEM;
		goto out;
	}
	h->len = (size_t)vdir_pool_text(m, pi, h->buf, cap);
	h->len += pools_text(m, pi, h->buf + h->len, cap - h->len);
	rc = 0;
out:
	free(pi);
	return rc;
}

static struct vhandle *fh_vhandle(const struct fuse_file_info *fi)
{
	return (struct vhandle *)(uintptr_t)fi->fh;
}

static void vh_free(struct mfs *m, struct vhandle *h)
{
	if (!h)
		return;
	if (h->r)
		ring_reader_close(m->ring, h->r);
	free(h->buf);
	free(h);
}

static int vh_fill(struct mfs *m, struct vhandle *h)
{
	switch (h->ino) {
	case VIRT_INO_STATS:
		return stats_snapshot(m, h);
	case VIRT_INO_POOL:
		return pool_snapshot(m, h);
	case VIRT_INO_EVENTS:
		return ring_reader_open(m->ring, &h->r);
	case VIRT_INO_HINTS:
		return 0;
	}
	return -ENOENT;
}

static void v_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mfs *m = req_mfs(req);
	struct vhandle *h;
	int rc;

	if (ino == VIRT_INO_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != (ino == VIRT_INO_HINTS ? O_WRONLY : O_RDONLY)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->ino = ino;
	rc = vh_fill(m, h);
	if (rc < 0) {
		vh_free(m, h);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (ino == VIRT_INO_EVENTS)
		fi->nonseekable = 1;
	if (fuse_reply_open(req, fi) != 0)
		vh_free(m, h);
}

static void v_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct vhandle *h = fh_vhandle(fi);
	char *copy;

	if (h->r) {
		ring_reader_read(req_mfs(req)->ring, req, h->r, size);
		return;
	}
	if (off < 0 || (size_t)off >= h->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > h->len - (size_t)off)
		size = h->len - (size_t)off;
	/*
	 * Reply from a copy: once the kernel has taken the bytes the reader
	 * may close, and RELEASE (on another thread) free h->buf before our
	 * writev returns; ASan checks the buffer after writev and would
	 * report that as a use after free.
	 */
	copy = malloc(size);
	if (!copy) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(copy, h->buf + off, size);
	fuse_reply_buf(req, copy, size);
	free(copy);
}

static void v_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	vh_free(req_mfs(req), fh_vhandle(fi));
	fi->fh = 0;
	fuse_reply_err(req, 0);
}

static void v_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph)
{
	struct vhandle *h = fh_vhandle(fi);

	if (h && h->r) {
		ring_reader_poll(req_mfs(req)->ring, req, h->r, ph);
		return;
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM);
}

/* Entry i of .maru/'s listing: ".", "..", then the files. */
static const char *dirent_at(off_t i, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	if (i < 2) {
		st->st_ino = i == 0 ? VIRT_INO_DIR : FUSE_ROOT_ID;
		st->st_mode = S_IFDIR;
		return i == 0 ? "." : "..";
	}
	st->st_ino = virt_files[i - 2].ino;
	st->st_mode = S_IFREG;
	return virt_files[i - 2].name;
}

static void v_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	char *buf = calloc(1, size ? size : 1);
	size_t pos = 0, n;
	struct stat st;
	const char *name;
	off_t i;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = off < 0 ? 0 : off; i < (off_t)NVIRT + 2; i++) {
		name = dirent_at(i, &st);
		n = fuse_add_direntry(req, buf + pos, size - pos, name, &st, i + 1);
		if (n > size - pos)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void v_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int rc = virt_entry(req_mfs(req), parent, name, &e);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

static void v_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = virt_stat(req_mfs(req), ino, &st);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, VIRT_TIMEOUT);
}

static void v_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fuse_reply_none(req);
}

/* ---- what .maru/ refuses ---- */

static int is_dir_name(fuse_ino_t parent, const char *name)
{
	return parent == FUSE_ROOT_ID && strcmp(name, VIRT_DIR_NAME) == 0;
}

static void v_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		      struct fuse_file_info *fi)
{
	struct stat st;

	/* a shell's "> .maru/hints" truncates first: nothing to truncate */
	if (ino == VIRT_INO_HINTS && to_set == FUSE_SET_ATTR_SIZE && !attr->st_size &&
	    !virt_stat(req_mfs(req), ino, &st)) {
		fuse_reply_attr(req, &st, VIRT_TIMEOUT);
		return;
	}
	fuse_reply_err(req, EPERM);
}

static void v_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		    dev_t rdev)
{
	fuse_reply_err(req, S_ISREG(mode) ? EEXIST : EPERM);
}

static void v_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_reply_err(req, is_dir_name(parent, name) ? EEXIST : EACCES);
}

static void v_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     struct fuse_file_info *fi)
{
	fuse_reply_err(req, is_dir_name(parent, name) ? EEXIST : EACCES);
}

static void v_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EPERM);
}

static void v_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EBUSY);
}

static void v_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		     fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	fuse_reply_err(req, flags & ~(unsigned int)1 ? EINVAL : EBUSY);
}

static void v_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		    off_t off, struct fuse_file_info *fi)
{
	int rc;

	if (ino != VIRT_INO_HINTS) {
		fuse_reply_err(req, EBADF);
		return;
	}
	rc = hints_write_text(req_mfs(req), buf, size);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static void v_ok_fi(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void v_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void v_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	fuse_reply_err(req, 0);
}

static void v_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	fuse_reply_err(req, EOPNOTSUPP);
}

static void v_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	fuse_reply_err(req, ENODATA);
}

static void v_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		       size_t size, int flags)
{
	fuse_reply_err(req, ENOTSUP);
}

static void v_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, "", 0);
}

static void v_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, ENODATA);
}

static void v_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		    struct fuse_file_info *fi, unsigned int flags, const void *in_buf,
		    size_t in_bufsz, size_t out_bufsz)
{
	fuse_reply_err(req, ENOTTY);
}

const struct fuse_lowlevel_ops vdir_ops = {
	.lookup = v_lookup,
	.forget = v_forget,
	.getattr = v_getattr,
	.setattr = v_setattr,
	.mknod = v_mknod,
	.mkdir = v_mkdir,
	.unlink = v_unlink,
	.rmdir = v_rmdir,
	.rename = v_rename,
	.open = v_open,
	.read = v_read,
	.write = v_write,
	.flush = v_ok_fi,
	.release = v_release,
	.fsync = v_fsync,
	.readdir = v_readdir,
	.setxattr = v_setxattr,
	.getxattr = v_getxattr,
	.listxattr = v_listxattr,
	.removexattr = v_removexattr,
	.access = v_access,
	.create = v_create,
	.poll = v_poll,
	.fallocate = v_fallocate,
	.ioctl = v_ioctl,
};
