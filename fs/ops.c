/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ops.c: marufs's fuse_lowlevel_ops table. Each entry counts its request
 * for .maru/stats and routes it: requests about .maru/ go to vdir_ops
 * (vdir.c), name operations to ns.c, extended attributes to xattr.c,
 * ioctls to ioctl.c, and file requests to the open handle (handle.c),
 * replying with what it returns. Calls run one way from here: ops ->
 * (ns, link, xattr, ioctl, vdir) -> handle -> pendslot -> rewrite ->
 * (pendio, pendlife) -> pending -> inode -> libmaru; notify, events,
 * evring, dcache, pin and metrics sit beside them and never call back up.
 * Every request first binds its FUSE INTERRUPT to the thread's libmaru
 * cancel token (intr.c). The mount context is fuse_req_userdata(). No
 * lock, no state.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>

#include "bdi.h"
#include "handle.h"
#include "hints.h"
#include "intr.h"
#include "ioctl.h"
#include "log.h"
#include "link.h"
#include "ns.h"
#include "ops.h"
#include "pin.h"
#include "vdir.h"
#include "xattr.h"

#define MAX_WRITE	(1u << 20)

/* A request's time in marufs, observed as its op function returns (the
 * reply is sent by then, but for the few that answer later from another
 * thread). Holds the mount, never req: req is gone after the reply. */
struct op_timer {
	struct mfs *m;
	int op;
	uint64_t t0;
};

static inline void op_timer_end(struct op_timer *t)
{
	hist_done(&t->m->cnt.lat[t->op], t->t0);
}

/* Count and time the request; a FUSE INTERRUPT of it ends its libmaru call
 * (intr.c). A declaration: first in its function. */
