/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir.c: the pool directory (see dir.h for the semantics). It owns
 * every namespace directory, name, version, lease and pending version of a
 * pool, the LRU of evictable versions, the event ring and the byte
 * accounting; every other part of marud goes through dir_*().
 *
 * Layout, chosen to keep a published name near 200 bytes of heap:
 *  - a struct node is one bound name: a directory (struct dnode inline) or a
 *    file with its published version (struct ver inline, first extent
 *    inline). Its name follows it (not NUL-terminated);
 *  - pending versions live in a struct pend (owner session, target name);
 *    orphaned versions (unbound, still leased) are a bare malloc'd struct ver;
 *    so a version moves (ver_move) when it is published or orphaned, and
 *    nothing outside this file holds a pointer to one: leases name versions
 *    by id;
 *  - two open-addressing tables (linear probing, backward-shift delete,
 *    doubling at 3/4 load): `names` maps (parent id, name) to nodes and to
 *    attached pending versions (tag bit 1), `ids` maps ids to directories (tag
 *    bit 1) and versions. A parallel array of 16-bit fingerprints lets a probe
 *    run be scanned without touching the items (one cache miss per lookup,
 *    not one per probe);
 *  - each directory keeps its children in an rbtree by cookie so readdir
 *    resumes in O(log n); cookies come from one counter, never reused.
 *
 * Locking: d->lock is the only lock and guards everything, including the
 * event ring; d->cond (CLOCK_MONOTONIC) wakes event waiters. The copy
 * callback runs with d->lock held.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dir.h"
#include "log.h"
#include "proto.h"
#include "rbtree.h"
#include "clock.h"
#include "hash.h"

#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

#define TAG 1u
#define EVENT_RING_DEFAULT 65536u
#define HTAB_MIN 64u

struct lru_link {
	struct lru_link *prev, *next;	/* prev == NULL: not on the LRU */
};

/* One file version; where it lives depends on state (see the top). */
struct ver {
	uint64_t id;
	struct lru_link lru;
	uint64_t size, xxh3;
	uint64_t atime, mtime, ctime;
	uint32_t mode, uid, gid;
	uint32_t leases;
	uint32_t next;		/* extents; 0 or 1: ext.one, else ext.xl */
	uint8_t state;		/* enum dir_state */
	union {
		struct extent one;
		struct extent_list xl;
	} ext;
};

struct dnode {
	uint64_t id;
	struct rb_root kids;	/* struct node by cookie */
	uint64_t nent;
	uint64_t atime, mtime, ctime;
	uint32_t mode, uid, gid, nsub;
};

enum { NODE_DIR = 1, NODE_FILE = 2 };

struct node {
	struct rb_node rb;	/* in the parent's kids */
	uint64_t parent;
	uint64_t cookie;
	uint32_t hash;		/* of (parent, name) */
	uint8_t kind, nlen;
	union {
		struct ver v;
		struct dnode d;
	} u;
	char name[];
};

struct pend {
	struct ver v;
	struct dir_session *owner;
	struct pend *sprev, *snext;
	uint64_t parent;	/* target directory */
	uint64_t cookie;	/* readdir position while the name is unbound */
	uint32_t hash;
	uint8_t attached;	/* 0 once the owner unlinked the target name */
	uint8_t nlen;
	char name[PROTO_NAME_MAX];
};

struct lease {
	struct rb_node rb;
	uint64_t id;
	uint32_t count;
};

struct dir_session {
	uint64_t id;
	struct dir_session *prev, *next;
	struct pend *pends;
	struct rb_root leases;	/* struct lease by id */
	uint64_t nleases, pending_bytes;
};

typedef uint32_t (*hkey_fn)(uintptr_t item);

struct htab {
	uintptr_t *slot;
	uint16_t *fp;		/* fingerprint per slot; 0: empty */
	uint64_t mask, count;
	hkey_fn hash;
};

/* An event as kept: paths as one heap string "path\0path2\0". */
struct evrec {
	uint64_t seq, time_ns;
	uint32_t type;
	uint64_t ino, parent, parent2;
	char *paths;
};

struct evring {
	struct evrec *rec;
	uint32_t cap, max, head, count;
	uint64_t seq;		/* last assigned */
	uint64_t kick;
};

struct dir {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct dir_opts o;
	uint64_t block;
	struct htab names, ids;
	struct node *root;
	struct lru_link lru;		/* head: least recently used */
	struct dir_session *sessions;
	uint64_t next_id, next_cookie, next_sid;
	uint64_t used, pending, orphaned, evictable;
	uint64_t nnames, ndirs, nvers, nleases, nsessions;
	struct dir_stats st;		/* only the event counters are kept here */
	struct evring ev;
};

struct nkey {
	uint64_t parent;
	const char *name;
	size_t nlen;
	uint32_t hash;
};

/* ---- small helpers ---- */

static uint64_t round_up(uint64_t v, uint64_t b)
{
	return (v + b - 1) / b * b;
}

static uint64_t id_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint32_t name_hash(uint64_t parent, const char *name, size_t nlen)
{
	uint64_t h = hash_xxh3(name, nlen) ^ id_mix(parent);

	return (uint32_t)(h ^ (h >> 32));
}

static void nkey_set(struct nkey *k, uint64_t parent, const char *name, size_t nlen)
{
	k->parent = parent;
	k->name = name;
	k->nlen = nlen;
	k->hash = name_hash(parent, name, nlen);
}

static int name_is_tmp(const char *name, size_t nlen)
{
	return memmem(name, nlen, ".tmp", 4) != NULL;
}

static struct node *ver_node(struct ver *v)
{
	return container_of(v, struct node, u.v);
}

static struct pend *ver_pend(struct ver *v)
{
	return container_of(v, struct pend, v);
}

/* Read-only extent_list view of a version's extents. */
static const struct extent_list *ver_view(const struct ver *v, struct extent_list *tmp)
{
	if (v->next >= 2)
		return &v->ext.xl;
	tmp->v = (struct extent *)&v->ext.one;
	tmp->n = tmp->cap = v->next;
	return tmp;
}

static uint64_t ver_reserved(const struct ver *v)
{
	struct extent_list tmp;

	if (v->next == 0)
		return 0;
	if (v->next == 1)
		return v->ext.one.len;
	return extent_list_bytes(ver_view(v, &tmp));
}

/* ---- open-addressing hash tables ---- */

/* Never 0 (empty); mixed so neighbours in a probe run differ. */
static uint16_t fp_of(uint32_t h)
{
	uint16_t f = (uint16_t)((h * 0x9e3779b1u) >> 16);

	return f ? f : 1;
}

static int htab_init(struct htab *t, uint64_t size, hkey_fn fn)
{
	/* One block: the slots, then the fingerprints. */
	t->slot = calloc(size, sizeof(*t->slot) + sizeof(*t->fp));
	if (!t->slot)
		return -ENOMEM;
	t->fp = (uint16_t *)(t->slot + size);
	t->mask = size - 1;
	t->count = 0;
	t->hash = fn;
	return 0;
}

static void htab_place(struct htab *t, uintptr_t item, uint32_t h)
{
	uint64_t i = h & t->mask;

	while (t->fp[i])
		i = (i + 1) & t->mask;
	t->slot[i] = item;
	t->fp[i] = fp_of(h);
	t->count++;
}

/*
 * Make room for one more item, doubling at 3/4 load. The rehash is
 * amortized O(1) per insert; hashes are kept in the items so it never
 * rehashes names.
 */
