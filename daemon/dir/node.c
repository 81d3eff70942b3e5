/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/node.c: the records of the directory and the moves between
 * them: bound nodes (directories and published files), pending versions
 * (struct pend), orphaned versions, their extent lists (handed to and taken
 * back from the allocator) and the attributes read out of them. It keeps
 * the tables (index.c) and byte counters in step with every move, but makes
 * no policy: the LRU, leases and events are the callers' business, so a
 * version must be off the LRU (dir_lru_del) before it is unbound here.
 * Called with d->lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "dir_priv.h"
#include "log.h"

/* ---- extents ---- */

/* Hand the version's extents over as a heap list (for alloc_get). */
int dir_ver_take_list(struct ver *v, struct extent_list *l)
{
	memset(l, 0, sizeof(*l));
	if (v->next >= 2) {
		*l = v->ext.xl;
		v->next = 0;
		return 0;
	}
	if (v->next == 0)
		return 0;
	l->v = malloc(4 * sizeof(*l->v));
	if (!l->v)
		return -ENOMEM;
	l->v[0] = v->ext.one;
	l->n = 1;
	l->cap = 4;
	v->next = 0;
	return 0;
}

/* Take a heap list back, inlining a single extent. */
void dir_ver_put_list(struct ver *v, struct extent_list *l)
{
	if (l->n >= 2) {
		v->ext.xl = *l;
		v->next = l->n;
		return;
	}
	v->next = l->n;
	if (l->n == 1)
		v->ext.one = l->v[0];
	free(l->v);
}

void dir_ver_free_bytes(struct dir *d, struct ver *v)
{
	struct extent_list tmp;

	if (S_ISLNK(v->mode) && v->next == 0) {
		free(v->ext.target);
		v->ext.target = NULL;
		return;
	}
	dir_retire_list(d, ver_view(v, &tmp));
	alloc_put_list(d->o.alloc, ver_view(v, &tmp));
	if (v->next >= 2)
		free(v->ext.xl.v);
	v->next = 0;
}

/* Shrink to round_up(keep); never allocates. Returns bytes freed. */
uint64_t dir_ver_trim(struct dir *d, struct ver *v, uint64_t keep)
{
	struct extent_list l;
	uint64_t freed;

	keep = round_up(keep, d->block);
	if (v->next == 1) {
		if (keep >= v->ext.one.len)
			return 0;
		freed = v->ext.one.len - keep;
		dir_retire(d, v->ext.one.off + keep, freed);
		alloc_put(d->o.alloc, v->ext.one.off + keep, freed);
		v->ext.one.len = keep;
		v->next = keep ? 1 : 0;
		return freed;
	}
	if (v->next < 2)
		return 0;
	dir_retire_tail(d, &v->ext.xl, keep);
	freed = alloc_trim(d->o.alloc, &v->ext.xl, keep);
	if (v->ext.xl.n < 2) {
		l = v->ext.xl;
		dir_ver_put_list(v, &l);
	} else {
		v->next = v->ext.xl.n;
	}
	return freed;
}