#define OP(req, name)							\
	struct op_timer op_timer_ __attribute__((cleanup(op_timer_end))) = \
		{ req_mfs(req), OP_##name, hist_start() };		\
	do {								\
		CNT_INC(op_timer_.m, ops[OP_##name]);			\
		intr_begin(req, OP_##name);				\
	} while (0)

/* ---- names ---- */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	OP(req, LOOKUP);
	if (vdir_claims(parent, name))
		vdir_ops.lookup(req, parent, name);
	else
		ns_lookup(req, parent, name);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	OP(req, FORGET);
	if (ino_is_virt(ino))
		vdir_ops.forget(req, ino, nlookup);
	else
		ns_forget(req, ino, nlookup);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	OP(req, FORGET);
	ns_forget_multi(req, count, forgets);	/* .maru/'s inodes are not counted */
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(req, GETATTR);
	if (ino_is_virt(ino))
		vdir_ops.getattr(req, ino, fi);
	else
		ns_getattr(req, ino, fi);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	OP(req, SETATTR);
	if (ino_is_virt(ino))
		vdir_ops.setattr(req, ino, attr, to_set, fi);
	else
		ns_setattr(req, ino, attr, to_set, fi);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	OP(req, MKNOD);
	if (vdir_claims(parent, name))
		vdir_ops.mknod(req, parent, name, mode, rdev);
	else if (S_ISREG(mode))
		ns_mknod(req, parent, name, mode, rdev);
	else	/* FIFOs, sockets, devices: metadata only (link.c) */
		link_mknod(req, parent, name, mode, rdev);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	OP(req, SYMLINK);
	if (vdir_claims(parent, name) || ino_is_virt(parent))
		fuse_reply_err(req, EPERM);	/* .maru/ holds only its own files */
	else
		link_symlink(req, link, parent, name);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	OP(req, READLINK);
	if (ino_is_virt(ino))
		fuse_reply_err(req, EINVAL);
	else
		link_readlink(req, ino);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	OP(req, LINK);
	if (ino_is_virt(ino) || ino_is_virt(newparent) || vdir_claims(newparent, newname))
		fuse_reply_err(req, EPERM);
	else
		link_hardlink(req, ino, newparent, newname);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	OP(req, MKDIR);
	if (vdir_claims(parent, name))
		vdir_ops.mkdir(req, parent, name, mode);
	else
		ns_mkdir(req, parent, name, mode);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	OP(req, UNLINK);
	if (vdir_claims(parent, name))
		vdir_ops.unlink(req, parent, name);
	else
		ns_unlink(req, parent, name);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	OP(req, RMDIR);
	if (vdir_claims(parent, name))
		vdir_ops.rmdir(req, parent, name);
	else
		ns_rmdir(req, parent, name);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	OP(req, RENAME);
	if (vdir_claims(parent, name) || vdir_claims(newparent, newname))
		vdir_ops.rename(req, parent, name, newparent, newname, flags);
	else
		ns_rename(req, parent, name, newparent, newname, flags);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	OP(req, CREATE);
	if (vdir_claims(parent, name))
		vdir_ops.create(req, parent, name, mode, fi);
	else
		ns_create(req, parent, name, mode, fi);
}

/* ---- directories ---- */

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(req, OPENDIR);
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(req, RELEASEDIR);
	fuse_reply_err(req, 0);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	OP(req, READDIR);
	if (ino_is_virt(ino))
		vdir_ops.readdir(req, ino, size, off, fi);
	else
		ns_readdir(req, ino, size, off, fi);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	OP(req, STATFS);
	ns_statfs(req, ino);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	OP(req, ACCESS);
	if (ino_is_virt(ino))
		vdir_ops.access(req, ino, mask);
	else
		ns_access(req, ino, mask);
}

/* ---- open files ---- */

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h;
	int rc, keep, direct;

	OP(req, OPEN);
	if (ino_is_virt(ino)) {
		vdir_ops.open(req, ino, fi);
		return;
	}
	rc = handle_open(req_mfs(req), ino, fi->flags, &h, &keep, &direct);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uintptr_t)h;
	handle_task(h, fuse_req_ctx(req)->pid, 0);
	fi->keep_cache = keep && !direct;
	fi->direct_io = direct;
	/* a reader's FLUSH does nothing (handle_flush): spare close() it */
	fi->noflush = !handle_is_writer(h);
	lookup_hints_opened(req_mfs(req), ino);	/* a hinted load starts: promote */
	if (fuse_reply_open(req, fi) != 0)
		handle_close(h);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct handle_src src;
	ssize_t n;
	char *buf;

	OP(req, READ);
	if (ino_is_virt(ino)) {
		vdir_ops.read(req, ino, size, off, fi);
		return;
	}
	/* the pool file as the reply's source: the kernel splices its pages */
	n = handle_read_src(fh_handle(fi), size, off, &src);
	if (n == 0) {
		/* never SPLICE_MOVE: a moved page would leave the pool file */
		fuse_reply_data(req, &src.bv, 0);
		return;
	}
	if (n == -EAGAIN)
		n = handle_read(fh_handle(fi), size, off, &buf);
	if (n < 0)
		fuse_reply_err(req, io_errno((int)n));
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	ssize_t n;

	OP(req, WRITE);
	if (ino_is_virt(ino)) {
		vdir_ops.write(req, ino, buf, size, off, fi);
		return;
	}
	handle_task(fh_handle(fi), fuse_req_ctx(req)->pid, 1);
	n = handle_write(fh_handle(fi), buf, size, off);
	if (n < 0)
		fuse_reply_err(req, io_errno((int)n));
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(req, FLUSH);
	if (ino_is_virt(ino))
		vdir_ops.flush(req, ino, fi);
	else
		fuse_reply_err(req, -handle_flush(fh_handle(fi), fuse_req_ctx(req)->pid));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OP(req, RELEASE);
	pin_expire(req_mfs(req)->pins);
	maru_lease_cache_expire(req_mfs(req)->lc);
	if (ino_is_virt(ino)) {
		vdir_ops.release(req, ino, fi);
		return;
	}
	if (fi->fh)
		handle_close(fh_handle(fi));
	lookup_hints_released(req_mfs(req), ino);
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	OP(req, FSYNC);
	if (ino_is_virt(ino))
		vdir_ops.fsync(req, ino, datasync, fi);
	else
		fuse_reply_err(req, -handle_fsync(fh_handle(fi)));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	OP(req, FALLOCATE);
	if (ino_is_virt(ino))
		vdir_ops.fallocate(req, ino, mode, off, len, fi);
	else if (mode != 0)
		fuse_reply_err(req, EOPNOTSUPP);
	else
		fuse_reply_err(req, -handle_fallocate(fh_handle(fi),
						      (uint64_t)off + (uint64_t)len));
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	OP(req, POLL);
	if (ino_is_virt(ino)) {
		vdir_ops.poll(req, ino, fi, ph);
		return;
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
}

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned int flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	OP(req, IOCTL);
	if (ino_is_virt(ino))
		vdir_ops.ioctl(req, ino, cmd, arg, fi, flags, in_buf, in_bufsz, out_bufsz);
	else
		ioctl_handle(req, ino, cmd, fi, flags, in_buf, in_bufsz, out_bufsz);
}

