/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/fill.c: bulk copies and zero-fills of pending versions that
 * run outside d->lock. A *_begin call does the directory work of a create
 * with copy, a growing truncate or a write past a hole under the lock, and
 * hands back a struct dir_fill: heap copies of the destination and source
 * extents, the source version pinned by a lease of the session (so neither
 * eviction, unlink nor replace can free its bytes), and the destination
 * marked "filling" so no other call changes it. The caller runs the copy
 * (dir_fill_run) with no lock held, then dir_fill_done() unpins, sets the
 * size, and on error abandons a created version. The plain calls
 * (dir_create, dir_truncate, dir_wrote and their *_ext forms) are begin,
 * run and done in one go, so the directory never copies under its lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "dir_priv.h"

enum { FILL_CREATE = 1, FILL_TRUNCATE = 2, FILL_WROTE = 3 };

static void fill_clear(struct dir_fill *f)
{
	alloc_extent_list_free(&f->dst);
	alloc_extent_list_free(&f->src);
}

/* Mark p filling [dst_off, dst_off + len) with a copy of its extents in f. */
static int fill_start(struct pend *p, uint64_t dst_off, uint64_t len, struct dir_fill *f)
{
	int rc = dir_ver_extents_copy(&p->v, &f->dst);

	if (rc)
		return rc;
	f->ino = p->v.id;
	f->dst_off = dst_off;
	f->len = len;
	p->filling = len != 0;
	return 0;
}

/* Pin the copy source src by a lease of s and copy its extents into f. */
static int fill_pin(struct dir *d, struct dir_session *s, struct node *src,
		    struct dir_fill *f)
{
	struct lease *spare = malloc(sizeof(*spare));

	if (!spare)
		return -ENOMEM;
	if (dir_ver_extents_copy(&src->u.v, &f->src)) {
		free(spare);
		return -ENOMEM;
	}
	dir_lease_pin(d, s, &src->u.v, spare);
	f->src_ino = src->u.v.id;
	return 0;
}

static int create_begin_locked(struct dir *d, struct dir_session *s,
			       const struct create_args *a, struct dir_attr *out,
			       struct dir_fill *f)
{
	struct node *src = NULL;
	struct pend *p;
	uint64_t len;
	int rc;

	rc = dir_create_locked(d, s, a, &p, &src);
	if (rc)
		return rc;
	len = src ? src->u.v.size : 0;
	f->kind = FILL_CREATE;
	f->size = len;
	rc = len ? fill_pin(d, s, src, f) : 0;
	if (!rc)
		rc = fill_start(p, 0, len, f);
	if (rc) {
		if (f->src_ino)
			dir_lease_drop(d, s, dir_lease_find(s, f->src_ino), 1);
		fill_clear(f);
		dir_pend_abandon(d, p);
		return rc;
	}
	dir_ver_attr(&p->v, dir_ver_parent(&p->v), out);
	return 0;
}

int dir_create_begin(struct dir *d, struct dir_session *s, uint64_t parent,
		     const char *name, size_t nlen, uint64_t from_ino, uint32_t flags,
		     uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size_hint,
		     struct dir_attr *out, struct dir_fill *f)
{
	struct create_args a = { parent, from_ino, size_hint, name, nlen,
				 flags, mode, uid, gid };
	int rc;

	memset(f, 0, sizeof(*f));
	pthread_mutex_lock(&d->lock);
	rc = create_begin_locked(d, s, &a, out, f);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* Size p at `size` now, or (growing past a hole) once [from, to) is zeroed. */
static int zero_begin(struct pend *p, uint64_t from, uint64_t to, uint64_t size,
		      struct dir_attr *out, struct dir_fill *f)
{
	int rc = fill_start(p, from, to > from ? to - from : 0, f);

	if (rc)
		return rc;
	f->size = size;
	if (!f->len) {
		p->v.size = size;
		p->v.mtime = p->v.ctime = now_ns();
	}
	dir_ver_attr(&p->v, dir_ver_parent(&p->v), out);
	return 0;
}

static int truncate_begin_locked(struct dir *d, struct dir_session *s, uint64_t ino,
				 uint64_t size, struct dir_attr *out, struct dir_fill *f)
{
	struct pend *p;
	int rc;

	rc = dir_own_pend_idle(d, s, ino, &p);
	if (!rc)
		rc = dir_pend_grow(d, p, size, 1);
	if (rc)
		return rc;
	f->kind = FILL_TRUNCATE;
	return zero_begin(p, p->v.size, size, size, out, f);
}

int dir_truncate_begin(struct dir *d, struct dir_session *s, uint64_t ino,
		       uint64_t size, struct dir_attr *out, struct dir_fill *f)
{
	int rc;

	memset(f, 0, sizeof(*f));
	pthread_mutex_lock(&d->lock);
	rc = truncate_begin_locked(d, s, ino, size, out, f);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int wrote_begin_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			      uint64_t start, uint64_t end, struct dir_attr *out,
			      struct dir_fill *f)
{
	struct pend *p;
	uint64_t size;
	int rc;