static int htab_reserve(struct htab *t)
{
	uint64_t size = t->mask + 1, i;
	struct htab n;

	if ((t->count + 1) * 4 <= size * 3)
		return 0;
	if (htab_init(&n, size * 2, t->hash))
		return -ENOMEM;
	for (i = 0; i < size; i++)
		if (t->fp[i])
			htab_place(&n, t->slot[i], t->hash(t->slot[i]));
	free(t->slot);
	*t = n;
	return 0;
}

static uint64_t htab_slot_of(const struct htab *t, uintptr_t item)
{
	uint64_t i = t->hash(item) & t->mask;

	while (t->slot[i] != item) {
		if (!t->fp[i])
			fatalx("dir: hash table lost an item");
		i = (i + 1) & t->mask;
	}
	return i;
}

/* Backward-shift deletion keeps probe runs unbroken without tombstones. */
static void htab_del_at(struct htab *t, uint64_t i)
{
	uint64_t j = i, k;

	for (;;) {
		j = (j + 1) & t->mask;
		if (!t->fp[j])
			break;
		k = t->hash(t->slot[j]) & t->mask;
		/* slot[j] stays if its home k lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slot[i] = t->slot[j];
		t->fp[i] = t->fp[j];
		i = j;
	}
	t->slot[i] = 0;
	t->fp[i] = 0;
	t->count--;
}

static void htab_del(struct htab *t, uintptr_t item)
{
	htab_del_at(t, htab_slot_of(t, item));
}

static uint32_t names_hash(uintptr_t it)
{
	if (it & TAG)
		return ((const struct pend *)(it & ~(uintptr_t)TAG))->hash;
	return ((const struct node *)it)->hash;
}

static uint64_t item_id(uintptr_t it)
{
	if (it & TAG)
		return ((const struct node *)(it & ~(uintptr_t)TAG))->u.d.id;
	return ((const struct ver *)it)->id;
}

static uint32_t ids_hash(uintptr_t it)
{
	return (uint32_t)id_mix(item_id(it));
}

static uintptr_t id_find(const struct dir *d, uint64_t id)
{
	const struct htab *t = &d->ids;
	uint32_t h = (uint32_t)id_mix(id);
	uint16_t f = fp_of(h);
	uint64_t i = h & t->mask;

	for (; t->fp[i]; i = (i + 1) & t->mask)
		if (t->fp[i] == f && item_id(t->slot[i]) == id)
			return t->slot[i];
	return 0;
}

static struct ver *id_ver(const struct dir *d, uint64_t id)
{
	uintptr_t it = id_find(d, id);

	return it && !(it & TAG) ? (struct ver *)it : NULL;
}

static struct node *id_dir(const struct dir *d, uint64_t id)
{
	uintptr_t it = id_find(d, id);

	return it & TAG ? (struct node *)(it & ~(uintptr_t)TAG) : NULL;
}

/* Directory by id: -ENOENT if unknown, -ENOTDIR if a file. */
static int get_dir(const struct dir *d, uint64_t id, struct node **out)
{
	uintptr_t it = id_find(d, id);

	if (!it)
		return -ENOENT;
	if (!(it & TAG))
		return -ENOTDIR;
	*out = (struct node *)(it & ~(uintptr_t)TAG);
	return 0;
}

static int node_is(const struct node *n, const struct nkey *k)
{
	return n->hash == k->hash && n->parent == k->parent && n->nlen == k->nlen &&
	       !memcmp(n->name, k->name, k->nlen);
}

static int pend_is(const struct pend *p, const struct nkey *k)
{
	return p->hash == k->hash && p->parent == k->parent && p->nlen == k->nlen &&
	       !memcmp(p->name, k->name, k->nlen);
}

/* The bound node (file or directory) of a name. */
static struct node *name_find(const struct dir *d, const struct nkey *k)
{
	const struct htab *t = &d->names;
	uint16_t f = fp_of(k->hash);
	uint64_t i = k->hash & t->mask;

	for (; t->fp[i]; i = (i + 1) & t->mask) {
		uintptr_t it = t->slot[i];

		if (t->fp[i] == f && !(it & TAG) && node_is((const struct node *)it, k))
			return (struct node *)it;
	}
	return NULL;
}

/* s's newest attached pending version of a name. */
static struct pend *pend_find(const struct dir *d, const struct dir_session *s,
			      const struct nkey *k)
{
	const struct htab *t = &d->names;
	struct pend *best = NULL;
	uint16_t f = fp_of(k->hash);
	uint64_t i = k->hash & t->mask;

	if (!s || !s->pends)
		return NULL;
	for (; t->fp[i]; i = (i + 1) & t->mask) {
		uintptr_t it = t->slot[i];
		struct pend *p = (struct pend *)(it & ~(uintptr_t)TAG);

		if (t->fp[i] == f && (it & TAG) && p->owner == s && pend_is(p, k) &&
		    (!best || p->v.id > best->v.id))
			best = p;
	}
	return best;
}

/* ---- LRU ---- */

static void lru_del(struct dir *d, struct ver *v)
{
	if (!v->lru.prev)
		return;
	v->lru.prev->next = v->lru.next;
	v->lru.next->prev = v->lru.prev;
	v->lru.prev = v->lru.next = NULL;
	d->evictable -= ver_reserved(v);
}

static void lru_add_tail(struct dir *d, struct ver *v)
{
	v->lru.prev = d->lru.prev;
	v->lru.next = &d->lru;
	d->lru.prev->next = &v->lru;
	d->lru.prev = &v->lru;
	d->evictable += ver_reserved(v);
}

/* Put a published version where it belongs: on the LRU iff unleased and not ".tmp". */
static void lru_settle(struct dir *d, struct node *n)
{
	struct ver *v = &n->u.v;
	int want = !v->leases && !name_is_tmp(n->name, n->nlen);

	if (want && !v->lru.prev)
		lru_add_tail(d, v);
	else if (!want && v->lru.prev)
		lru_del(d, v);
}

/* Copy a version to a new home and repoint the id table and the LRU at it. */
static void ver_move(struct dir *d, struct ver *from, struct ver *to)
{
	uint64_t i = htab_slot_of(&d->ids, (uintptr_t)from);

	memmove(to, from, sizeof(*to));
	d->ids.slot[i] = (uintptr_t)to;
	if (to->lru.prev) {
		to->lru.prev->next = &to->lru;
		to->lru.next->prev = &to->lru;
	}
}

/* ---- extents ---- */

/* Hand the version's extents over as a heap list (for alloc_get). */
static int ver_take_list(struct ver *v, struct extent_list *l)
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
static void ver_put_list(struct ver *v, struct extent_list *l)
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

static void ver_free_bytes(struct dir *d, struct ver *v)
{
	struct extent_list tmp;

	alloc_put_list(d->o.alloc, ver_view(v, &tmp));
	if (v->next >= 2)
		free(v->ext.xl.v);
	v->next = 0;
}

/* Shrink to round_up(keep); never allocates. Returns bytes freed. */
static uint64_t ver_trim(struct dir *d, struct ver *v, uint64_t keep)
{
	struct extent_list l;
	uint64_t freed;

	keep = round_up(keep, d->block);
	if (v->next == 1) {
		if (keep >= v->ext.one.len)
			return 0;
		freed = v->ext.one.len - keep;
		alloc_put(d->o.alloc, v->ext.one.off + keep, freed);
		v->ext.one.len = keep;
		v->next = keep ? 1 : 0;
		return freed;
	}
	if (v->next < 2)
		return 0;
	freed = alloc_trim(d->o.alloc, &v->ext.xl, keep);
	if (v->ext.xl.n < 2) {
		l = v->ext.xl;
		ver_put_list(v, &l);
	} else {
		v->next = v->ext.xl.n;
	}
	return freed;
}

static void copy_run(struct dir *d, const struct ver *dst, uint64_t off,
		     const struct ver *src, uint64_t len)
{
	struct extent_list t1, t2;

	if (!len)
		return;
	d->o.copy(d->o.copy_arg, ver_view(dst, &t1), off,
		  src ? ver_view(src, &t2) : NULL, 0, len);
}

/* ---- events ---- */

/* Prepend s to the path being built backwards at *pos; 0 when it fit. */
static int path_prepend(char *buf, size_t *pos, const char *s, size_t len)
{
	if (len + 1 > *pos)
		return -1;
	*pos -= len;
	memcpy(buf + *pos, s, len);
	buf[--*pos] = '/';
	return 0;
}

/*
 * "/a/b/name" of name in directory parent, built backwards into buf so an
 * over-long path loses its head, never its name. Returns the start.
 */
static const char *path_build(const struct dir *d, uint64_t parent, const char *name,
			      size_t nlen, char *buf, size_t size)
{
	size_t pos = size - 1;
	const struct node *n;

	buf[pos] = '\0';
	if (nlen && path_prepend(buf, &pos, name, nlen))
		return buf + pos;
	while (parent != DIR_ROOT_ID && (n = id_dir(d, parent)) != NULL) {
		if (path_prepend(buf, &pos, n->name, n->nlen))
			break;
		parent = n->parent;
	}
	if (pos == size - 1)
		buf[--pos] = '/';
	return buf + pos;
}

static struct evrec *ev_slot(struct dir *d)
{
	struct evring *r = &d->ev;
	struct evrec *rec;
	uint32_t ncap;

	if (r->count == r->cap && r->cap < r->max) {
		ncap = r->cap ? r->cap * 2 : 64;
		if (ncap > r->max)
			ncap = r->max;
		rec = realloc(r->rec, (size_t)ncap * sizeof(*rec));
		if (rec) {
			/* Unwrap: the part before head moves after the old end. */
			memcpy(rec + r->cap, rec, (size_t)r->head * sizeof(*rec));
			r->rec = rec;
			r->cap = ncap;
		}
	}
	if (!r->cap)
		return NULL;
	if (r->count == r->cap) {
		free(r->rec[r->head].paths);
		r->head = (r->head + 1) % r->cap;
		r->count--;
	}
	rec = &r->rec[(r->head + r->count) % r->cap];
	r->count++;
	return rec;
}

struct evname {
	uint64_t parent;
	const char *name;
	size_t nlen;
};

static void ev_push(struct dir *d, uint32_t type, uint64_t ino,
		    const struct evname *a, const struct evname *b)
{
	char b1[PROTO_PATH_MAX], b2[PROTO_PATH_MAX];
	const char *p1, *p2 = "";
	struct evrec *rec;
	size_t l1, l2;

	p1 = path_build(d, a->parent, a->name, a->nlen, b1, sizeof(b1));
	if (b)
		p2 = path_build(d, b->parent, b->name, b->nlen, b2, sizeof(b2));
	rec = ev_slot(d);
	if (!rec) {
		/* No ring memory: a gap in seq reads as DEV_OVERFLOW to waiters. */
		d->ev.seq++;
		pthread_cond_broadcast(&d->cond);
		return;
	}
	l1 = strlen(p1);
	l2 = strlen(p2);
	rec->paths = malloc(l1 + l2 + 2);
	if (rec->paths) {
		memcpy(rec->paths, p1, l1 + 1);
		memcpy(rec->paths + l1 + 1, p2, l2 + 1);
	}
	rec->seq = ++d->ev.seq;
	rec->time_ns = now_ns();
	/* Without its paths an event is useless: tell subscribers to drop all. */
	rec->type = rec->paths ? type : DEV_OVERFLOW;
	rec->ino = ino;
	rec->parent = a->parent;
	rec->parent2 = b ? b->parent : 0;
	pthread_cond_broadcast(&d->cond);
}

static void ev_node(struct dir *d, uint32_t type, uint64_t ino, const struct node *n)
{
	struct evname a = { n->parent, n->name, n->nlen };

	ev_push(d, type, ino, &a, NULL);
}

/* ---- attributes ---- */

static void ver_attr(const struct ver *v, uint64_t parent, struct dir_attr *o)
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
	o->nlink = v->state == DIR_ST_ORPHANED ? 0 : 1;
	o->state = v->state;
	o->leases = v->leases;
}

static void dir_attr_of(const struct node *n, struct dir_attr *o)
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

static uint64_t ver_parent(struct ver *v)
{
	if (v->state == DIR_ST_PUBLISHED)
		return ver_node(v)->parent;
	if (v->state == DIR_ST_PENDING && ver_pend(v)->attached)
		return ver_pend(v)->parent;
	return 0;
}

static void node_attr(struct node *n, struct dir_attr *o)
{
	if (n->kind == NODE_DIR)
		dir_attr_of(n, o);
	else
		ver_attr(&n->u.v, n->parent, o);
}

static void dir_touch_m(struct node *dn, uint64_t t)
{
	dn->u.d.mtime = dn->u.d.ctime = t;
}

/* ---- binding names ---- */

static int cookie_cmp(const struct rb_node *a, const struct rb_node *b)
{
	uint64_t x = rb_entry(a, struct node, rb)->cookie;
	uint64_t y = rb_entry(b, struct node, rb)->cookie;

	return x < y ? -1 : x > y;
}

static int cookie_keycmp(const void *key, const struct rb_node *n)
{
	uint64_t k = *(const uint64_t *)key, c = rb_entry(n, struct node, rb)->cookie;

	return k < c ? -1 : k > c;
}

static struct node *node_alloc(size_t nlen)
{
	return calloc(1, offsetof(struct node, name) + nlen);
}

static void node_set_name(struct node *n, const struct nkey *k)
{
	n->parent = k->parent;
	n->hash = k->hash;
	n->nlen = (uint8_t)k->nlen;
	memcpy(n->name, k->name, k->nlen);
}

/* Link n under its parent (already in the names table). */
static void node_link(struct node *parent, struct node *n)
{
	rb_insert(&parent->u.d.kids, &n->rb, cookie_cmp);
	parent->u.d.nent++;
	if (n->kind == NODE_DIR)
		parent->u.d.nsub++;
	dir_touch_m(parent, now_ns());
}

/* Bind n into its parent (names table room already reserved). */
static void node_attach(struct dir *d, struct node *parent, struct node *n)
{
	htab_place(&d->names, (uintptr_t)n, n->hash);
	node_link(parent, n);
}

static void node_detach(struct dir *d, struct node *n)
{
	struct node *parent = id_dir(d, n->parent);

	htab_del(&d->names, (uintptr_t)n);
	if (!parent)
		fatalx("dir: node without parent");
	rb_erase(&parent->u.d.kids, &n->rb);
	parent->u.d.nent--;
	if (n->kind == NODE_DIR)
		parent->u.d.nsub--;
	dir_touch_m(parent, now_ns());
}

/*
 * Drop the published version of file node n from its name: orphaned into
 * `orphan` (preallocated, consumed) if leased, else freed. Returns 1 when
 * orphan was used.
 */
static int ver_unbind(struct dir *d, struct node *n, struct ver *orphan)
{
	struct ver *v = &n->u.v;
	uint64_t r = ver_reserved(v);

	lru_del(d, v);
	d->used -= r;
	if (v->leases) {
		ver_move(d, v, orphan);
		orphan->state = DIR_ST_ORPHANED;
		d->orphaned += r;
		return 1;
	}
	ver_free_bytes(d, v);
	htab_del(&d->ids, (uintptr_t)v);
	d->nvers--;
	return 0;
}

/* Remove file node n and its version (unlink, evict, rename over). */
static void file_remove(struct dir *d, struct node *n, struct ver *orphan)
{
	node_detach(d, n);
	if (!ver_unbind(d, n, orphan))
		free(orphan);
	d->nnames--;
	free(n);
}

static void evict_one(struct dir *d)
{
	struct ver *v = container_of(d->lru.next, struct ver, lru);
	struct node *n = ver_node(v);
	uint64_t r = ver_reserved(v);

	ev_node(d, DEV_EVICT, v->id, n);
	file_remove(d, n, NULL);
	d->st.evictions++;
	d->st.evicted_bytes += r;
}

/*
 * Append at least len bytes to l, evicting LRU versions when the pool is
 * short. Refuses at once (evicting nothing) when even evicting everything
 * evictable could not make room. Each eviction is O(1) plus the allocator.
 */
static int get_bytes(struct dir *d, uint64_t len, struct extent_list *l)
{
	uint64_t need = round_up(len, d->block);
	int rc;

	if (alloc_free_bytes(d->o.alloc) < need) {
		if (d->o.eviction == DIR_EVICT_NONE ||
		    alloc_free_bytes(d->o.alloc) + d->evictable < need) {
			d->st.enospc++;
			return -ENOSPC;
		}
		while (alloc_free_bytes(d->o.alloc) < need && d->lru.next != &d->lru)
			evict_one(d);
	}
	rc = alloc_get(d->o.alloc, len, l);
	if (rc == -ENOSPC)
		d->st.enospc++;
	return rc;
}

/* Grow pending version p of s to at least `bytes` reserved. */
static int pend_grow(struct dir *d, struct pend *p, uint64_t bytes)
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
	rc = ver_take_list(&p->v, &l);
	if (rc)
		return rc;
	rc = get_bytes(d, bytes - have, &l);
	ver_put_list(&p->v, &l);
	if (rc)
		return rc;
	got = ver_reserved(&p->v) - have;
	d->pending += got;
	s->pending_bytes += got;
	return 0;
}