/* ---- extended attributes ---- */

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	OP(req, GETXATTR);
	if (ino_is_virt(ino))
		vdir_ops.getxattr(req, ino, name, size);
	else
		xattr_get(req, ino, name, size);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	OP(req, SETXATTR);
	if (ino_is_virt(ino))
		vdir_ops.setxattr(req, ino, name, value, size, flags);
	else
		xattr_set(req, ino, name, value, size, flags);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	OP(req, LISTXATTR);
	if (ino_is_virt(ino))
		vdir_ops.listxattr(req, ino, size);
	else
		xattr_list(req, ino, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	OP(req, REMOVEXATTR);
	if (ino_is_virt(ino))
		vdir_ops.removexattr(req, ino, name);
	else
		xattr_remove(req, ino, name);
}

/*
 * The kernel gives a FUSE mount 128 KiB of read-ahead, and takes the
 * smaller of its device's read_ahead_kb and the INIT reply's
 * max_readahead when the reply comes: a sequential read of a chunk would be
 * one READ per 128 KiB. Raise both here, before the reply goes, on the
 * mount's own device (found in mountinfo: a stat of the mount would wait
 * for this very loop).
 */
static void readahead_init(const struct mfs *m, struct fuse_conn_info *conn)
{
	unsigned int kb = m->o.readahead_kb, was = 0;
	int rc;

	if (!kb || !m->o.mountpoint)
		return;
	rc = bdi_readahead("/proc/self/mountinfo", "/sys", m->o.mountpoint, kb, &was);
	if (rc < 0) {
		log_warnx("read-ahead of %s left as the kernel set it: %s (a sequential read "
			  "is then one READ per 128 KiB; -o readahead_kb=0 not to try)",
			  m->o.mountpoint, strerror(-rc));
		return;
	}
	conn->max_readahead = kb * 1024;
	log_debug("read-ahead of %s: %u KiB, was %u KiB", m->o.mountpoint, kb, was);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	if (userdata)
		readahead_init(userdata, conn);
	conn->max_write = MAX_WRITE;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* open(O_TRUNC) must reach open(), not become a separate setattr
	 * that would publish an empty version first */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* An inode's bytes change only through this kernel (a version is
	 * immutable, a pending one is this mount's): no GETATTR before reads
	 * to see whether the pages are still good, and publishing (which sets
	 * the mtime) does not throw away the pages the writer left behind. */
	conn->want &= ~(unsigned int)FUSE_CAP_AUTO_INVAL_DATA;
	/* publish semantics need every write to arrive before flush */
	conn->want &= ~(unsigned int)FUSE_CAP_WRITEBACK_CACHE;
	/* replies may splice from the pool file (handle_read_src), never
	 * moving its pages; requests are read into buffers (marufs copies) */
	conn->want &= ~(unsigned int)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_MOVE);
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
}

void ops_init(struct fuse_lowlevel_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->init = op_init;
	ops->lookup = op_lookup;
	ops->forget = op_forget;
	ops->forget_multi = op_forget_multi;
	ops->getattr = op_getattr;
	ops->setattr = op_setattr;
	ops->mknod = op_mknod;
	ops->symlink = op_symlink;
	ops->readlink = op_readlink;
	ops->link = op_link;
	ops->mkdir = op_mkdir;
	ops->unlink = op_unlink;
	ops->rmdir = op_rmdir;
	ops->rename = op_rename;
	ops->open = op_open;
	ops->create = op_create;
	ops->read = op_read;
	ops->write = op_write;
	ops->flush = op_flush;
	ops->release = op_release;
	ops->fsync = op_fsync;
	ops->opendir = op_opendir;
	ops->readdir = op_readdir;
	ops->releasedir = op_releasedir;
	ops->statfs = op_statfs;
	ops->setxattr = op_setxattr;
	ops->getxattr = op_getxattr;
	ops->listxattr = op_listxattr;
	ops->removexattr = op_removexattr;
	ops->access = op_access;
	ops->fallocate = op_fallocate;
	ops->poll = op_poll;
	ops->ioctl = op_ioctl;
}
