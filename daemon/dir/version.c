/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/version.c: the life of a pending version, from dir_create()
 * to dir_publish() or dir_abandon(): reserving (with the per-session
 * pending limit), truncate, wrote, and handing out extents (dir_extents and
 * the *_ext variants that return them under the same lock hold). A pending
 * version that an out-of-lock fill (fill.c) is writing is "filling": every
 * call that would change it waits on d->fill_cond until the fill is done.
 * Nothing here copies pool bytes: create with copy, truncate and wrote,
 * which may copy or zero, are fill.c's, and run the copy outside d->lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "dir_priv.h"
#include "persist.h"

/* The allocator may pad to the pool's alignment: never past a limit. */
static int pad_over(const struct dir *d, const struct pend *p, uint64_t have)
{
	const struct dir_tq *q = ver_tq(d, &p->v);
	uint64_t grew = ver_reserved(&p->v) - have;

	return (d->o.max_pending_bytes &&
		p->owner->pending_bytes + grew > d->o.max_pending_bytes) ||
	       (q->quota && q->used + q->pending + grew > q->quota);
}

/*
 * Grow pending version p of s to at least `bytes` reserved: within the
 * session's pending limit (-EDQUOT), its tenant's quota (dir_quota_room:
 * its own LRU first, then -ENOSPC) and the pool (dir_get_bytes).
 */
int dir_pend_grow(struct dir *d, struct pend *p, uint64_t bytes, int evict)
{
	struct dir_session *s = p->owner;
	uint64_t have = ver_reserved(&p->v), got;
	struct extent_list l;
	int rc;

	if (bytes <= have)
		return 0;
	got = round_up(bytes - have, d->block);
	if (d->o.max_pending_bytes && s->pending_bytes + got > d->o.max_pending_bytes)
		return -EDQUOT;
	rc = dir_quota_room(d, p->v.tenant, got, evict);
	if (rc)
		return rc;
	rc = dir_ver_take_list(&p->v, &l);
	if (rc)
		return rc;
	rc = dir_get_bytes(d, p->v.tenant, bytes - have, &l, evict);
	dir_ver_put_list(&p->v, &l);
	if (rc)
		return rc;
	if (pad_over(d, p, have))
		dir_ver_trim(d, &p->v, bytes);
	got = ver_reserved(&p->v) - have;
	d->pending += got;
	s->pending_bytes += got;
	ver_tq(d, &p->v)->pending += got;
	return 0;
}

/* s's own pending version ino: -ENOENT if unknown, -EPERM if not s's pending. */
int dir_own_pend(struct dir *d, struct dir_session *s, uint64_t ino, struct pend **out)
{
	uintptr_t it = dir_id_find(d, ino);
	struct ver *v = (struct ver *)it;

	if (!it)
		return -ENOENT;
	if ((it & TAG) || v->state != DIR_ST_PENDING || ver_pend(v)->owner != s)
		return -EPERM;
	*out = ver_pend(v);
	return 0;
}

/* dir_own_pend(), once no fill is writing it (the lock is dropped while waiting). */
int dir_own_pend_idle(struct dir *d, struct dir_session *s, uint64_t ino, struct pend **out)
{
	int rc;

	while (!(rc = dir_own_pend(d, s, ino, out)) && (*out)->filling)
		pthread_cond_wait(&d->fill_cond, &d->lock);
	return rc;
}

/* ---- create ---- */

/* Resolve the target name of a create; k->name may point into a node. */
static int create_target(struct dir *d, const struct create_args *a, struct nkey *k)
{
	struct node *pd;
	struct ver *v;

	if (a->parent)
		return dir_name_key(d, a->parent, a->name, a->nlen, k, &pd);
	v = dir_id_ver(d, a->from_ino);
	if (!v || v->state != DIR_ST_PUBLISHED)
		return -ESTALE;
	pd = ver_node(v);
	dir_node_key(k, pd);
	return 0;
}

static void pend_init(struct dir *d, struct dir_session *s, struct pend *p,
		      const struct create_args *a, const struct ver *like)
{
	uint64_t t = now_ns();

	p->v.id = d->next_id++;
	p->v.state = DIR_ST_PENDING;
	p->v.atime = p->v.mtime = p->v.ctime = t;
	/* Rewriting an existing file keeps its mode and owner, as POSIX open does. */
	if (like) {
		p->v.mode = like->mode;
		p->v.uid = like->uid;
		p->v.gid = like->gid;
	} else {
		p->v.mode = S_IFREG | (a->mode & 07777);
		p->v.uid = a->uid;
		p->v.gid = a->gid;
		dir_inherit_group(dir_id_dir(d, p->parent), &p->v.gid, NULL);
	}
	p->owner = s;
	p->snext = s->pends;
	if (s->pends)
		s->pends->sprev = p;
	s->pends = p;
}