/* ---- pending versions ---- */

static void pend_attach(struct dir *d, struct pend *p, const struct nkey *k)
{
	p->parent = k->parent;
	p->hash = k->hash;
	p->nlen = (uint8_t)k->nlen;
	memmove(p->name, k->name, k->nlen);
	p->cookie = d->next_cookie++;
	p->attached = 1;
	htab_place(&d->names, (uintptr_t)p | TAG, p->hash);
}

static void pend_detach(struct dir *d, struct pend *p)
{
	if (!p->attached)
		return;
	htab_del(&d->names, (uintptr_t)p | TAG);
	p->attached = 0;
}

static void pend_unlink_session(struct pend *p)
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

static void pend_abandon(struct dir *d, struct pend *p)
{
	uint64_t r = ver_reserved(&p->v);

	pend_detach(d, p);
	pend_unlink_session(p);
	ver_free_bytes(d, &p->v);
	d->pending -= r;
	p->owner->pending_bytes -= r;
	htab_del(&d->ids, (uintptr_t)&p->v);
	d->nvers--;
	d->st.abandons++;
	free(p);
}

/* s's own pending version ino: -ENOENT if unknown, -EPERM if not s's pending. */
static int own_pend(struct dir *d, struct dir_session *s, uint64_t ino, struct pend **out)
{
	uintptr_t it = id_find(d, ino);
	struct ver *v = (struct ver *)it;

	if (!it)
		return -ENOENT;
	if ((it & TAG) || v->state != DIR_ST_PENDING || ver_pend(v)->owner != s)
		return -EPERM;
	*out = ver_pend(v);
	return 0;
}