/* A heap copy of v's extents for use outside the lock (alloc_extent_list_free). */
int dir_ver_extents_copy(const struct ver *v, struct extent_list *out)
{
	const struct extent_list *view;
	struct extent_list tmp;

	view = ver_view(v, &tmp);
	memset(out, 0, sizeof(*out));
	if (!view->n)
		return 0;
	out->v = malloc(view->n * sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	memcpy(out->v, view->v, view->n * sizeof(*out->v));
	out->n = out->cap = view->n;
	return 0;
}

/* Copy a version to a new home and repoint the id table and the LRU at it. */
void dir_ver_move(struct dir *d, struct ver *from, struct ver *to)
{
	htab_replace(&d->ids, (uintptr_t)from, (uintptr_t)to);
	memmove(to, from, sizeof(*to));
	if (to->lru.prev) {
		to->lru.prev->next = &to->lru;
		to->lru.next->prev = &to->lru;
	}
}

/* ---- attributes ---- */

void dir_ver_attr(const struct ver *v, uint64_t parent, struct dir_attr *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	o->ino = v->id;
	o->parent = parent;
	o->size = v->size;
	o->reserved = ver_reserved(v);
	o->atime_ns = v->atime;
	o->mtime_ns = v->mtime;
	o->ctime_ns = v->ctime;
	o->xxh3 = v->xxh3;
	o->mode = v->mode;
	o->uid = v->uid;
	o->gid = v->gid;
	o->nlink = v->state == DIR_ST_ORPHANED ? 0 : 1u + v->links;
	o->state = v->state;
	o->leases = v->leases;
	if (S_ISCHR(v->mode) || S_ISBLK(v->mode))
		o->rdev = (uint32_t)v->ext.rdev;
}

void dir_attr_of(const struct node *n, struct dir_attr *o)
{
	const struct dnode *dn = &n->u.d;

	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	o->ino = dn->id;
	o->parent = n->parent;
	o->size = dn->nent;
	o->atime_ns = dn->atime;
	o->mtime_ns = dn->mtime;
	o->ctime_ns = dn->ctime;
	o->mode = dn->mode;
	o->uid = dn->uid;
	o->gid = dn->gid;
	o->nlink = 2 + dn->nsub;
	o->state = DIR_ST_DIR;
}

uint64_t dir_ver_parent(struct ver *v)
{
	if (v->state == DIR_ST_PUBLISHED)
		return ver_node(v)->parent;
	if (v->state == DIR_ST_PENDING && ver_pend(v)->attached)
		return ver_pend(v)->parent;
	return 0;
}

void dir_node_attr(const struct dir *d, struct node *n, struct dir_attr *o)
{
	if (n->kind == NODE_DIR)
		dir_attr_of(n, o);
	else
		dir_ver_attr(dir_node_ver(d, n), n->parent, o);
}

void dir_item_attr(uintptr_t it, struct dir_attr *out)
{
	struct ver *v = (struct ver *)it;

	if (it & TAG)
		dir_attr_of((struct node *)(it & ~(uintptr_t)TAG), out);
	else
		dir_ver_attr(v, dir_ver_parent(v), out);
}

void dir_touch_m(struct node *dn, uint64_t t)
{
	dn->u.d.mtime = dn->u.d.ctime = t;
}

/* ---- bound nodes ---- */

static int cookie_cmp(const struct rb_node *a, const struct rb_node *b)
{
	uint64_t x = rb_entry(a, struct node, rb)->cookie;
	uint64_t y = rb_entry(b, struct node, rb)->cookie;

	return x < y ? -1 : x > y;
}

int dir_cookie_keycmp(const void *key, const struct rb_node *n)
{
	uint64_t k = *(const uint64_t *)key, c = rb_entry(n, struct node, rb)->cookie;

	return k < c ? -1 : k > c;
}

/*
 * The name follows kind and nlen unpadded, so a node of a name shorter than
 * struct node's tail padding still gets sizeof(struct node): an object
 * smaller than its type is undefined behaviour (UBSan's object-size check).
 */
struct node *dir_node_alloc(size_t nlen)
{
	size_t n = offsetof(struct node, name) + nlen;

	return calloc(1, n < sizeof(struct node) ? sizeof(struct node) : n);
}

struct node *dir_root_new(void)
{
	struct node *n = dir_node_alloc(0);
	uint64_t t = now_ns();

	if (!n)
		return NULL;
	n->kind = NODE_DIR;
	n->u.d.id = DIR_ROOT_ID;
	n->u.d.mode = S_IFDIR | 0755;
	n->u.d.atime = n->u.d.mtime = n->u.d.ctime = t;
	return n;
}

void dir_node_set_name(struct node *n, const struct nkey *k)
{
	n->parent = k->parent;
	n->nlen = (uint8_t)k->nlen;
	memcpy(n->name, k->name, k->nlen);
}

/* Link n under its parent (already in the names table). */
void dir_node_link(struct node *parent, struct node *n)
{
	rb_insert(&parent->u.d.kids, &n->rb, cookie_cmp);
	parent->u.d.nent++;
	if (n->kind == NODE_DIR)
		parent->u.d.nsub++;
	dir_touch_m(parent, now_ns());
}

/* Bind n into its parent (names table room already reserved). */
void dir_node_attach(struct dir *d, struct node *parent, struct node *n)
{
	htab_place(&d->names, (uintptr_t)n, dir_node_hash(n));
	dir_node_link(parent, n);
}

void dir_node_detach(struct dir *d, struct node *n)
{
	struct node *parent = dir_id_dir(d, n->parent);

	htab_del(&d->names, (uintptr_t)n);
	if (!parent)
		log_fatalx("dir: node without parent");
	rb_erase(&parent->u.d.kids, &n->rb);
	parent->u.d.nent--;
	if (n->kind == NODE_DIR)
		parent->u.d.nsub--;
	dir_touch_m(parent, now_ns());
}

/*
 * Drop the published version of file node n (already off the LRU) from its
 * name: orphaned into `orphan` (preallocated, consumed) if leased, else
 * freed. Returns 1 when orphan was used.
 */
int dir_ver_unbind(struct dir *d, struct node *n, struct ver *orphan)
{
	struct ver *v = &n->u.v;
	uint64_t r = ver_reserved(v);

	if (v->lru.prev)
		log_fatalx("dir: unbinding a version still on the LRU");
	/* A pin belongs to the version while it is bound: unbound, nobody
	 * can reach it by name, so keeping its bytes would only waste them. */
	if (v->pinned) {
		ttlpin_clear(&d->pins, v->id);
		v->pinned = 0;
	}
	d->used -= r;
	if (v->leases) {
		dir_ver_move(d, v, orphan);
		orphan->state = DIR_ST_ORPHANED;
		d->orphaned += r;
		return 1;
	}
	dir_ver_free_bytes(d, v);
	htab_del(&d->ids, (uintptr_t)v);
	d->nvers--;
	return 0;
}

/* Remove file node n (off the LRU) and its version: unlink, evict, rename over. */
void dir_file_remove(struct dir *d, struct node *n, struct ver *orphan)
{
	dir_node_detach(d, n);
	if (!dir_ver_unbind(d, n, orphan))
		free(orphan);
	d->nnames--;
	free(n);
}

/* Remove empty directory node n. Pending versions aimed into it fail at publish. */
void dir_remove(struct dir *d, struct node *n)
{
	dir_node_detach(d, n);
	htab_del(&d->ids, (uintptr_t)n | TAG);
	d->ndirs--;
	free(n);
}

/* ---- pending versions ---- */

void dir_pend_attach(struct dir *d, struct pend *p, const struct nkey *k)
{
	p->parent = k->parent;
	p->hash = k->hash;
	p->nlen = (uint8_t)k->nlen;
	memmove(p->name, k->name, k->nlen);
	p->cookie = d->next_cookie++;
	p->attached = 1;
	htab_place(&d->names, (uintptr_t)p | TAG, p->hash);
}

void dir_pend_detach(struct dir *d, struct pend *p)
{
	if (!p->attached)
		return;
	htab_del(&d->names, (uintptr_t)p | TAG);
	p->attached = 0;
}

void dir_pend_unlink_session(struct pend *p)
{
	struct dir_session *s = p->owner;

	if (p->sprev)
		p->sprev->snext = p->snext;
	else
		s->pends = p->snext;
	if (p->snext)
		p->snext->sprev = p->sprev;
	p->sprev = p->snext = NULL;
}

void dir_pend_abandon(struct dir *d, struct pend *p)
{
	uint64_t r = ver_reserved(&p->v);

	dir_pend_detach(d, p);
	dir_pend_unlink_session(p);
	dir_ver_free_bytes(d, &p->v);
	d->pending -= r;
	p->owner->pending_bytes -= r;
	htab_del(&d->ids, (uintptr_t)&p->v);
	d->nvers--;
	d->st.abandons++;
	free(p);
}

/* dir_destroy: free whatever an ids slot holds, bytes back to the allocator. */
void dir_free_item(struct dir *d, uintptr_t it)
{
	struct ver *v = (struct ver *)it;

	if (it & TAG) {
		free((void *)(it & ~(uintptr_t)TAG));
		return;
	}
	dir_ver_free_bytes(d, v);
	if (v->state == DIR_ST_PUBLISHED)
		free(ver_node(v));
	else if (v->state == DIR_ST_PENDING)
		free(ver_pend(v));
	else
		free(v);
}

struct ver *dir_node_ver(const struct dir *d, struct node *n)
{
	if (n->kind == NODE_LINK)
		return dir_id_ver(d, n->u.l.target);
	return n->kind == NODE_FILE ? &n->u.v : NULL;
}

struct node *dir_node_primary(const struct dir *d, struct node *n)
{
	struct ver *v;

	if (n->kind != NODE_LINK)
		return n;
	v = dir_id_ver(d, n->u.l.target);
	if (!v || v->state != DIR_ST_PUBLISHED)
		log_fatalx("dir: link to a version that is not bound");
	return ver_node(v);
}

int dir_node_shared(const struct dir *d, struct node *n)
{
	struct ver *v = dir_node_ver(d, n);

	return v && (n->kind == NODE_LINK || v->links > 0);
}
