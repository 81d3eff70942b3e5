/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/fake.c: the fake libmaru and libfuse of the fs/ unit tests
 * (see fake.h). Versions live in a small array; a maru_file is a handle on
 * one of them (a pending one until published). Replies are recorded in fk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "dcache.h"
#include "evring.h"
#include "fake.h"
#include "handle.h"
#include "inode.h"
#include "notify.h"
#include "pending.h"
#include "pin.h"

struct fake fk;
const struct fake_events *fake_events;

struct maru_file {
	uint64_t ino;
	int lease;
};

struct fuse_req_fake {
	struct mfs *m;
};

static struct fuse_req_fake reqs[16];
static unsigned int nreq;

void fake_reset(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.next_ino = 100;
}

fuse_req_t fake_req(struct mfs *m)
{
	struct fuse_req_fake *r = &reqs[nreq++ % 16];

	r->m = m;
	return (fuse_req_t)r;
}

void fake_mount(struct mfs *m)
{
	memset(m, 0, sizeof(*m));
	m->o.attr_timeout = m->o.entry_timeout = m->o.negative_timeout = 1;
	m->o.pool = (char *)"maru+unix:///fake.sock";
	if (itab_new(&pend_payload_ops, &m->tab) || ptab_new(&m->pt) || dcache_new(&m->dc) ||
	    pins_new(&m->pins) || hreg_new(&m->hr) || notify_new(m, &m->nt) ||
	    evring_new(m, &m->ring))
		abort();
}

void fake_unmount(struct mfs *m)
{
	hreg_release_all(m);
	pins_free(m->pins);
	itab_free(m->tab);
	ptab_free(m->pt);
	notify_free(m->nt);
	evring_free(m->ring);
	dcache_free(m->dc);
	hreg_free(m->hr);
	memset(m, 0, sizeof(*m));
}

struct fake_ver *fake_ver(uint64_t ino)
{
	int i;

	for (i = 0; i < FAKE_MAX; i++)
		if (fk.v[i].used && fk.v[i].ino == ino)
			return &fk.v[i];
	return NULL;
}

struct fake_ver *fake_named(uint64_t parent, const char *name)
{
	int i;

	for (i = 0; i < FAKE_MAX; i++)
		if (fk.v[i].used && fk.v[i].published && fk.v[i].parent == parent &&
		    strcmp(fk.v[i].name, name) == 0)
			return &fk.v[i];
	return NULL;
}

static struct fake_ver *ver_new(uint64_t parent, const char *name)
{
	int i;

	for (i = 0; i < FAKE_MAX; i++) {
		if (!fk.v[i].used) {
			memset(&fk.v[i], 0, sizeof(fk.v[i]));
			fk.v[i].used = 1;
			fk.v[i].ino = fk.next_ino++;
			fk.v[i].parent = parent;
			snprintf(fk.v[i].name, sizeof(fk.v[i].name), "%s", name ? name : "");
			return &fk.v[i];
		}
	}
	abort();
}

uint64_t fake_publish(uint64_t parent, const char *name, const char *text)
{
	struct fake_ver *v = ver_new(parent, name);

	v->size = strlen(text);
	memcpy(v->data, text, v->size);
	v->published = 1;
	return v->ino;
}

struct maru_file *fake_lease(uint64_t ino)
{
	struct maru_file *f;

	if (maru_file_open_ino(NULL, ino, &f))
		abort();
	return f;
}

static struct maru_file *file_new(uint64_t ino, int lease)
{
	struct maru_file *f = calloc(1, sizeof(*f));

	if (!f)
		abort();
	f->ino = ino;
	f->lease = lease;
	fk.files_open++;
	return f;
}

static void fill_attr(const struct fake_ver *v, struct maru_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = v->ino;
	a->parent = v->parent;
	a->size = v->size;
	a->reserved = v->reserved;
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->state = v->published ? MARU_STATE_PUBLISHED : MARU_STATE_PENDING;
}

/* ---- libmaru ---- */

int __wrap_maru_file_create(struct maru_client *c, uint64_t parent, const char *name,
			    uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
			    uint64_t size_hint, struct maru_file **out);