/* ---- leases ---- */

static int lease_keycmp(const void *key, const struct rb_node *n)
{
	uint64_t k = *(const uint64_t *)key, id = rb_entry(n, struct lease, rb)->id;

	return k < id ? -1 : k > id;
}

static int lease_cmp(const struct rb_node *a, const struct rb_node *b)
{
	return lease_keycmp(&rb_entry(a, struct lease, rb)->id, b);
}

static struct lease *lease_find(struct dir_session *s, uint64_t id)
{
	struct rb_node *n = rb_find(&s->leases, &id, lease_keycmp);

	return rb_entry_safe(n, struct lease, rb);
}

/* Add one lease of s on v; spare is a preallocated record (consumed or freed). */
static void lease_add(struct dir *d, struct dir_session *s, struct ver *v, struct lease *spare)
{
	struct lease *l = lease_find(s, v->id);

	if (l) {
		l->count++;
		free(spare);
	} else {
		spare->id = v->id;
		spare->count = 1;
		rb_insert(&s->leases, &spare->rb, lease_cmp);
	}
	lru_del(d, v);
	v->leases++;
	s->nleases++;
	d->nleases++;
	d->st.lease_grants++;
}

/* The last lease of v ended. */
static void ver_unleased(struct dir *d, struct ver *v)
{
	uint64_t r;

	if (v->state == DIR_ST_PUBLISHED) {
		lru_settle(d, ver_node(v));
		return;
	}
	if (v->state != DIR_ST_ORPHANED)
		return;
	r = ver_reserved(v);
	ver_free_bytes(d, v);
	d->orphaned -= r;
	htab_del(&d->ids, (uintptr_t)v);
	d->nvers--;
	free(v);
}

static void lease_drop(struct dir *d, struct dir_session *s, struct lease *l, uint32_t count)
{
	struct ver *v = id_ver(d, l->id);

	l->count -= count;
	s->nleases -= count;
	d->nleases -= count;
	if (!l->count) {
		rb_erase(&s->leases, &l->rb);
		free(l);
	}
	if (!v)
		fatalx("dir: lease on a lost version");
	v->leases -= count;
	if (!v->leases)
		ver_unleased(d, v);
}

/* ---- creation and teardown ---- */

static struct node *root_new(void)
{
	struct node *n = node_alloc(0);
	uint64_t t = now_ns();

	if (!n)
		return NULL;
	n->kind = NODE_DIR;
	n->u.d.id = DIR_ROOT_ID;
	n->u.d.mode = S_IFDIR | 0755;
	n->u.d.atime = n->u.d.mtime = n->u.d.ctime = t;
	return n;
}

int dir_new(const struct dir_opts *opts, struct dir **out)
{
	pthread_condattr_t ca;
	struct dir *d;

	if (!opts || !opts->alloc || !opts->copy || !out)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->o = *opts;
	d->block = alloc_block(opts->alloc);
	d->ev.max = opts->event_ring ? opts->event_ring : EVENT_RING_DEFAULT;
	d->lru.prev = d->lru.next = &d->lru;
	d->next_id = 2;
	d->next_cookie = 1;
	d->next_sid = 1;
	if (htab_init(&d->names, HTAB_MIN, names_hash))
		goto out_free;
	if (htab_init(&d->ids, HTAB_MIN, ids_hash))
		goto out_names;
	d->root = root_new();
	if (!d->root)
		goto out_ids;
	htab_place(&d->ids, (uintptr_t)d->root | TAG, (uint32_t)id_mix(DIR_ROOT_ID));
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = d;
	return 0;

out_ids:
	free(d->ids.slot);
out_names:
	free(d->names.slot);
out_free:
	free(d);
	return -ENOMEM;
}

static void free_item(struct dir *d, uintptr_t it)
{
	struct ver *v = (struct ver *)it;

	if (it & TAG) {
		free((void *)(it & ~(uintptr_t)TAG));
		return;
	}
	ver_free_bytes(d, v);
	if (v->state == DIR_ST_PUBLISHED)
		free(ver_node(v));
	else if (v->state == DIR_ST_PENDING)
		free(ver_pend(v));
	else
		free(v);
}

