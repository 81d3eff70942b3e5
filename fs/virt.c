/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/virt.c: the virtual .maru/ directory in the mount root. stats and pool
 * are snapshotted into the handle at open (so a read sees one consistent
 * text however it is split); events is a blocking stream over the notifier's
 * ring. All three are direct_io: their getattr size is 0 and the kernel must
 * not clip reads to it.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "marufs.h"

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
};

#define NVIRT (sizeof(virt_files) / sizeof(virt_files[0]))

static struct timespec mount_time;

int virt_getattr(uint64_t ino, struct stat *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	if (!mount_time.tv_sec)
		clock_gettime(CLOCK_REALTIME, &mount_time);
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atim = st->st_mtim = st->st_ctim = mount_time;
	st->st_blksize = 4096;
	if (ino == VIRT_INO_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	for (i = 0; i < NVIRT; i++) {
		if (virt_files[i].ino == ino) {
			st->st_mode = S_IFREG | 0444;
			st->st_nlink = 1;
			return 0;
		}
	}
	return -ENOENT;
}

int virt_lookup(uint64_t parent, const char *name, struct fuse_entry_param *e)
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
	e->entry_timeout = 3600;
	e->attr_timeout = 3600;
	return virt_getattr(ino, &e->attr);
}

static int stats_snapshot(struct vhandle *h)
{
	size_t cap = 16384, pos;
	char *buf;
	ssize_t n;

	for (;;) {
		buf = malloc(cap);
		if (!buf)
			return -ENOMEM;
		n = maru_stats_text(mfs->c, buf, cap);
		if (n < 0) {
			/* marud unreachable: still show marufs's own counters */
			n = 0;
			buf[0] = '\0';
		}
		if ((size_t)n < cap)
			break;
		free(buf);
		cap = (size_t)n + 1;
	}
	pos = (size_t)n;
	stats_append(&buf, &cap, &pos);
	h->buf = buf;
	h->len = pos;
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

static int pool_snapshot(struct vhandle *h)
{
	struct maru_pool_info *pi = malloc(sizeof(*pi));
	size_t cap = 2 * MARU_PATH_MAX + 1024;
	const uint8_t *u;
	int rc, n;

	if (!pi)
		return -ENOMEM;
	rc = maru_client_pool_info(mfs->c, pi);
	if (rc < 0)
		goto out;
	h->buf = malloc(cap);
	if (!h->buf) {
		rc = -ENOMEM;
		goto out;
	}
	u = pi->uuid;
	n = snprintf(h->buf, cap,
		     "uri %s\n"
		     "uuid %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		     "%02x%02x%02x%02x%02x%02x\n"
		     "capacity %" PRIu64 "\n"
		     "align %" PRIu64 "\n"
		     "data_path %s\n"
		     "path %s\n"
		     "generation %" PRIu64 "\n"
		     "coherence %s\n",
		     pi->uri[0] ? pi->uri : mfs->o.pool,
		     u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		     u[10], u[11], u[12], u[13], u[14], u[15],
		     pi->size, pi->align, path_name(pi->data_path), pi->path,
		     pi->generation,
		     pi->coherence == MARU_COHERENCE_FLUSH ? "flush" : "hw");
	h->len = n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
	rc = 0;
out:
	free(pi);
	return rc;
}

void virt_open(fuse_req_t req, uint64_t ino, struct fuse_file_info *fi)
{
	struct vhandle *h;
	int rc;

	if (ino == VIRT_INO_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->ino = ino;
	if (ino == VIRT_INO_STATS)
		rc = stats_snapshot(h);
	else if (ino == VIRT_INO_POOL)
		rc = pool_snapshot(h);
	else if (ino == VIRT_INO_EVENTS)
		rc = ring_reader_open(&h->r);
	else
		rc = -ENOENT;
	if (rc < 0) {
		free(h);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (ino == VIRT_INO_EVENTS)
		fi->nonseekable = 1;
	if (fuse_reply_open(req, fi) != 0)
		virt_release(fi);
}

void virt_read(fuse_req_t req, struct fuse_file_info *fi, size_t size, off_t off)
{
	struct vhandle *h = (struct vhandle *)(uintptr_t)fi->fh;
	char *copy;

	if (h->r) {
		ring_reader_read(req, h->r, size);
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

void virt_release(struct fuse_file_info *fi)
{
	struct vhandle *h = (struct vhandle *)(uintptr_t)fi->fh;

	if (!h)
		return;
	if (h->r)
		ring_reader_close(h->r);
	free(h->buf);
	free(h);
	fi->fh = 0;
}

void virt_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct vhandle *h = (struct vhandle *)(uintptr_t)fi->fh;

	if (h && h->r) {
		ring_reader_poll(req, h->r, ph);
		return;
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM);
}

void virt_readdir(fuse_req_t req, off_t off, size_t size)
{
	char *buf = calloc(1, size ? size : 1);
	size_t pos = 0, n;
	struct stat st;
	off_t i;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = off; i < (off_t)NVIRT + 2; i++) {
		const char *name;

		memset(&st, 0, sizeof(st));
		if (i == 0) {
			name = ".";
			st.st_ino = VIRT_INO_DIR;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			st.st_ino = FUSE_ROOT_ID;
			st.st_mode = S_IFDIR;
		} else {
			name = virt_files[i - 2].name;
			st.st_ino = virt_files[i - 2].ino;
			st.st_mode = S_IFREG;
		}
		n = fuse_add_direntry(req, buf + pos, size - pos, name, &st, i + 1);
		if (n > size - pos)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}