int __wrap_maru_file_create(struct maru_client *c, uint64_t parent, const char *name,
			    uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
			    uint64_t size_hint, struct maru_file **out)
{
	struct fake_ver *old = fake_named(parent, name), *v;

	if ((flags & MARU_CREATE_EXCL) && old)
		return -EEXIST;
	v = ver_new(parent, name);
	if ((flags & MARU_CREATE_COPY) && old) {
		memcpy(v->data, old->data, old->size);
		v->size = old->size;
	}
	fk.creates++;
	*out = file_new(v->ino, 0);
	return 0;
}

int __wrap_maru_file_rewrite(struct maru_client *c, uint64_t ino, unsigned int flags,
			     uint64_t size_hint, struct maru_file **out);
int __wrap_maru_file_rewrite(struct maru_client *c, uint64_t ino, unsigned int flags,
			     uint64_t size_hint, struct maru_file **out)
{
	struct fake_ver *old = fake_ver(ino), *v;

	if (!old || !old->published || fake_named(old->parent, old->name) != old)
		return -ESTALE;
	v = ver_new(old->parent, old->name);
	if (flags & MARU_CREATE_COPY) {
		memcpy(v->data, old->data, old->size);
		v->size = old->size;
	}
	fk.rewrites++;
	*out = file_new(v->ino, 0);
	return 0;
}

int __wrap_maru_file_open_ino(struct maru_client *c, uint64_t ino, struct maru_file **out);
int __wrap_maru_file_open_ino(struct maru_client *c, uint64_t ino, struct maru_file **out)
{
	struct fake_ver *v = fake_ver(ino);

	if (fk.open_ino_rc)
		return fk.open_ino_rc;
	if (!v || !v->published)
		return -ESTALE;
	*out = file_new(ino, 1);
	return 0;
}

uint64_t __wrap_maru_file_ino(const struct maru_file *f);
uint64_t __wrap_maru_file_ino(const struct maru_file *f)
{
	return f->ino;
}

int __wrap_maru_file_is_pending(const struct maru_file *f);
int __wrap_maru_file_is_pending(const struct maru_file *f)
{
	return !f->lease;
}

uint64_t __wrap_maru_file_size(struct maru_file *f);
uint64_t __wrap_maru_file_size(struct maru_file *f)
{
	return fake_ver(f->ino)->size;
}

int __wrap_maru_file_attr(struct maru_file *f, struct maru_attr *a);
int __wrap_maru_file_attr(struct maru_file *f, struct maru_attr *a)
{
	fill_attr(fake_ver(f->ino), a);
	return 0;
}

ssize_t __wrap_maru_file_pread(struct maru_file *f, void *buf, size_t len, uint64_t off);
ssize_t __wrap_maru_file_pread(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	struct fake_ver *v = fake_ver(f->ino);

	if (fk.pread_err && fk.preads++ >= fk.pread_err_after)
		return fk.pread_err;
	if (off >= v->size)
		return 0;
	if (fk.pread_max && len > fk.pread_max)
		len = fk.pread_max;
	if (len > v->size - off)
		len = v->size - off;
	memcpy(buf, v->data + off, len);
	return (ssize_t)len;
}

ssize_t __wrap_maru_file_pwrite(struct maru_file *f, const void *buf, size_t len,
				uint64_t off);
ssize_t __wrap_maru_file_pwrite(struct maru_file *f, const void *buf, size_t len,
				uint64_t off)
{
	struct fake_ver *v = fake_ver(f->ino);

	if (f->lease || v->published)
		return -EBADF;
	if (off + len > sizeof(v->data))
		return -ENOSPC;
	if (fk.pwrite_err) {
		int err = fk.pwrite_err;
		size_t part = fk.pwrite_part < len ? fk.pwrite_part : len;

		/* a link cut mid-write: some bytes landed, the rest never will
		 * (the call after the short one fails) */
		fk.pwrite_err = part ? err : 0;
		fk.pwrite_part = 0;
		memcpy(v->data + off, buf, part);
		if (off + part > v->size)
			v->size = off + part;
		return part ? (ssize_t)part : err;
	}
	memcpy(v->data + off, buf, len);
	if (off + len > v->size)
		v->size = off + len;
	return (ssize_t)len;
}

int __wrap_maru_file_truncate(struct maru_file *f, uint64_t size);
int __wrap_maru_file_truncate(struct maru_file *f, uint64_t size)
{
	struct fake_ver *v = fake_ver(f->ino);

	if (size > sizeof(v->data))
		return -ENOSPC;
	if (fk.truncate_err) {
		int err = fk.truncate_err;

		fk.truncate_err = 0;
		return err;
	}
	if (size > v->size)
		memset(v->data + v->size, 0, size - v->size);
	v->size = size;
	return 0;
}