void dir_destroy(struct dir *d)
{
	struct dir_session *s, *sn;
	struct rb_node *r;
	uint64_t i;
	uint32_t k;

	if (!d)
		return;
	for (s = d->sessions; s; s = sn) {
		sn = s->next;
		while ((r = rb_first(&s->leases)) != NULL) {
			rb_erase(&s->leases, r);
			free(rb_entry(r, struct lease, rb));
		}
		free(s);
	}
	for (i = 0; i <= d->ids.mask; i++)
		if (d->ids.slot[i])
			free_item(d, d->ids.slot[i]);
	free(d->ids.slot);
	free(d->names.slot);
	for (k = 0; k < d->ev.count; k++)
		free(d->ev.rec[(d->ev.head + k) % d->ev.cap].paths);
	free(d->ev.rec);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* ---- sessions ---- */

int dir_session_new(struct dir *d, struct dir_session **out)
{
	struct dir_session *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	s->id = d->next_sid++;
	s->next = d->sessions;
	if (d->sessions)
		d->sessions->prev = s;
	d->sessions = s;
	d->nsessions++;
	pthread_mutex_unlock(&d->lock);
	*out = s;
	return 0;
}

void dir_session_end(struct dir *d, struct dir_session *s)
{
	struct rb_node *r;

	if (!s)
		return;
	pthread_mutex_lock(&d->lock);
	while ((r = rb_first(&s->leases)) != NULL) {
		struct lease *l = rb_entry(r, struct lease, rb);

		lease_drop(d, s, l, l->count);
	}
	while (s->pends)
		pend_abandon(d, s->pends);
	if (s->prev)
		s->prev->next = s->next;
	else
		d->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	d->nsessions--;
	pthread_mutex_unlock(&d->lock);
	free(s);
}

uint64_t dir_session_id(const struct dir_session *s)
{
	return s->id;
}

/* ---- namespace ---- */

/* Validate name and resolve parent to a directory. */
static int name_key(struct dir *d, uint64_t parent, const char *name, size_t nlen,
		    struct nkey *k, struct node **pdir)
{
	int rc;

	if (!name || proto_name_valid(name, nlen))
		return -EINVAL;
	rc = get_dir(d, parent, pdir);
	if (rc)
		return rc;
	nkey_set(k, parent, name, nlen);
	return 0;
}

static int mkdir_locked(struct dir *d, uint64_t parent, const char *name, size_t nlen,
			uint32_t mode, uint32_t uid, uint32_t gid, struct dir_attr *out)
{
	struct node *pd, *n;
	struct nkey k;
	int rc;

	rc = name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	if (name_find(d, &k))
		return -EEXIST;
	if (htab_reserve(&d->names) || htab_reserve(&d->ids))
		return -ENOMEM;
	n = node_alloc(nlen);
	if (!n)
		return -ENOMEM;
	node_set_name(n, &k);
	n->kind = NODE_DIR;
	n->cookie = d->next_cookie++;
	n->u.d.id = d->next_id++;
	n->u.d.mode = S_IFDIR | (mode & 07777);
	n->u.d.uid = uid;
	n->u.d.gid = gid;
	n->u.d.atime = n->u.d.mtime = n->u.d.ctime = now_ns();
	htab_place(&d->ids, (uintptr_t)n | TAG, (uint32_t)id_mix(n->u.d.id));
	node_attach(d, pd, n);
	d->ndirs++;
	ev_node(d, DEV_MKDIR, n->u.d.id, n);
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

/* Remove empty directory node n. Pending versions aimed into it fail at publish. */
static void dir_remove(struct dir *d, struct node *n)
{
	node_detach(d, n);
	htab_del(&d->ids, (uintptr_t)n | TAG);
	d->ndirs--;
	free(n);
}

static int rmdir_locked(struct dir *d, uint64_t parent, const char *name, size_t nlen)
{
	struct node *pd, *n;
	struct nkey k;
	int rc;

	rc = name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	n = name_find(d, &k);
	if (!n)
		return -ENOENT;
	if (n->kind != NODE_DIR)
		return -ENOTDIR;
	if (n->u.d.id == DIR_ROOT_ID)
		return -EBUSY;
	if (n->u.d.nent)
		return -ENOTEMPTY;
	ev_node(d, DEV_RMDIR, n->u.d.id, n);
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
	rc = name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		goto out;
	p = pend_find(d, s, &k);
	n = name_find(d, &k);
	if (p)
		ver_attr(&p->v, parent, out);
	else if (n)
		node_attr(n, out);
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

	*it = id_find(d, ino);
	if (!*it)
		return -ENOENT;
	v = (struct ver *)*it;
	if (!(*it & TAG) && v->state == DIR_ST_PENDING && ver_pend(v)->owner != s)
		return -ENOENT;
	return 0;
}

static void item_attr(uintptr_t it, struct dir_attr *out)
{
	struct ver *v = (struct ver *)it;

	if (it & TAG)
		dir_attr_of((struct node *)(it & ~(uintptr_t)TAG), out);
	else
		ver_attr(v, ver_parent(v), out);
}

int dir_getattr(struct dir *d, struct dir_session *s, uint64_t ino, struct dir_attr *out)
{
	uintptr_t it;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = visible(d, s, ino, &it);
	if (!rc)
		item_attr(it, out);
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
		ev_node(d, DEV_SETATTR, n->u.d.id, n);
		return;
	}
	a = (struct attrs){ &v->mode, &v->uid, &v->gid, &v->atime, &v->mtime, &v->ctime };
	apply_setattr(&a, sa);
	/* Only a bound name is visible to subscribers. */
	if (v->state == DIR_ST_PUBLISHED)
		ev_node(d, DEV_SETATTR, v->id, ver_node(v));
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
		item_attr(it, out);
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* Detach every pending version of s aimed at k. Returns how many. */
static int detach_pends(struct dir *d, struct dir_session *s, const struct nkey *k)
{
	struct pend *p;
	int n = 0;

	while ((p = pend_find(d, s, k)) != NULL) {
		pend_detach(d, p);
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

	rc = name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	n = name_find(d, &k);
	if (n && n->kind == NODE_DIR)
		return -EISDIR;
	if (n && n->u.v.leases && !(orphan = malloc(sizeof(*orphan))))
		return -ENOMEM;
	had = detach_pends(d, s, &k);
	if (!n)
		return had ? 0 : -ENOENT;
	ev_node(d, DEV_UNLINK, n->u.v.id, n);
	file_remove(d, n, orphan);
	d->st.unlinks++;
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
		if (id == DIR_ROOT_ID || !(n = id_dir(d, id)))
			return 0;
		id = n->parent;
	}
	return 1;
}

static int pends_of(struct dir *d, struct dir_session *s, const struct nkey *k)
{
	const struct htab *t = &d->names;
	uint16_t f = fp_of(k->hash);
	uint64_t i = k->hash & t->mask;
	int n = 0;

	if (!s || !s->pends)
		return 0;
	for (; t->fp[i]; i = (i + 1) & t->mask) {
		uintptr_t it = t->slot[i];
		struct pend *p = (struct pend *)(it & ~(uintptr_t)TAG);

		n += t->fp[i] == f && (it & TAG) && p->owner == s && pend_is(p, k);
	}
	return n;
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
		op->moved = node_alloc(op->to.nlen);
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

	node_detach(d, n);
	if (op->moved) {
		memcpy(op->moved, n, offsetof(struct node, name));
		if (n->kind == NODE_DIR)
			d->ids.slot[htab_slot_of(&d->ids, (uintptr_t)n | TAG)] =
				(uintptr_t)op->moved | TAG;
		else
			ver_move(d, &n->u.v, &op->moved->u.v);
		free(n);
		n = op->moved;
	}
	node_set_name(n, &op->to);
	n->cookie = d->next_cookie++;
	node_attach(d, op->todir, n);
	if (n->kind == NODE_DIR) {
		n->u.d.ctime = now_ns();
	} else {
		n->u.v.ctime = now_ns();
		if (!n->u.v.leases)
			lru_settle(d, n);
	}
	op->src = n;
}

static void rename_commit(struct dir *d, struct dir_session *s, struct rename_op *op)
{
	struct evname a = { op->from.parent, op->from.name, op->from.nlen };
	struct evname b = { op->to.parent, op->to.name, op->to.nlen };
	uint64_t ino = 0;
	struct pend *p;
	int visible_change = op->src || op->dst;

	if (op->dst && op->dst->kind == NODE_DIR) {
		dir_remove(d, op->dst);
	} else if (op->dst) {
		file_remove(d, op->dst, op->orphan);
		op->orphan = NULL;
		d->st.replaces++;
	}
	free(op->orphan);
	if (op->src) {
		rename_node(d, op);
		ino = op->src->kind == NODE_DIR ? op->src->u.d.id : op->src->u.v.id;
	}
	while ((p = pend_find(d, s, &op->from)) != NULL) {
		pend_detach(d, p);
		pend_attach(d, p, &op->to);
		if (!ino)
			ino = p->v.id;
	}
	if (visible_change)
		ev_push(d, DEV_RENAME, ino, &a, &b);
}

static int rename_locked(struct dir *d, struct dir_session *s, uint64_t oldparent,
			 const char *oldname, size_t oldlen, uint64_t newparent,
			 const char *newname, size_t newlen, uint32_t flags)
{
	struct rename_op op = { 0 };
	char from[PROTO_NAME_MAX], to[PROTO_NAME_MAX];
	int rc;

	if (flags & ~PROTO_RENAME_NOREPLACE)
		return -EINVAL;
	rc = name_key(d, oldparent, oldname, oldlen, &op.from, &op.fromdir);
	if (!rc)
		rc = name_key(d, newparent, newname, newlen, &op.to, &op.todir);
	if (rc)
		return rc;
	/* The caller's buffers might alias what we free or move; keep copies. */
	memcpy(from, oldname, oldlen);
	memcpy(to, newname, newlen);
	op.from.name = from;
	op.to.name = to;
	op.src = name_find(d, &op.from);
	op.npend = pends_of(d, s, &op.from);
	if (!op.src && !op.npend)
		return -ENOENT;
	if (oldparent == newparent && oldlen == newlen && !memcmp(from, to, oldlen))
		return 0;
	op.dst = name_find(d, &op.to);
	rc = rename_check(d, &op, flags);
	if (!rc)
		rc = rename_prealloc(&op);
	if (rc)
		return rc;
	rename_commit(d, s, &op);
	return 0;
}

int dir_rename(struct dir *d, struct dir_session *s, uint64_t oldparent,
	       const char *oldname, size_t oldlen, uint64_t newparent,
	       const char *newname, size_t newlen, uint32_t flags)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = rename_locked(d, s, oldparent, oldname, oldlen, newparent, newname,
			   newlen, flags);
	pthread_mutex_unlock(&d->lock);
	return rc;
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
		if (p->cookie <= cookie || name_find(d, &k) || pend_find(d, s, &k) != p)
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

static void dirent_node(struct dir *d, struct dir_session *s, const struct node *n,
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
	de->ino = n->u.v.id;
	de->mode = n->u.v.mode;
	de->state = DIR_ST_PUBLISHED;
	if (!inside)
		return;
	/* The writer sees its own pending version in place of the published one. */
	k = (struct nkey){ n->parent, n->name, n->nlen, n->hash };
	p = pend_find(d, s, &k);
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

	rc = get_dir(d, dirid, &dn);
	if (rc)
		return rc;
	rc = pends_in_dir(d, s, dirid, cookie, &pv, &np, &inside);
	if (rc)
		return rc;
	r = rb_upper_bound(&dn->u.d.kids, &cookie, cookie_keycmp);
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

int dir_exists(struct dir *d, uint64_t parent, const char *name, size_t nlen)
{
	struct node *pd;
	struct nkey k;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = name_key(d, parent, name, nlen, &k, &pd);
	if (!rc)
		rc = name_find(d, &k) != NULL;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* ---- versions ---- */

struct create_args {
	uint64_t parent, from_ino, size_hint;
	const char *name;
	size_t nlen;
	uint32_t flags, mode, uid, gid;
};

/* Resolve the target name of a create; k->name may point into a node. */
static int create_target(struct dir *d, const struct create_args *a, struct nkey *k)
{
	struct node *pd;
	struct ver *v;

	if (a->parent)
		return name_key(d, a->parent, a->name, a->nlen, k, &pd);
	v = id_ver(d, a->from_ino);
	if (!v || v->state != DIR_ST_PUBLISHED)
		return -ESTALE;
	pd = ver_node(v);
	*k = (struct nkey){ pd->parent, pd->name, pd->nlen, pd->hash };
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
	}
	p->owner = s;
	p->snext = s->pends;
	if (s->pends)
		s->pends->sprev = p;
	s->pends = p;
}

/* Reserve the new version's bytes, pinning the copy source against eviction. */
static int create_fill(struct dir *d, struct pend *p, struct node *src, uint64_t want)
{
	int pinned = src && src->u.v.lru.prev;
	int rc;

	if (pinned)
		lru_del(d, &src->u.v);
	rc = pend_grow(d, p, want);
	if (!rc && src) {
		copy_run(d, &p->v, 0, &src->u.v, src->u.v.size);
		p->v.size = src->u.v.size;
	}
	if (pinned)
		lru_settle(d, src);
	return rc;
}

static int create_locked(struct dir *d, struct dir_session *s,
			 const struct create_args *a, struct dir_attr *out)
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
	old = name_find(d, &k);
	if ((a->flags & DIR_CREATE_EXCL) && (old || pend_find(d, s, &k)))
		return -EEXIST;
	if (old && old->kind == NODE_DIR)
		return -EISDIR;
	src = old && (a->flags & DIR_CREATE_COPY) ? old : NULL;
	/* Unless it is the pinned copy source, old may be evicted below. */
	if (old)
		like = old->u.v;
	want = src && src->u.v.size > a->size_hint ? src->u.v.size : a->size_hint;
	if (htab_reserve(&d->names) || htab_reserve(&d->ids))
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* Copy the key now: eviction below may free the node it points into. */
	pend_attach(d, p, &k);
	k.name = p->name;
	p->owner = s;
	rc = create_fill(d, p, src, want);
	if (rc) {
		pend_detach(d, p);
		free(p);
		return rc;
	}
	pend_init(d, s, p, a, old ? &like : NULL);
	htab_place(&d->ids, (uintptr_t)&p->v, (uint32_t)id_mix(p->v.id));
	d->nvers++;
	d->st.creates++;
	ver_attr(&p->v, k.parent, out);
	return 0;
}

int dir_create(struct dir *d, struct dir_session *s, uint64_t parent,
	       const char *name, size_t nlen, uint64_t from_ino, uint32_t flags,
	       uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size_hint,
	       struct dir_attr *out)
{
	struct create_args a = { parent, from_ino, size_hint, name, nlen,
				 flags, mode, uid, gid };
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = create_locked(d, s, &a, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_reserve(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t bytes,
		struct dir_attr *out)
{
	struct pend *p;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = own_pend(d, s, ino, &p);
	if (!rc)
		rc = pend_grow(d, p, bytes);
	if (!rc)
		ver_attr(&p->v, ver_parent(&p->v), out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int truncate_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			   uint64_t size, struct dir_attr *out)
{
	struct pend *p;
	int rc;

	rc = own_pend(d, s, ino, &p);
	if (rc)
		return rc;
	rc = pend_grow(d, p, size);
	if (rc)
		return rc;
	if (size > p->v.size)
		copy_run(d, &p->v, p->v.size, NULL, size - p->v.size);
	p->v.size = size;
	p->v.mtime = p->v.ctime = now_ns();
	ver_attr(&p->v, ver_parent(&p->v), out);
	return 0;
}

int dir_truncate(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		 struct dir_attr *out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = truncate_locked(d, s, ino, size, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int wrote_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			uint64_t start, uint64_t end, struct dir_attr *out)
{
	struct pend *p;
	int rc;

	rc = own_pend(d, s, ino, &p);
	if (rc)
		return rc;
	if (start > end || end > ver_reserved(&p->v))
		return -EINVAL;
	if (start > p->v.size)
		copy_run(d, &p->v, p->v.size, NULL, start - p->v.size);
	if (end > p->v.size)
		p->v.size = end;
	p->v.mtime = p->v.ctime = now_ns();
	ver_attr(&p->v, ver_parent(&p->v), out);
	return 0;
}

int dir_wrote(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t start,
	      uint64_t end, struct dir_attr *out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = wrote_locked(d, s, ino, start, end, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

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
		m->fresh = node_alloc(p->nlen);
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

	pend_unlink_session(p);
	d->pending -= r;
	p->owner->pending_bytes -= r;
	if (old) {
		pend_detach(d, p);
		if (!ver_unbind(d, old, m->orphan))
			free(m->orphan);
		dir_touch_m(id_dir(d, old->parent), now_ns());
	} else {
		node_set_name(n, &k);
		n->kind = NODE_FILE;
		n->cookie = p->cookie;
		/* Same key, same hash: the node takes the pending's slot. */
		d->names.slot[htab_slot_of(&d->names, (uintptr_t)p | TAG)] = (uintptr_t)n;
		p->attached = 0;
		node_link(id_dir(d, p->parent), n);
		d->nnames++;
	}
	ver_move(d, &p->v, &n->u.v);
	n->u.v.state = DIR_ST_PUBLISHED;
	d->used += r;
	free(p);
	return &n->u.v;
}

static int publish_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			  uint64_t size, uint64_t xxh3, struct dir_attr *out)
{
	struct publish_mem m = { 0 };
	struct node *old;
	struct pend *p;
	struct ver *v;
	struct nkey k;
	uint64_t freed;
	int rc;

	rc = own_pend(d, s, ino, &p);
	if (rc)
		return rc;
	if (size > ver_reserved(&p->v))
		return -EINVAL;
	/* Name unlinked or directory removed while pending: refused, and the
	 * version stays the owner's (its open readers keep the bytes, as an
	 * unlinked local file's do) until it abandons it or its session ends. */
	if (!p->attached || !id_dir(d, p->parent))
		return -ENOENT;
	k = (struct nkey){ p->parent, p->name, p->nlen, p->hash };
	old = name_find(d, &k);
	if (old && old->kind == NODE_DIR)
		return -EISDIR;
	rc = publish_prealloc(p, old, &m);
	if (rc)
		return rc;
	freed = ver_trim(d, &p->v, size);
	d->pending -= freed;
	s->pending_bytes -= freed;
	v = publish_bind(d, p, old, &m);
	v->size = size;
	v->xxh3 = xxh3;
	v->mtime = v->ctime = now_ns();
	lease_add(d, s, v, m.lease);
	ev_node(d, old ? DEV_REPLACE : DEV_PUBLISH, v->id, ver_node(v));
	d->st.publishes++;
	d->st.replaces += old != NULL;
	ver_attr(v, ver_node(v)->parent, out);
	return 0;
}

int dir_publish(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t size,
		uint64_t xxh3, struct dir_attr *out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = publish_locked(d, s, ino, size, xxh3, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_abandon(struct dir *d, struct dir_session *s, uint64_t ino)
{
	struct pend *p;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = own_pend(d, s, ino, &p);
	if (!rc)
		pend_abandon(d, p);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int open_locked(struct dir *d, struct dir_session *s, uint64_t parent,
		       const char *name, size_t nlen, uint64_t ino, struct dir_attr *out)
{
	struct node *pd, *n;
	struct lease *l;
	struct ver *v;
	struct nkey k;
	int rc;

	if (nlen) {
		rc = name_key(d, parent, name, nlen, &k, &pd);
		if (rc)
			return rc;
		n = name_find(d, &k);
		if (!n)
			return -ENOENT;
		if (n->kind == NODE_DIR)
			return -EISDIR;
		v = &n->u.v;
	} else {
		/*
		 * By id: a published version, or one replaced or unlinked
		 * while still leased. The latter is what a kernel that looked
		 * the name up before the replace opens: on a local filesystem
		 * that open gets the old inode too. Once the last lease is
		 * gone the version is, and the caller looks the name up again.
		 */
		v = id_ver(d, ino);
		if (!v || (v->state != DIR_ST_PUBLISHED && v->state != DIR_ST_ORPHANED))
			return id_dir(d, ino) ? -EISDIR : -ESTALE;
	}
	if (d->o.max_leases && s->nleases >= d->o.max_leases)
		return -EMFILE;
	l = malloc(sizeof(*l));
	if (!l)
		return -ENOMEM;
	lease_add(d, s, v, l);
	ver_attr(v, ver_parent(v), out);
	return 0;
}

int dir_open(struct dir *d, struct dir_session *s, uint64_t parent, const char *name,
	     size_t nlen, uint64_t ino, struct dir_attr *out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = open_locked(d, s, parent, name, nlen, ino, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_release(struct dir *d, struct dir_session *s, uint64_t ino)
{
	struct lease *l;
	int rc = 0;

	pthread_mutex_lock(&d->lock);
	l = lease_find(s, ino);
	if (l)
		lease_drop(d, s, l, 1);
	else
		rc = -EINVAL;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int extents_locked(struct dir *d, struct dir_session *s, uint64_t ino,
			  int want_write, struct extent_list *out, struct dir_attr *attr)
{
	const struct extent_list *view;
	struct extent_list tmp;
	struct ver *v = id_ver(d, ino);
	int mine;

	if (!v)
		return -EPERM;
	mine = v->state == DIR_ST_PENDING && ver_pend(v)->owner == s;
	if (!mine && (want_write || !lease_find(s, ino)))
		return -EPERM;
	view = ver_view(v, &tmp);
	memset(out, 0, sizeof(*out));
	if (view->n) {
		out->v = malloc(view->n * sizeof(*out->v));
		if (!out->v)
			return -ENOMEM;
		memcpy(out->v, view->v, view->n * sizeof(*out->v));
		out->n = out->cap = view->n;
	}
	ver_attr(v, ver_parent(v), attr);
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

void dir_touch(struct dir *d, uint64_t ino)
{
	struct ver *v;

	pthread_mutex_lock(&d->lock);
	v = id_ver(d, ino);
	/* Leased versions rejoin the LRU at its tail when released anyway. */
	if (v && v->lru.prev) {
		lru_del(d, v);
		lru_add_tail(d, v);
	}
	pthread_mutex_unlock(&d->lock);
}

/* ---- accounting ---- */

void dir_stats(struct dir *d, struct dir_stats *out)
{
	pthread_mutex_lock(&d->lock);
	*out = d->st;
	out->capacity = alloc_capacity(d->o.alloc);
	out->free = alloc_free_bytes(d->o.alloc);
	out->used = d->used;
	out->pending = d->pending;
	out->orphaned = d->orphaned;
	/* With eviction off nothing will be evicted: report none as available. */
	out->evictable = d->o.eviction == DIR_EVICT_NONE ? 0 : d->evictable;
	out->names = d->nnames;
	out->dirs = d->ndirs;
	out->versions = d->nvers;
	out->leases = d->nleases;
	out->sessions = d->nsessions;
	out->event_seq = d->ev.seq;
	out->block = d->block;
	pthread_mutex_unlock(&d->lock);
}

struct census {
	uint64_t used, pending, orphaned, evictable;
	uint64_t names, dirs, vers, leases, attached;
	const char *bad;
};

static uint64_t count_kids(const struct node *n)
{
	const struct rb_node *r;
	uint64_t c = 0;

	for (r = rb_first(&n->u.d.kids); r; r = rb_next(r))
		c++;
	return c;
}

static void census_dir(struct dir *d, const struct node *n, struct census *c)
{
	if (n->u.d.id != DIR_ROOT_ID) {
		c->dirs++;
		if (name_find(d, &(struct nkey){ n->parent, n->name, n->nlen, n->hash }) != n)
			c->bad = "directory not found by its name";
	}
	if (count_kids(n) != n->u.d.nent)
		c->bad = "directory entry count differs from its children";
}

static void census_ver(struct ver *v, struct census *c)
{
	uint64_t r = ver_reserved(v);
	struct node *n;

	c->vers++;
	c->leases += v->leases;
	if (v->state == DIR_ST_PENDING) {
		c->pending += r;
		c->attached += ver_pend(v)->attached;
		if (v->lru.prev)
			c->bad = "pending version on the LRU";
		return;
	}
	if (v->state == DIR_ST_ORPHANED) {
		c->orphaned += r;
		if (!v->leases || v->lru.prev)
			c->bad = "orphaned version without lease or on the LRU";
		return;
	}
	n = ver_node(v);
	c->used += r;
	c->names++;
	if (!v->leases && !name_is_tmp(n->name, n->nlen)) {
		c->evictable += r;
		if (!v->lru.prev)
			c->bad = "evictable version missing from the LRU";
	} else if (v->lru.prev) {
		c->bad = "leased or .tmp version on the LRU";
	}
}

static void census_sessions(struct dir *d, struct census *c)
{
	const struct dir_session *s;
	const struct rb_node *r;
	const struct pend *p;
	uint64_t leases = 0, nsess = 0, pb;

	for (s = d->sessions; s; s = s->next, nsess++) {
		uint64_t sl = 0;

		for (r = rb_first(&s->leases); r; r = rb_next(r)) {
			const struct lease *l = rb_entry(r, struct lease, rb);
			const struct ver *v = id_ver(d, l->id);

			if (!v || v->leases < l->count || !l->count)
				c->bad = "lease record without a matching version";
			sl += l->count;
		}
		if (sl != s->nleases)
			c->bad = "session lease count differs from its records";
		leases += sl;
		for (pb = 0, p = s->pends; p; p = p->snext)
			pb += ver_reserved(&p->v);
		if (pb != s->pending_bytes)
			c->bad = "session pending bytes differ from its versions";
	}
	if (leases != c->leases)
		c->bad = "lease records differ from version lease counts";
	if (nsess != d->nsessions)
		c->bad = "session count differs";
}

static void census_lru(struct dir *d, struct census *c)
{
	const struct lru_link *l;
	uint64_t bytes = 0;

	for (l = d->lru.next; l != &d->lru; l = l->next)
		bytes += ver_reserved(container_of(l, struct ver, lru));
	if (bytes != c->evictable)
		c->bad = "LRU bytes differ from evictable versions";
}

static const char *check_locked(struct dir *d)
{
	struct census c = { 0 };
	uint64_t i, free_b = alloc_free_bytes(d->o.alloc);

	for (i = 0; i <= d->ids.mask; i++) {
		uintptr_t it = d->ids.slot[i];

		if (it & TAG)
			census_dir(d, (const struct node *)(it & ~(uintptr_t)TAG), &c);
		else if (it)
			census_ver((struct ver *)it, &c);
	}
	census_sessions(d, &c);
	census_lru(d, &c);
	if (c.bad)
		return c.bad;
	if (c.used != d->used || c.pending != d->pending || c.orphaned != d->orphaned ||
	    c.evictable != d->evictable)
		return "byte counters differ from a recount";
	if (free_b + c.used + c.pending + c.orphaned != alloc_capacity(d->o.alloc))
		return "free + used + pending + orphaned != capacity";
	if (c.names != d->nnames || c.dirs != d->ndirs || c.vers != d->nvers ||
	    c.leases != d->nleases)
		return "object counters differ from a recount";
	if (d->names.count != c.names + c.dirs + c.attached)
		return "name table holds stray entries";
	if (d->ids.count != c.vers + c.dirs + 1)
		return "id table holds stray entries";
	return NULL;
}

int dir_check(struct dir *d)
{
	const char *bad;

	pthread_mutex_lock(&d->lock);
	bad = check_locked(d);
	pthread_mutex_unlock(&d->lock);
	if (!bad)
		return 0;
	log_warnx("dir: invariant broken: %s", bad);
	return -EUCLEAN;
}

/* ---- events ---- */

static void copy_path(char *dst, char *name, const char *src)
{
	const char *slash = strrchr(src, '/');
	size_t len = strlen(src);

	if (len >= PROTO_PATH_MAX)
		len = PROTO_PATH_MAX - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	src = slash ? slash + 1 : src;
	len = strlen(src);
	if (len > PROTO_NAME_MAX)
		len = PROTO_NAME_MAX;
	memcpy(name, src, len);
	name[len] = '\0';
}

static void ev_out(const struct evrec *r, struct dir_event *e)
{
	memset(e, 0, offsetof(struct dir_event, name));
	e->seq = r->seq;
	e->time_ns = r->time_ns;
	e->type = r->type;
	e->ino = r->ino;
	e->parent = r->parent;
	e->parent2 = r->parent2;
	e->name[0] = e->name2[0] = e->path[0] = e->path2[0] = '\0';
	if (!r->paths)
		return;
	copy_path(e->path, e->name, r->paths);
	if (r->paths[strlen(r->paths) + 1])
		copy_path(e->path2, e->name2, r->paths + strlen(r->paths) + 1);
}

static int ev_copy(struct dir *d, uint64_t after, struct dir_event *out, int max)
{
	struct evring *r = &d->ev;
	uint64_t oldest = r->seq - r->count + 1, s;
	int n = 0;

	if (after + 1 < oldest) {
		memset(out, 0, sizeof(*out));
		out->seq = oldest - 1;
		out->time_ns = now_ns();
		out->type = DEV_OVERFLOW;
		return 1;
	}
	for (s = after + 1; s <= r->seq && n < max; s++, n++)
		ev_out(&r->rec[(r->head + (s - oldest)) % r->cap], &out[n]);
	return n;
}

int dir_events_wait(struct dir *d, uint64_t after, struct dir_event *out, int max,
		    int timeout_ms)
{
	struct timespec ts;
	uint64_t kick;
	int rc = 0;

	if (max <= 0)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (timeout_ms > 0) {
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&d->lock);
	kick = d->ev.kick;
	while (d->ev.seq <= after && d->ev.kick == kick && timeout_ms != 0 && rc == 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&d->cond, &d->lock);
		else
			rc = pthread_cond_timedwait(&d->cond, &d->lock, &ts);
	}
	rc = d->ev.seq > after ? ev_copy(d, after, out, max) : 0;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

uint64_t dir_event_seq(struct dir *d)
{
	uint64_t s;

	pthread_mutex_lock(&d->lock);
	s = d->ev.seq;
	pthread_mutex_unlock(&d->lock);
	return s;
}

void dir_events_kick(struct dir *d)
{
	pthread_mutex_lock(&d->lock);
	d->ev.kick++;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}