	rc = dir_own_pend_idle(d, s, ino, &p);
	if (rc)
		return rc;
	if (start > end || end > ver_reserved(&p->v))
		return -EINVAL;
	size = end > p->v.size ? end : p->v.size;
	f->kind = FILL_WROTE;
	return zero_begin(p, p->v.size, start, size, out, f);
}

int dir_wrote_begin(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t start,
		    uint64_t end, struct dir_attr *out, struct dir_fill *f)
{
	int rc;

	memset(f, 0, sizeof(*f));
	pthread_mutex_lock(&d->lock);
	rc = wrote_begin_locked(d, s, ino, start, end, out, f);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void dir_fill_run(struct dir *d, const struct dir_fill *f)
{
	/* d->o never changes after dir_new(): no lock needed to read it. */
	if (f->len)
		d->o.copy(d->o.copy_arg, &f->dst, f->dst_off,
			  f->src_ino ? &f->src : NULL, 0, f->len);
}

/* Undo or finish what a *_begin did to p; returns err or 0. */
static int fill_finish(struct dir *d, struct pend *p, const struct dir_fill *f, int err,
		       struct dir_attr *out)
{
	if (err) {
		if (f->kind == FILL_CREATE)
			dir_pend_abandon(d, p);
		else
			dir_ver_attr(&p->v, dir_ver_parent(&p->v), out);
		return err;
	}
	if (f->len) {
		p->v.size = f->size;
		if (f->kind != FILL_CREATE)
			p->v.mtime = p->v.ctime = now_ns();
	}
	dir_ver_attr(&p->v, dir_ver_parent(&p->v), out);
	return 0;
}

static int fill_done_locked(struct dir *d, struct dir_session *s, struct dir_fill *f,
			    int err, struct dir_attr *out)
{
	struct lease *l;
	struct pend *p;
	int rc;

	if (f->src_ino) {
		l = dir_lease_find(s, f->src_ino);
		if (l)
			dir_lease_drop(d, s, l, 1);
		f->src_ino = 0;
	}
	rc = dir_own_pend(d, s, f->ino, &p);
	if (rc)
		return rc;
	if (p->filling) {
		p->filling = 0;
		pthread_cond_broadcast(&d->fill_cond);
	}
	return fill_finish(d, p, f, err, out);
}

int dir_fill_done(struct dir *d, struct dir_session *s, struct dir_fill *f, int err,
		  struct dir_attr *out, struct extent_list *ext)
{
	int rc = 0;

	/* Nothing pinned, nothing filling: the begin call finished the work
	 * (and set *out), so a request with nothing to fill takes the lock once. */
	if (err || f->len || f->src_ino) {
		pthread_mutex_lock(&d->lock);
		rc = fill_done_locked(d, s, f, err, out);
		pthread_mutex_unlock(&d->lock);
	}
	alloc_extent_list_free(&f->src);
	if (!rc && ext) {
		*ext = f->dst;
		memset(&f->dst, 0, sizeof(f->dst));
	}
	alloc_extent_list_free(&f->dst);
	return rc;
}

/* ---- the plain calls: begin, fill, done in one go ---- */

/* Run a begun fill and end it (one more lock hold only if there was one). */
static int fill_through(struct dir *d, struct dir_session *s, struct dir_fill *f,
			struct dir_attr *out, struct extent_list *ext)
{
	dir_fill_run(d, f);
	return dir_fill_done(d, s, f, 0, out, ext);
}

int dir_create_ext(struct dir *d, struct dir_session *s, uint64_t parent,
		   const char *name, size_t nlen, uint64_t from_ino, uint32_t flags,
		   uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size_hint,
		   struct dir_attr *out, struct extent_list *ext)
{
	struct dir_fill f;
	int rc;

	rc = dir_create_begin(d, s, parent, name, nlen, from_ino, flags, mode, uid, gid,
			      size_hint, out, &f);
	return rc ? rc : fill_through(d, s, &f, out, ext);
}

int dir_create(struct dir *d, struct dir_session *s, uint64_t parent,
	       const char *name, size_t nlen, uint64_t from_ino, uint32_t flags,
	       uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size_hint,
	       struct dir_attr *out)
{
	return dir_create_ext(d, s, parent, name, nlen, from_ino, flags, mode, uid, gid,
			      size_hint, out, NULL);
}

int dir_truncate_ext(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		     struct dir_attr *out, struct extent_list *ext)
{
	struct dir_fill f;
	int rc;

	rc = dir_truncate_begin(d, s, ino, size, out, &f);
	return rc ? rc : fill_through(d, s, &f, out, ext);
}

int dir_truncate(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		 struct dir_attr *out)
{
	return dir_truncate_ext(d, s, ino, size, out, NULL);
}

int dir_wrote(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t start,
	      uint64_t end, struct dir_attr *out)
{
	struct dir_fill f;
	int rc;

	rc = dir_wrote_begin(d, s, ino, start, end, out, &f);
	return rc ? rc : fill_through(d, s, &f, out, NULL);
}
