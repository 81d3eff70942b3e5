/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/ns.c: the namespace calls of the directory: mkdir, rmdir,
 * lookup, getattr, setattr, unlink, rename, readdir and exists. It decides
 * what a name means to a session (its own pending version of a name wins
 * over the published one) and which events a change sends; the records it
 * changes are node.c's. Each dir_* here takes d->lock once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "dir_priv.h"
#include "persist.h"

static int mkdir_locked(struct dir *d, uint64_t parent, const char *name, size_t nlen,
			uint32_t mode, uint32_t uid, uint32_t gid, struct dir_attr *out)
{
	struct node *pd, *n;
	struct nkey k;
	int rc;

	rc = dir_name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	if (dir_name_find(d, &k))
		return -EEXIST;
	rc = dir_record_room(d, JR_DIR, nlen, 0);
	if (rc)
		return rc;
	if (dir_index_reserve(d))
		return -ENOMEM;
	n = dir_node_alloc(nlen);
	if (!n)
		return -ENOMEM;
	dir_inherit_group(pd, &gid, &mode);
	dir_node_set_name(n, &k);
	n->kind = NODE_DIR;
	n->cookie = d->next_cookie++;
	n->u.d.id = d->next_id++;
	n->u.d.mode = S_IFDIR | (mode & 07777);
	n->u.d.uid = uid;
	n->u.d.gid = gid;
	n->u.d.atime = n->u.d.mtime = n->u.d.ctime = now_ns();
	dir_id_place_dir(d, n);
	dir_node_attach(d, pd, n);
	d->ndirs++;
	dir_ev_node(d, DEV_MKDIR, n->u.d.id, n);
	dir_attr_of(n, out);
	return 0;
}