/* Reserve the new version's bytes, keeping the copy source from eviction. */
static int create_fill(struct dir *d, struct pend *p, struct node *src, uint64_t want)
{
	int pinned = src && src->u.v.lru.prev;
	int rc;

	if (pinned)
		dir_lru_del(d, &src->u.v);
	rc = dir_pend_grow(d, p, want, 1);
	if (pinned)
		dir_lru_settle(d, src);
	return rc;
}

/*
 * The new pending version (*pp) of a create. With DIR_CREATE_COPY and a
 * published source, *srcp is the source node; the caller copies it (and
 * must pin it before unlocking: fill.c).
 */
int dir_create_locked(struct dir *d, struct dir_session *s, const struct create_args *a,
		  struct pend **pp, struct node **srcp)
{
	struct node *old, *src;
	struct ver like;
	struct pend *p;
	struct nkey k;
	uint64_t want;
	int rc;

	rc = create_target(d, a, &k);
	if (rc)
		return rc;
	old = dir_name_find(d, &k);
	if ((a->flags & DIR_CREATE_EXCL) && (old || dir_pend_find(d, s, &k)))
		return -EEXIST;
	if (old && old->kind == NODE_DIR)
		return -EISDIR;
	/* Another name of a hard-linked version: its bytes are the primary's. */
	if (old)
		old = dir_node_primary(d, old);
	/* A symlink or special file is replaced, never copied or imitated. */
	if (old && !ver_regular(&old->u.v))
		old = NULL;
	src = old && (a->flags & DIR_CREATE_COPY) ? old : NULL;
	/* Unless it is the pinned copy source, old may be evicted below. */
	if (old)
		like = old->u.v;
	want = src && src->u.v.size > a->size_hint ? src->u.v.size : a->size_hint;
	if (dir_index_reserve(d))
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* Copy the key now: eviction below may free the node it points into. */
	dir_pend_attach(d, p, &k);
	k.name = p->name;
	p->owner = s;
	p->v.tenant = (uint8_t)dir_quota_slot(d, p->parent);
	rc = create_fill(d, p, src, want);
	if (rc) {
		dir_pend_detach(d, p);
		free(p);
		return rc;
	}
	pend_init(d, s, p, a, old ? &like : NULL);
	dir_record_ids(d);
	dir_id_place_ver(d, &p->v);
	d->nvers++;
	d->st.creates++;
	*pp = p;
	if (srcp)
		*srcp = src;
	return 0;
}

/* ---- reserve ---- */

/* Attributes and (ext != NULL) a heap copy of the extents of p. */
static int pend_out(struct pend *p, struct dir_attr *out, struct extent_list *ext)
{
	if (ext && dir_ver_extents_copy(&p->v, ext))
		return -ENOMEM;
	dir_ver_attr(&p->v, dir_ver_parent(&p->v), out);
	return 0;
}

static int reserve_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			  uint64_t bytes, int evict, struct dir_attr *out,
			  struct extent_list *ext)
{
	struct pend *p;
	int rc;

	rc = dir_own_pend_idle(d, s, ino, &p);
	if (!rc)
		rc = dir_pend_grow(d, p, bytes, evict);
	if (!rc)
		rc = pend_out(p, out, ext);
	return rc;
}

int dir_reserve_ext(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t bytes,
		    struct dir_attr *out, struct extent_list *ext)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = reserve_locked(d, s, ino, bytes, 1, out, ext);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_reserve_ahead_ext(struct dir *d, struct dir_session *s, uint64_t ino,
			  uint64_t bytes, struct dir_attr *out, struct extent_list *ext)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = reserve_locked(d, s, ino, bytes, 0, out, ext);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_reserve(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t bytes,
		struct dir_attr *out)
{
	return dir_reserve_ext(d, s, ino, bytes, out, NULL);
}

/* ---- publish, abandon ---- */

/* Allocations publish needs, made before anything changes. */
struct publish_mem {
	struct lease *lease;
	struct ver *orphan;
	struct node *fresh;
};

static int publish_prealloc(struct pend *p, struct node *old, struct publish_mem *m)
{
	m->lease = malloc(sizeof(*m->lease));
	if (old && old->u.v.leases)
		m->orphan = malloc(sizeof(*m->orphan));
	if (!old)
		m->fresh = dir_node_alloc(p->nlen);
	if (m->lease && (!old || !old->u.v.leases || m->orphan) && (old || m->fresh))
		return 0;
	free(m->lease);
	free(m->orphan);
	free(m->fresh);
	return -ENOMEM;
}

/* Bind p's version to its name; consumes p. Returns the published version. */
static struct ver *publish_bind(struct dir *d, struct pend *p, struct node *old,
				struct publish_mem *m)
{
	struct node *n = old ? old : m->fresh;
	struct nkey k = { p->parent, p->name, p->nlen, p->hash };
	uint64_t r = ver_reserved(&p->v);