int __wrap_maru_file_reserve(struct maru_file *f, uint64_t size);
int __wrap_maru_file_reserve(struct maru_file *f, uint64_t size)
{
	fake_ver(f->ino)->reserved = size;
	return 0;
}

int __wrap_maru_file_sync(struct maru_file *f);
int __wrap_maru_file_sync(struct maru_file *f)
{
	int err = fk.sync_err;

	fk.sync_err = 0;
	return err;
}

int __wrap_maru_file_publish(struct maru_file *f);
int __wrap_maru_file_publish(struct maru_file *f)
{
	struct fake_ver *v = fake_ver(f->ino), *old;
	int rc;

	if (fk.publish_hook)
		fk.publish_hook();
	rc = fk.publish_rc;
	if (rc)
		return rc;
	old = fake_named(v->parent, v->name);
	if (old)
		old->published = 0;	/* replaced */
	v->published = 1;
	f->lease = 1;
	fk.publishes++;
	return 0;
}

/* The directory as the publish left it: its entry count, a ctime that moves. */
int __wrap_maru_file_publish_dir(struct maru_file *f, struct maru_attr *dir);
int __wrap_maru_file_publish_dir(struct maru_file *f, struct maru_attr *dir)
{
	uint64_t parent = fake_ver(f->ino)->parent;
	int rc = __wrap_maru_file_publish(f), i;

	if (!dir)
		return rc;
	memset(dir, 0, sizeof(*dir));
	if (rc)
		return rc;
	dir->ino = parent;
	dir->state = MARU_STATE_DIR;
	dir->mode = S_IFDIR | 0755;
	dir->nlink = 2;
	for (i = 0; i < FAKE_MAX; i++)
		dir->size += fk.v[i].used && fk.v[i].published && fk.v[i].parent == parent;
	dir->ctime.tv_sec = dir->mtime.tv_sec = fk.publishes;
	return 0;
}

void __wrap_maru_file_close(struct maru_file *f);
void __wrap_maru_file_close(struct maru_file *f)
{
	fk.files_open--;
	fk.closes++;
	free(f);
}

int __wrap_maru_file_splice_src(struct maru_file *f, uint64_t off, int *fd, uint64_t *fd_off,
				size_t *len);
int __wrap_maru_file_splice_src(struct maru_file *f, uint64_t off, int *fd, uint64_t *fd_off,
				size_t *len)
{
	uint64_t size = fake_ver(f->ino)->size, n;

	fk.splices++;
	*fd = -1;
	*fd_off = 0;
	*len = 0;
	if (!fk.splice_piece || !f->lease)
		return -EOPNOTSUPP;
	if (off >= size)
		return 0;
	n = fk.splice_piece - off % fk.splice_piece;
	*fd = FAKE_SPLICE_FD;
	*fd_off = FAKE_SPLICE_BASE + off;
	*len = (size_t)(n < size - off ? n : size - off);
	return 0;
}

ssize_t __wrap_maru_file_extents(struct maru_file *f, struct maru_extent *ext, size_t max);
ssize_t __wrap_maru_file_extents(struct maru_file *f, struct maru_extent *ext, size_t max)
{
	if (max >= 2) {
		ext[0] = (struct maru_extent){ 4096, 8192 };
		ext[1] = (struct maru_extent){ 65536, 4096 };
	}
	return 2;
}

int __wrap_maru_lookup(struct maru_client *c, uint64_t parent, const char *name,
		       struct maru_attr *a);
int __wrap_maru_lookup(struct maru_client *c, uint64_t parent, const char *name,
		       struct maru_attr *a)
{
	struct fake_ver *v = fake_named(parent, name);

	if (fk.away_rc)
		return fk.away_rc;
	if (!v)
		return -ENOENT;
	fill_attr(v, a);
	return 0;
}

int __wrap_maru_getattr(struct maru_client *c, uint64_t ino, struct maru_attr *a);
int __wrap_maru_getattr(struct maru_client *c, uint64_t ino, struct maru_attr *a)
{
	struct fake_ver *v = fake_ver(ino);

	if (fk.away_rc)
		return fk.away_rc;
	if (ino == FUSE_ROOT_ID) {
		memset(a, 0, sizeof(*a));
		a->ino = ino;
		a->mode = S_IFDIR | 0755;
		return 0;
	}
	if (!v)
		return -ENOENT;
	fill_attr(v, a);
	return 0;
}