int dir_mkdir(struct dir *d, uint64_t parent, const char *name, size_t nlen,
	      uint32_t mode, uint32_t uid, uint32_t gid, struct dir_attr *out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = mkdir_locked(d, parent, name, nlen, mode, uid, gid, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int rmdir_locked(struct dir *d, uint64_t parent, const char *name, size_t nlen)
{
	struct node *pd, *n;
	struct nkey k;
	int rc;

	rc = dir_name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	n = dir_name_find(d, &k);
	if (!n)
		return -ENOENT;
	if (n->kind != NODE_DIR)
		return -ENOTDIR;
	if (n->u.d.id == DIR_ROOT_ID)
		return -EBUSY;
	if (n->u.d.nent)
		return -ENOTEMPTY;
	dir_ev_node(d, DEV_RMDIR, n->u.d.id, n);
	dir_remove(d, n);
	return 0;
}

int dir_rmdir(struct dir *d, uint64_t parent, const char *name, size_t nlen)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = rmdir_locked(d, parent, name, nlen);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_lookup(struct dir *d, struct dir_session *s, uint64_t parent,
	       const char *name, size_t nlen, struct dir_attr *out)
{
	struct node *pd, *n;
	struct pend *p;
	struct nkey k;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = dir_name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		goto out;
	p = dir_pend_find(d, s, &k);
	n = dir_name_find(d, &k);
	if (p)
		dir_ver_attr(&p->v, parent, out);
	else if (n)
		dir_node_attr(d, n, out);
	else
		rc = -ENOENT;
out:
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* A version s may see: published, orphaned, or its own pending. */
static int visible(struct dir *d, struct dir_session *s, uint64_t ino, uintptr_t *it)
{
	struct ver *v;

	*it = dir_id_find(d, ino);
	if (!*it)
		return -ENOENT;
	v = (struct ver *)*it;
	if (!(*it & TAG) && v->state == DIR_ST_PENDING && ver_pend(v)->owner != s)
		return -ENOENT;
	return 0;
}

int dir_getattr(struct dir *d, struct dir_session *s, uint64_t ino, struct dir_attr *out)
{
	uintptr_t it;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = visible(d, s, ino, &it);
	if (!rc)
		dir_item_attr(it, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

struct attrs {
	uint32_t *mode, *uid, *gid;
	uint64_t *atime, *mtime, *ctime;
};

static void apply_setattr(const struct attrs *a, const struct dir_setattr *sa)
{
	if (sa->mask & SETATTR_MODE)
		*a->mode = (*a->mode & S_IFMT) | (sa->mode & 07777);
	if (sa->mask & SETATTR_UID)
		*a->uid = sa->uid;
	if (sa->mask & SETATTR_GID)
		*a->gid = sa->gid;
	if (sa->mask & SETATTR_ATIME)
		*a->atime = sa->atime_ns;
	if (sa->mask & SETATTR_MTIME)
		*a->mtime = sa->mtime_ns;
	*a->ctime = now_ns();
}

static void setattr_item(struct dir *d, uintptr_t it, const struct dir_setattr *sa)
{
	struct node *n = (struct node *)(it & ~(uintptr_t)TAG);
	struct ver *v = (struct ver *)it;
	struct attrs a;

	if (it & TAG) {
		a = (struct attrs){ &n->u.d.mode, &n->u.d.uid, &n->u.d.gid,
				    &n->u.d.atime, &n->u.d.mtime, &n->u.d.ctime };
		apply_setattr(&a, sa);
		dir_ev_node(d, DEV_SETATTR, n->u.d.id, n);
		return;
	}
	a = (struct attrs){ &v->mode, &v->uid, &v->gid, &v->atime, &v->mtime, &v->ctime };
	apply_setattr(&a, sa);
	/* Only a bound name is visible to subscribers. */
	if (v->state == DIR_ST_PUBLISHED)
		dir_ev_node(d, DEV_SETATTR, v->id, ver_node(v));
}

int dir_setattr(struct dir *d, struct dir_session *s, uint64_t ino,
		const struct dir_setattr *sa, struct dir_attr *out)
{
	uintptr_t it;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = visible(d, s, ino, &it);
	if (!rc) {
		setattr_item(d, it, sa);
		dir_item_attr(it, out);
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* Detach every pending version of s aimed at k. Returns how many. */
static int detach_pends(struct dir *d, struct dir_session *s, const struct nkey *k)
{
	struct pend *p;
	int n = 0;

	while ((p = dir_pend_find(d, s, k)) != NULL) {
		dir_pend_detach(d, p);
		n++;
	}
	return n;
}

static int unlink_locked(struct dir *d, struct dir_session *s, uint64_t parent,
			 const char *name, size_t nlen)
{
	struct ver *orphan = NULL;
	struct node *pd, *n;
	struct nkey k;
	int rc, had;

	rc = dir_name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	n = dir_name_find(d, &k);
	if (n && n->kind == NODE_DIR)
		return -EISDIR;
	if (n && n->kind == NODE_FILE && n->u.v.leases && !(orphan = malloc(sizeof(*orphan))))
		return -ENOMEM;
	had = detach_pends(d, s, &k);
	if (!n)
		return had ? 0 : -ENOENT;
	dir_ev_node(d, DEV_UNLINK, dir_node_ver(d, n)->id, n);
	d->st.unlinks++;
	if (dir_node_shared(d, n)) {
		/* The version keeps its other names (link.c). */
		free(orphan);
		dir_link_drop_name(d, n);
		return 0;
	}
	dir_lru_del(d, &n->u.v);
	dir_file_remove(d, n, orphan);
	return 0;
}

int dir_unlink(struct dir *d, struct dir_session *s, uint64_t parent,
	       const char *name, size_t nlen)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = unlink_locked(d, s, parent, name, nlen);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* ---- rename ---- */

struct rename_op {
	struct nkey from, to;
	struct node *src, *dst, *fromdir, *todir;
	int npend;		/* s's pending versions of from */
	struct ver *orphan;	/* for a leased dst file */
	struct node *moved;	/* src's new home when the name length changes */
};

static int in_subtree(struct dir *d, uint64_t dirid, uint64_t id)
{
	const struct node *n;

	while (id != dirid) {
		if (id == DIR_ROOT_ID || !(n = dir_id_dir(d, id)))
			return 0;
		id = n->parent;
	}
	return 1;
}

/* Every check of rename, before anything changes. */
static int rename_check(struct dir *d, struct rename_op *op, uint32_t flags)
{
	struct node *src = op->src, *dst = op->dst;

	if (!src && !op->npend)
		return -ENOENT;
	if (src && src->kind == NODE_DIR &&
	    in_subtree(d, src->u.d.id, op->to.parent))
		return -EINVAL;
	if (!dst)
		return 0;
	if (flags & PROTO_RENAME_NOREPLACE)
		return -EEXIST;
	if (src && src->kind == NODE_DIR) {
		if (dst->kind != NODE_DIR)
			return -ENOTDIR;
		if (dst->u.d.nent)
			return -ENOTEMPTY;
		return 0;
	}
	return dst->kind == NODE_DIR ? -EISDIR : 0;
}

static int rename_prealloc(struct rename_op *op)
{
	if (op->dst && op->dst->kind == NODE_FILE && op->dst->u.v.leases) {
		op->orphan = malloc(sizeof(*op->orphan));
		if (!op->orphan)
			return -ENOMEM;
	}
	if (op->src && op->src->nlen != op->to.nlen) {
		op->moved = dir_node_alloc(op->to.nlen);
		if (!op->moved) {
			free(op->orphan);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Move node src to op->to (possibly into a new allocation). */
static void rename_node(struct dir *d, struct rename_op *op)
{
	struct node *n = op->src;

	dir_node_detach(d, n);
	if (n->kind == NODE_LINK)
		dir_link_unhook(d, n);
	if (op->moved) {
		memcpy(op->moved, n, offsetof(struct node, name));
		if (n->kind == NODE_DIR)
			htab_replace(&d->ids, (uintptr_t)n | TAG, (uintptr_t)op->moved | TAG);
		else if (n->kind == NODE_FILE)
			dir_ver_move(d, &n->u.v, &op->moved->u.v);
		else
			op->moved->u.l = n->u.l;
		free(n);
		n = op->moved;
	}
	dir_node_set_name(n, &op->to);
	n->cookie = d->next_cookie++;
	dir_node_attach(d, op->todir, n);
	if (n->kind == NODE_DIR) {
		n->u.d.ctime = now_ns();
	} else if (n->kind == NODE_LINK) {
		dir_link_hook(d, n);
		dir_node_ver(d, n)->ctime = now_ns();
	} else {
		n->u.v.ctime = now_ns();
		if (!n->u.v.leases)
			dir_lru_settle(d, n);
	}
	op->src = n;
}

static uint64_t rename_commit(struct dir *d, struct dir_session *s, struct rename_op *op)
{
	struct evname a = { op->from.parent, op->from.name, op->from.nlen };
	struct evname b = { op->to.parent, op->to.name, op->to.nlen };
	uint64_t ino = 0;
	struct pend *p;
	int visible_change = op->src || op->dst;

	if (op->dst && op->dst->kind == NODE_DIR) {
		dir_remove(d, op->dst);
	} else if (op->dst && dir_node_shared(d, op->dst)) {
		dir_link_drop_name(d, op->dst);
		d->st.replaces++;
	} else if (op->dst) {
		dir_lru_del(d, &op->dst->u.v);
		dir_file_remove(d, op->dst, op->orphan);
		op->orphan = NULL;
		d->st.replaces++;
	}
	free(op->orphan);
	if (op->src) {
		rename_node(d, op);
		ino = op->src->kind == NODE_DIR ? op->src->u.d.id : dir_node_ver(d, op->src)->id;
	}
	while ((p = dir_pend_find(d, s, &op->from)) != NULL) {
		dir_pend_detach(d, p);
		dir_pend_attach(d, p, &op->to);
		if (!ino)
			ino = p->v.id;
	}
	dir_quota_moved(d, op->src, op->from.parent, op->to.parent);
	if (!visible_change)
		return 0;
	dir_ev_push(d, DEV_RENAME, ino, &a, &b);
	return d->ev.seq;
}

/* Both names bind one version (hard links): POSIX says rename does nothing. */
static int same_version(struct dir *d, const struct rename_op *op)
{
	return op->src && op->dst && op->src->kind != NODE_DIR &&
	       op->dst->kind != NODE_DIR && dir_node_ver(d, op->src) == dir_node_ver(d, op->dst);
}

static int rename_locked(struct dir *d, struct dir_session *s, uint64_t oldparent,
			 const char *oldname, size_t oldlen, uint64_t newparent,
			 const char *newname, size_t newlen, uint32_t flags, uint64_t *seq)
{
	struct rename_op op = { 0 };
	char from[PROTO_NAME_MAX], to[PROTO_NAME_MAX];
	int rc;

	if (flags & ~PROTO_RENAME_NOREPLACE)
		return -EINVAL;
	rc = dir_name_key(d, oldparent, oldname, oldlen, &op.from, &op.fromdir);
	if (!rc)
		rc = dir_name_key(d, newparent, newname, newlen, &op.to, &op.todir);
	if (rc)
		return rc;
	/* The caller's buffers might alias what we free or move; keep copies. */
	memcpy(from, oldname, oldlen);
	memcpy(to, newname, newlen);
	op.from.name = from;
	op.to.name = to;
	op.src = dir_name_find(d, &op.from);
	op.npend = dir_pends_of(d, s, &op.from);
	if (!op.src && !op.npend)
		return -ENOENT;
	if (oldparent == newparent && oldlen == newlen && !memcmp(from, to, oldlen))
		return 0;
	op.dst = dir_name_find(d, &op.to);
	if (!op.npend && same_version(d, &op) && !(flags & PROTO_RENAME_NOREPLACE))
		return 0;
	rc = rename_check(d, &op, flags);
	if (!rc)
		rc = dir_record_room(d, JR_RENAME, oldlen + newlen, 0);
	if (!rc)
		rc = rename_prealloc(&op);
	if (rc)
		return rc;
	*seq = rename_commit(d, s, &op);
	return 0;
}

int dir_rename_ev(struct dir *d, struct dir_session *s, uint64_t oldparent,
		  const char *oldname, size_t oldlen, uint64_t newparent,
		  const char *newname, size_t newlen, uint32_t flags, uint64_t *seq)
{
	uint64_t ev = 0;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = rename_locked(d, s, oldparent, oldname, oldlen, newparent, newname,
			   newlen, flags, &ev);
	pthread_mutex_unlock(&d->lock);
	if (seq)
		*seq = rc ? 0 : ev;
	return rc;
}

int dir_rename(struct dir *d, struct dir_session *s, uint64_t oldparent,
	       const char *oldname, size_t oldlen, uint64_t newparent,
	       const char *newname, size_t newlen, uint32_t flags)
{
	return dir_rename_ev(d, s, oldparent, oldname, oldlen, newparent, newname,
			     newlen, flags, NULL);
}

/* ---- readdir ---- */

static int pend_cookie_cmp(const void *a, const void *b)
{
	uint64_t x = (*(struct pend *const *)a)->cookie;
	uint64_t y = (*(struct pend *const *)b)->cookie;

	return x < y ? -1 : x > y;
}

/*
 * s's pending files in dir listed on their own (name not bound), after
 * cookie, sorted; *inside counts all of s's pending files in dir.
 */
static int pends_in_dir(struct dir *d, struct dir_session *s, uint64_t dirid,
			uint64_t cookie, struct pend ***out, size_t *np, size_t *inside)
{
	struct pend *p, **v = NULL, **nv;
	size_t n = 0, cap = 0;
	struct nkey k;

	*inside = 0;
	for (p = s ? s->pends : NULL; p; p = p->snext) {
		if (!p->attached || p->parent != dirid)
			continue;
		++*inside;
		k = (struct nkey){ p->parent, p->name, p->nlen, p->hash };
		if (p->cookie <= cookie || dir_name_find(d, &k) || dir_pend_find(d, s, &k) != p)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = p;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), pend_cookie_cmp);
	*out = v;
	*np = n;
	return 0;
}

static void dirent_pend(const struct pend *p, struct dir_dirent *de)
{
	de->ino = p->v.id;
	de->cookie = p->cookie;
	de->mode = p->v.mode;
	de->state = DIR_ST_PENDING;
	de->name = p->name;
	de->nlen = p->nlen;
}

static void dirent_node(struct dir *d, struct dir_session *s, struct node *n,
			size_t inside, struct dir_dirent *de)
{
	struct pend *p;
	struct nkey k;

	de->cookie = n->cookie;
	de->name = n->name;
	de->nlen = n->nlen;
	if (n->kind == NODE_DIR) {
		de->ino = n->u.d.id;
		de->mode = n->u.d.mode;
		de->state = DIR_ST_DIR;
		return;
	}
	de->ino = dir_node_ver(d, n)->id;
	de->mode = dir_node_ver(d, n)->mode;
	de->state = DIR_ST_PUBLISHED;
	if (!inside)
		return;
	/* The writer sees its own pending version in place of the published one. */
	dir_node_key(&k, n);
	p = dir_pend_find(d, s, &k);
	if (p) {
		de->ino = p->v.id;
		de->mode = p->v.mode;
		de->state = DIR_ST_PENDING;
	}
}

static int readdir_locked(struct dir *d, struct dir_session *s, uint64_t dirid,
			  uint64_t cookie, uint32_t max, dir_readdir_cb cb, void *arg,
			  int *eof)
{
	struct pend **pv;
	struct node *dn;
	struct rb_node *r;
	struct dir_dirent de;
	size_t np, inside, i = 0;
	int rc, n = 0, stopped = 0;

	rc = dir_get_dir(d, dirid, &dn);
	if (rc)
		return rc;
	rc = pends_in_dir(d, s, dirid, cookie, &pv, &np, &inside);
	if (rc)
		return rc;
	r = rb_upper_bound(&dn->u.d.kids, &cookie, dir_cookie_keycmp);
	while ((uint32_t)n < max && (r || i < np)) {
		struct node *c = rb_entry_safe(r, struct node, rb);
		int from_pend = i < np && (!c || pv[i]->cookie < c->cookie);

		if (from_pend)
			dirent_pend(pv[i], &de);
		else
			dirent_node(d, s, c, inside, &de);
		if (cb(arg, &de)) {
			stopped = 1;
			break;
		}
		if (from_pend)
			i++;
		else
			r = rb_next(r);
		n++;
	}
	if (eof)
		*eof = !stopped && !r && i >= np;
	free(pv);
	return n;
}

int dir_readdir(struct dir *d, struct dir_session *s, uint64_t dir, uint64_t cookie,
		uint32_t max, dir_readdir_cb cb, void *arg, int *eof)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = readdir_locked(d, s, dir, cookie, max, cb, arg, eof);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int exists_locked(struct dir *d, uint64_t parent, const char *name, size_t nlen)
{
	struct node *pd;
	struct nkey k;
	int rc;

	rc = dir_name_key(d, parent, name, nlen, &k, &pd);
	return rc ? rc : dir_name_find(d, &k) != NULL;
}

int dir_exists(struct dir *d, uint64_t parent, const char *name, size_t nlen)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = exists_locked(d, parent, name, nlen);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_exists_n(struct dir *d, uint64_t parent, const struct dir_name *names,
		 uint32_t n, uint8_t *yes)
{
	uint32_t i;
	int rc = 0;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < n && !rc; i++) {
		rc = exists_locked(d, parent, names[i].name, names[i].nlen);
		yes[i] = rc == 1;
		if (rc == 1 || rc == -ENOENT || rc == -ENOTDIR)
			rc = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}