	dir_pend_unlink_session(p);
	d->pending -= r;
	p->owner->pending_bytes -= r;
	ver_tq(d, &p->v)->pending -= r;
	if (old) {
		dir_pend_detach(d, p);
		dir_lru_del(d, &old->u.v);
		if (!dir_ver_unbind(d, old, m->orphan))
			free(m->orphan);
		dir_touch_m(dir_id_dir(d, old->parent), now_ns());
	} else {
		dir_node_set_name(n, &k);
		n->kind = NODE_FILE;
		n->cookie = p->cookie;
		/* Same key, same hash: the node takes the pending's slot. */
		htab_replace(&d->names, (uintptr_t)p | TAG, (uintptr_t)n);
		p->attached = 0;
		dir_node_link(dir_id_dir(d, p->parent), n);
		d->nnames++;
	}
	dir_ver_move(d, &p->v, &n->u.v);
	n->u.v.state = DIR_ST_PUBLISHED;
	d->used += r;
	ver_tq(d, &n->u.v)->used += r;
	free(p);
	return &n->u.v;
}

static int publish_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			  uint64_t size, uint64_t xxh3, struct dir_attr *out,
			  struct dir_attr *dir_out)
{
	struct publish_mem m = { 0 };
	struct node *old;
	int shared;
	struct pend *p;
	struct ver *v;
	struct nkey k;
	uint64_t freed;
	int rc;

	rc = dir_own_pend_idle(d, s, ino, &p);
	if (rc)
		return rc;
	if (size > ver_reserved(&p->v))
		return -EINVAL;
	/* Name unlinked or directory removed while pending: refused, and the
	 * version stays the owner's (its open readers keep the bytes, as an
	 * unlinked local file's do) until it abandons it or its session ends. */
	if (!p->attached || !dir_id_dir(d, p->parent))
		return -ENOENT;
	k = (struct nkey){ p->parent, p->name, p->nlen, p->hash };
	old = dir_name_find(d, &k);
	if (old && old->kind == NODE_DIR)
		return -EISDIR;
	rc = dir_record_room(d, JR_FILE, p->nlen, p->v.next);
	if (rc)
		return rc;
	/* A hard-linked name: only it takes the new version (link.c). */
	shared = old && dir_node_shared(d, old);
	rc = publish_prealloc(p, shared ? NULL : old, &m);
	if (rc)
		return rc;
	if (shared) {
		dir_link_drop_name(d, old);
		old = NULL;
	}
	freed = dir_ver_trim(d, &p->v, size);
	d->pending -= freed;
	s->pending_bytes -= freed;
	ver_tq(d, &p->v)->pending -= freed;
	v = publish_bind(d, p, old, &m);
	v->size = size;
	v->xxh3 = xxh3;
	v->mtime = v->ctime = now_ns();
	dir_lease_add(d, s, v, m.lease);
	d->ev_origin = s->id;
	dir_ev_node(d, old ? DEV_REPLACE : DEV_PUBLISH, v->id, ver_node(v));
	d->ev_origin = 0;
	d->st.publishes++;
	d->st.replaces += old != NULL;
	dir_ver_attr(v, ver_node(v)->parent, out);
	if (dir_out)
		dir_attr_of(dir_id_dir(d, ver_node(v)->parent), dir_out);
	return 0;
}

int dir_publish(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		uint64_t xxh3, struct dir_attr *out, struct dir_attr *dir_out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = publish_locked(d, s, ino, size, xxh3, out, dir_out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_abandon(struct dir *d, struct dir_session *s, uint64_t ino)
{
	struct pend *p;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = dir_own_pend_idle(d, s, ino, &p);
	if (!rc)
		dir_pend_abandon(d, p);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* ---- extents ---- */

static int extents_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			  int want_write, struct extent_list *out, struct dir_attr *attr)
{
	struct ver *v = dir_id_ver(d, ino);
	int mine;

	if (!v)
		return -EPERM;
	mine = v->state == DIR_ST_PENDING && ver_pend(v)->owner == s;
	if (!mine && (want_write || !dir_lease_find(s, ino)))
		return -EPERM;
	if (dir_ver_extents_copy(v, out))
		return -ENOMEM;
	dir_ver_attr(v, dir_ver_parent(v), attr);
	return 0;
}

int dir_extents(struct dir *d, struct dir_session *s, uint64_t ino, int want_write,
		struct extent_list *out, struct dir_attr *attr)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = extents_locked(d, s, ino, want_write, out, attr);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_read_extents(struct dir *d, struct dir_session *s, uint64_t ino,
		     struct extent_list *out, struct dir_attr *attr)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = extents_locked(d, s, ino, 0, out, attr);
	if (!rc)
		dir_lru_touch(d, dir_id_ver(d, ino));
	pthread_mutex_unlock(&d->lock);
	return rc;
}