int __wrap_maru_pin_set(struct maru_client *c, uint64_t ino, uint32_t seconds);
int __wrap_maru_pin_set(struct maru_client *c, uint64_t ino, uint32_t seconds)
{
	int rc = fk.pin_rc;

	fk.pin_rc = 0;
	if (rc)
		return rc;
	fk.pin_sets++;
	fk.last_pin_ino = ino;
	fk.last_pin_seconds = seconds;
	fk.pin_left = seconds;
	return seconds > INT32_MAX ? INT32_MAX : (int)seconds;	/* as libmaru */
}

int __wrap_maru_pin_get(struct maru_client *c, uint64_t ino);
int __wrap_maru_pin_get(struct maru_client *c, uint64_t ino)
{
	return fk.pin_left > INT32_MAX ? INT32_MAX : (int)fk.pin_left;
}

int __wrap_maru_setattr(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
			struct maru_attr *a);
int __wrap_maru_setattr(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
			struct maru_attr *a)
{
	return __wrap_maru_getattr(c, ino, a);
}

int __wrap_maru_unlink(struct maru_client *c, uint64_t parent, const char *name);
int __wrap_maru_unlink(struct maru_client *c, uint64_t parent, const char *name)
{
	struct fake_ver *v = fake_named(parent, name);

	if (v)
		v->published = 0;
	return 0;
}

int __wrap_maru_rename(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
		       const char *nn, unsigned int flags);
int __wrap_maru_rename(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
		       const char *nn, unsigned int flags)
{
	return -ENOSYS;
}

int __wrap_maru_mkdir(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out);
int __wrap_maru_mkdir(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	return -ENOSYS;
}

int __wrap_maru_rmdir(struct maru_client *c, uint64_t parent, const char *name);
int __wrap_maru_rmdir(struct maru_client *c, uint64_t parent, const char *name)
{
	return -ENOSYS;
}

/* Directory parent lists the published versions in it. */
int __wrap_maru_readdir(struct maru_client *c, uint64_t dir, uint64_t cookie,
			maru_readdir_cb cb, void *arg);
int __wrap_maru_readdir(struct maru_client *c, uint64_t dir, uint64_t cookie,
			maru_readdir_cb cb, void *arg)
{
	struct maru_dirent de;
	int i;

	if (fk.away_rc)
		return fk.away_rc;
	for (i = (int)cookie; i < FAKE_MAX; i++) {
		if (!fk.v[i].used || !fk.v[i].published || fk.v[i].parent != dir)
			continue;
		de = (struct maru_dirent){ fk.v[i].ino, (uint64_t)i + 1, S_IFREG,
					   MARU_STATE_PUBLISHED,
					   (uint16_t)strlen(fk.v[i].name), fk.v[i].name };
		if (cb(arg, &de))
			break;
	}
	return 0;
}

int __wrap_maru_statfs(struct maru_client *c, struct maru_statfs *out);
int __wrap_maru_statfs(struct maru_client *c, struct maru_statfs *out)
{
	if (fk.away_rc)
		return fk.away_rc;
	*out = fk.statfs;
	return 0;
}

int __wrap_maru_ns_usage(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out);
int __wrap_maru_ns_usage(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out)
{
	if (!fk.ns_root || dir != fk.ns_root)
		return -ENODATA;
	*out = fk.ns;
	return 0;
}

ssize_t __wrap_maru_stats_text(struct maru_client *c, char *buf, size_t len);
ssize_t __wrap_maru_stats_text(struct maru_client *c, char *buf, size_t len)
{
	return snprintf(buf, len, "marud_up 1\n");
}

uint64_t __wrap_maru_client_epoch(struct maru_client *c, uint64_t id);
uint64_t __wrap_maru_client_epoch(struct maru_client *c, uint64_t id)
{
	return fk.epoch + fk.pool_epoch[(id >> 56) & 3];
}

int __wrap_maru_client_pool_info(struct maru_client *c, struct maru_pool_info *out);
int __wrap_maru_client_pool_info(struct maru_client *c, struct maru_pool_info *out)
{
	memset(out, 0, sizeof(*out));
	out->generation = 7;
	out->size = 1 << 20;
	out->align = 4096;
	out->data_path = MARU_DATA_SHM;
	snprintf(out->path, sizeof(out->path), "/dev/shm/fake");
	return 0;
}

