/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/handle.h: open regular files (handle.c). Every open or create of a
 * regular file gets a struct handle (fi->fh); these functions do what a
 * FUSE file request asks of it and return 0, a count, or -errno ready for
 * fuse_reply_err().
 */
#ifndef MARUFS_HANDLE_H
#define MARUFS_HANDLE_H

#include <stdint.h>
#include <sys/types.h>

#include "mount.h"

struct handle;
struct hreg;
struct pending;

int hreg_new(struct hreg **out);
/* After the session loop: free the handles whose RELEASE never came. */
void hreg_release_all(struct mfs *m);
void hreg_free(struct hreg *hr);

static inline struct handle *fh_handle(const struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

/* keep_cache: immutable published bytes; direct: the kernel's inode is not
 * the version served. */
int handle_open(struct mfs *m, uint64_t ino, int flags, struct handle **out,
		int *keep_cache, int *direct);
/* A new file (or this mount's pending of the name); *a its attributes. */
int handle_create(struct mfs *m, uint64_t parent, const char *name, mode_t mode,
		  uid_t uid, gid_t gid, int flags, struct handle **out, struct maru_attr *a);
/* RELEASE: the writer's release publishes if still due. */
void handle_close(struct handle *h);
/* Read into a per-thread buffer (*buf); bytes read. */
ssize_t handle_read(struct handle *h, size_t size, off_t off, char **buf);

/* A read's reply with the pool file as its source (fuse_reply_data). */
#define HANDLE_SRC_BUFS	8
struct handle_src {
	struct fuse_bufvec bv;
	struct fuse_buf more[HANDLE_SRC_BUFS - 1];	/* bv.buf[] runs on here */
};
int handle_read_src(struct handle *h, size_t size, off_t off, struct handle_src *src);
ssize_t handle_write(struct handle *h, const char *buf, size_t size, off_t off);
/*
 * Task pid opened h (wrote 0) or wrote through it (wrote 1): remembered,
 * with its process, so that a FLUSH can tell the writer's close from the
 * close of a copy another process holds (after fork).
 */
void handle_task(struct handle *h, pid_t pid, int wrote);
/*
 * FLUSH from task pid: the last active writer publishes. A process that
 * neither opened nor wrote through h closes a copy: nothing happens (no
 * round trip to marud), the writer's close or the last RELEASE publishes.
 */
int handle_flush(struct handle *h, pid_t pid);
int handle_fsync(struct handle *h);
int handle_fallocate(struct handle *h, uint64_t end);
/* fstat: what this descriptor reads, even if its name is gone. */
int handle_getattr(struct handle *h, uint64_t ino, struct maru_attr *a);
int handle_is_writer(const struct handle *h);
/* Opened for writing only: the kernel must bypass its page cache (direct_io). */
int handle_is_direct(const struct handle *h);
/* ftruncate through a writable handle. */
int handle_truncate(struct handle *h, uint64_t size, struct maru_attr *a);

/* The file behind an open handle, pinned for one ioctl. */
struct zc_ref {
	struct maru_file *file;
	struct pending *p;	/* locked for I/O and a ref taken; NULL: a lease */
	int pending;		/* file is a pending version */
	int writable;		/* and this handle may write it */
};

/*
 * Pin the handle's file (0, or -errno). want_write: its live pending
 * (copied on write if it was published), marked written, and one hold taken:
 * flushes do not publish while holds remain; a release with holds left
 * publishes nothing.
 */
int handle_zc_get(struct handle *h, int want_write, struct zc_ref *z);
void handle_zc_put(struct zc_ref *z);
/* Drop one hold; -EINVAL if there is none. */
int handle_zc_unhold(struct handle *h);

#endif