const char *__wrap_maru_client_rdma_rights(struct maru_client *c);
const char *__wrap_maru_client_rdma_rights(struct maru_client *c)
{
	return NULL;	/* the fake pool offers no rdma path */
}

int __wrap_maru_events_open(struct maru_client *c, uint64_t after, struct maru_events **out);
int __wrap_maru_events_open(struct maru_client *c, uint64_t after, struct maru_events **out)
{
	return fake_events ? fake_events->open(out) : -ENOTCONN;
}

int __wrap_maru_events_next(struct maru_events *ev, struct maru_event *out, int ms);
int __wrap_maru_events_next(struct maru_events *ev, struct maru_event *out, int ms)
{
	return fake_events ? fake_events->next(out, ms) : 0;
}

int __wrap_maru_events_ack(struct maru_events *ev, uint64_t seq);
int __wrap_maru_events_ack(struct maru_events *ev, uint64_t seq)
{
	return fake_events ? fake_events->ack(seq) : 0;
}

int __wrap_maru_events_up(struct maru_events *ev, uint64_t *losses);
int __wrap_maru_events_up(struct maru_events *ev, uint64_t *losses)
{
	if (fake_events && fake_events->up)
		return fake_events->up(losses);
	if (losses)
		*losses = 0;
	return 1;
}

void __wrap_maru_events_close(struct maru_events *ev);
void __wrap_maru_events_close(struct maru_events *ev)
{
	if (fake_events)
		fake_events->close();
}

/* ---- libfuse ---- */

void *__wrap_fuse_req_userdata(fuse_req_t req);
void *__wrap_fuse_req_userdata(fuse_req_t req)
{
	return ((struct fuse_req_fake *)req)->m;
}

const struct fuse_ctx *__wrap_fuse_req_ctx(fuse_req_t req);
const struct fuse_ctx *__wrap_fuse_req_ctx(fuse_req_t req)
{
	static struct fuse_ctx ctx;

	ctx.pid = 1;	/* init is never a task dying of a signal */
	return &ctx;
}

int __wrap_fuse_req_interrupted(fuse_req_t req);
int __wrap_fuse_req_interrupted(fuse_req_t req)
{
	return 0;
}

/* Interrupt callbacks (fs/intr.c): kept, so a test can run one as libfuse would. */
void __wrap_fuse_req_interrupt_func(fuse_req_t req, fuse_interrupt_func_t func, void *data);
void __wrap_fuse_req_interrupt_func(fuse_req_t req, fuse_interrupt_func_t func, void *data)
{
	fk.intr_req = req;
	fk.intr_func = func;
	fk.intr_data = data;
}

int __wrap_fuse_session_exited(struct fuse_session *se);
int __wrap_fuse_session_exited(struct fuse_session *se)
{
	return 0;
}

int __wrap_fuse_reply_err(fuse_req_t req, int err);
int __wrap_fuse_reply_err(fuse_req_t req, int err)
{
	fk.replies++;
	fk.last_err = err;
	return 0;
}

void __wrap_fuse_reply_none(fuse_req_t req);
void __wrap_fuse_reply_none(fuse_req_t req)
{
	fk.replies++;
}

int __wrap_fuse_reply_buf(fuse_req_t req, const char *buf, size_t size);
int __wrap_fuse_reply_buf(fuse_req_t req, const char *buf, size_t size)
{
	fk.replies++;
	fk.last_err = 0;
	fk.last_len = size < sizeof(fk.last_buf) ? size : sizeof(fk.last_buf) - 1;
	if (fk.last_len)
		memcpy(fk.last_buf, buf, fk.last_len);
	fk.last_buf[fk.last_len] = '\0';
	return 0;
}

int __wrap_fuse_reply_xattr(fuse_req_t req, size_t count);
int __wrap_fuse_reply_xattr(fuse_req_t req, size_t count)
{
	fk.replies++;
	fk.last_err = 0;
	fk.last_xattr = count;
	return 0;
}

int __wrap_fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e);
int __wrap_fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	fk.replies++;
	fk.last_err = 0;
	fk.last_len = (size_t)e->ino;
	return 0;
}

int __wrap_fuse_reply_attr(fuse_req_t req, const struct stat *st, double timeout);
int __wrap_fuse_reply_attr(fuse_req_t req, const struct stat *st, double timeout)
{
	fk.replies++;
	fk.last_err = 0;
	fk.last_len = (size_t)st->st_size;
	return 0;
}

int __wrap_fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi);
int __wrap_fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi)
{
	fk.replies++;
	fk.last_err = 0;
	return 0;
}

int __wrap_fuse_reply_poll(fuse_req_t req, unsigned int revents);
int __wrap_fuse_reply_poll(fuse_req_t req, unsigned int revents)
{
	fk.replies++;
	return 0;
}

int __wrap_fuse_lowlevel_notify_inval_entry(struct fuse_session *se, fuse_ino_t parent,
					     const char *name, size_t namelen);
int __wrap_fuse_lowlevel_notify_inval_entry(struct fuse_session *se, fuse_ino_t parent,
					     const char *name, size_t namelen)
{
	__atomic_add_fetch(&fk.inval_entries, 1, __ATOMIC_SEQ_CST);
	snprintf(fk.last_inval, sizeof(fk.last_inval), "%.*s", (int)namelen, name);
	return 0;
}

int __wrap_fuse_lowlevel_notify_inval_inode(struct fuse_session *se, fuse_ino_t ino,
					     off_t off, off_t len);
int __wrap_fuse_lowlevel_notify_inval_inode(struct fuse_session *se, fuse_ino_t ino,
					     off_t off, off_t len)
{
	__atomic_add_fetch(&fk.inval_inodes, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int __wrap_fuse_lowlevel_notify_store(struct fuse_session *se, fuse_ino_t ino, off_t off,
				       struct fuse_bufvec *bufv, enum fuse_buf_copy_flags flags);
int __wrap_fuse_lowlevel_notify_store(struct fuse_session *se, fuse_ino_t ino, off_t off,
				       struct fuse_bufvec *bufv, enum fuse_buf_copy_flags flags)
{
	__atomic_add_fetch(&fk.stores, 1, __ATOMIC_SEQ_CST);
	fk.last_store_ino = ino;
	return 0;
}

int __wrap_fuse_lowlevel_notify_poll(struct fuse_pollhandle *ph);
int __wrap_fuse_lowlevel_notify_poll(struct fuse_pollhandle *ph)
{
	return 0;
}

void __wrap_fuse_pollhandle_destroy(struct fuse_pollhandle *ph);
void __wrap_fuse_pollhandle_destroy(struct fuse_pollhandle *ph)
{
}

/*
 * Replies only some tests --wrap (tests/unit/meson.build): defined for
 * every test, used by those. A create's entry goes where reply_entry's
 * does; statfs keeps two fields; write and data keep what a test reads.
 */
int __wrap_fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi);
int __wrap_fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi)
{
	fk.replies++;
	fk.last_err = 0;
	fk.last_len = (size_t)e->ino;
	fk.last_direct_io = fi->direct_io;
	return 0;
}

int __wrap_fuse_reply_statfs(fuse_req_t req, const struct statvfs *st);
int __wrap_fuse_reply_statfs(fuse_req_t req, const struct statvfs *st)
{
	fk.replies++;
	fk.last_err = 0;
	fk.last_namemax = st->f_namemax;
	fk.last_blocks = st->f_blocks;
	fk.last_statvfs = *st;
	return 0;
}

int __wrap_fuse_reply_write(fuse_req_t req, size_t count);
int __wrap_fuse_reply_write(fuse_req_t req, size_t count)
{
	fk.replies++;
	fk.last_err = 0;
	fk.last_len = count;
	return 0;
}

int __wrap_fuse_reply_data(fuse_req_t req, struct fuse_bufvec *bufv,
			   enum fuse_buf_copy_flags flags);
int __wrap_fuse_reply_data(fuse_req_t req, struct fuse_bufvec *bufv,
			   enum fuse_buf_copy_flags flags)
{
	fk.replies++;
	fk.datas++;
	fk.last_err = 0;
	return 0;
}

/* Entries as "name\n" lines, so a test can read the listing back. */
size_t __wrap_fuse_add_direntry(fuse_req_t req, char *buf, size_t bufsize, const char *name,
				const struct stat *st, off_t off);
size_t __wrap_fuse_add_direntry(fuse_req_t req, char *buf, size_t bufsize, const char *name,
				const struct stat *st, off_t off)
{
	size_t n = strlen(name) + 1;

	if (n <= bufsize) {
		memcpy(buf, name, n - 1);
		buf[n - 1] = '\n';
	}
	return n;
}
