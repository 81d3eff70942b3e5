// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/dir/quota.c: which tenant each version's bytes count against. A
 * tenant is a root directory with a byte quota (dir_set_tenants); it owns
 * slot 1..255 of d->tq, slot 0 being every file under no tenant root. A
 * published or pending version carries its slot (ver.tenant) and is
 * charged there (ver_tq: used, pending; the slot's LRU and evictable for
 * the evictable ones), always the slot of the tenant whose root holds its
 * directory. This file keeps that true when it changes: a new tenant set
 * (recharge everything), a rename across tenant roots (the moved subtree
 * and the pending versions), a hard link whose holding name moves. It
 * reads out usage and recounts it for dir_check(). The limits themselves
 * (quota room, pool eviction order) are lru.c's. Called with d->lock held,
 * except the public dir_* calls, which take it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dir_priv.h"

/* ---- slots ---- */

static int root_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct dir_root_ix *)a)->root;
	uint64_t y = ((const struct dir_root_ix *)b)->root;

	return x < y ? -1 : x > y;
}

static uint32_t root_slot(const struct dir *d, uint64_t id)
{
	struct dir_root_ix k = { id, 0 }, *r;

	if (!d->nroots)
		return 0;	/* d->roots may be NULL: bsearch must not see it */
	r = bsearch(&k, d->roots, d->nroots, sizeof(k), root_cmp);
	return r ? r->slot : 0;
}

uint32_t dir_quota_slot(const struct dir *d, uint64_t id)
{
	const struct node *n;
	uint32_t t, hops;

	if (!d->nroots)
		return 0;
	/* Roots do not nest: the first root on the way up holds id. */
	for (hops = 0; hops < 4096; hops++) {
		t = root_slot(d, id);
		if (t || id == DIR_ROOT_ID)
			return t;
		n = dir_id_dir(d, id);
		if (!n)
			return 0;
		id = n->parent;
	}
	return 0;
}

void dir_quota_retag(struct dir *d, struct ver *v, uint32_t t)
{
	uint64_t r = ver_reserved(v);
	int on = v->lru.prev != NULL;

	if (v->tenant == t)
		return;
	if (v->state == DIR_ST_PUBLISHED) {
		if (on)
			dir_lru_del(d, v);
		ver_tq(d, v)->used -= r;
		v->tenant = (uint8_t)t;
		ver_tq(d, v)->used += r;
		if (on)
			dir_lru_settle(d, ver_node(v));
		return;
	}
	if (v->state == DIR_ST_PENDING) {
		ver_tq(d, v)->pending -= r;
		v->tenant = (uint8_t)t;
		ver_tq(d, v)->pending += r;
		return;
	}
	v->tenant = (uint8_t)t;	/* orphaned: charged to no one */
}

void dir_quota_follow(struct dir *d, struct node *n)
{
	if (n->kind == NODE_FILE)
		dir_quota_retag(d, &n->u.v, dir_quota_slot(d, n->parent));
}

/* Every session's pending versions, charged where their directory is now. */
static void retag_pends(struct dir *d)
{
	struct dir_session *s;
	struct pend *p;

	for (s = d->sessions; s; s = s->next)
		for (p = s->pends; p; p = p->snext)
			dir_quota_retag(d, &p->v, dir_quota_slot(d, p->parent));
}

/* The node after n in a walk of top's subtree (n's own kids first). */
static struct node *walk_next(struct dir *d, struct node *top, struct node *n)
{
	struct rb_node *r;

	if (n->kind == NODE_DIR && (r = rb_first(&n->u.d.kids)))
		return rb_entry(r, struct node, rb);
	while (n != top) {
		r = rb_next(&n->rb);
		if (r)
			return rb_entry(r, struct node, rb);
		n = dir_id_dir(d, n->parent);
		if (!n)
			return NULL;
	}
	return NULL;
}

/* Charge every version in the subtree of node top where it lives. */
static void recharge_subtree(struct dir *d, struct node *top)
{
	struct node *it;

	for (it = top; it; it = walk_next(d, top, it))
		dir_quota_follow(d, it);
}

void dir_quota_moved(struct dir *d, struct node *n, uint64_t from, uint64_t to)
{
	if (!d->nroots || dir_quota_slot(d, from) == dir_quota_slot(d, to))
		return;
	recharge_subtree(d, n);
	retag_pends(d);
}

/* ---- the tenant set ---- */

static int tenants_valid(struct dir *d, const struct dir_tenant *t, uint32_t n)
{
	uint32_t i, j;

	if (n > DIR_TENANTS_MAX)
		return -E2BIG;
	for (i = 0; i < n; i++) {
		if (!t[i].root || !t[i].name)
			return -EINVAL;
		if (!dir_id_dir(d, t[i].root))
			return -ENOENT;
		for (j = 0; j < i; j++)
			if (t[j].root == t[i].root)
				return -EINVAL;
	}
	return 0;
}

static uint32_t slot_of_root(const struct dir *d, uint64_t root)
{
	uint32_t i;

	for (i = 1; i < DIR_TQ_SLOTS; i++)
		if (d->tq[i].root == root)
			return i;
	return 0;
}

/* A slot neither live nor still charged (a dropped one is, until recharged). */
static uint32_t free_slot(const struct dir *d)
{
	uint32_t i;

	for (i = 1; i < DIR_TQ_SLOTS; i++)
		if (!d->tq[i].root && !d->tq[i].used && !d->tq[i].pending)
			return i;
	return 0;
}

static void slot_reset(struct dir_tq *q)
{
	struct lru_link head = q->lru;

	memset(q, 0, sizeof(*q));
	q->lru = head;
}

/* Recharge every version where it lives: the LRUs in order first, keeping it. */
static void recharge_all(struct dir *d)
{
	struct lru_link *l, *next;
	uint64_t pos = 0;
	uintptr_t it;
	uint32_t t;

	for (t = 0; t < DIR_TQ_SLOTS; t++) {
		for (l = d->tq[t].lru.next; l != &d->tq[t].lru; l = next) {
			next = l->next;
			dir_quota_follow(d, ver_node(container_of(l, struct ver, lru)));
		}
	}
	while ((it = htab_walk(&d->ids, &pos))) {
		struct ver *v = (struct ver *)it;

		if ((it & TAG) || !it)
			continue;
		if (v->state == DIR_ST_PUBLISHED)
			dir_quota_follow(d, ver_node(v));
		else if (v->state == DIR_ST_PENDING)
			dir_quota_retag(d, v, dir_quota_slot(d, ver_pend(v)->parent));
	}
}

/* Index the live slots' roots; forget the others'. */
static void index_roots(struct dir *d, struct dir_root_ix *ix)
{
	uint32_t i, n = 0;

	for (i = 1; i < DIR_TQ_SLOTS; i++)
		if (d->tq[i].root)
			ix[n++] = (struct dir_root_ix){ d->tq[i].root, i };
	if (n)
		qsort(ix, n, sizeof(*ix), root_cmp);
	free(d->roots);
	d->roots = n ? ix : NULL;
	d->nroots = n;
	if (!n)
		free(ix);
}

/* A root a new set leaves out: its slot, to drain. */
struct gone {
	uint32_t slot;
	uint64_t root;
};

/* Roots not in t stop holding anything; returns how many (listed in g). */
static uint32_t drop_roots(struct dir *d, const struct dir_tenant *t, uint32_t n,
			   struct gone *g)
{
	uint32_t i, s, ng = 0;

	for (i = 1; i < DIR_TQ_SLOTS; i++) {
		for (s = 0; s < n && t[s].root != d->tq[i].root; s++)
			;
		if (d->tq[i].root && s == n) {
			g[ng++] = (struct gone){ i, d->tq[i].root };
			d->tq[i].root = 0;
		}
	}
	return ng;
}

/*
 * Move a dropped root's versions where they live now: its LRU in order
 * (kept), then the rest of its subtree (leased, ".tmp"). O(its files).
 */
static void drain_slot(struct dir *d, const struct gone *g)
{
	struct lru_link *l, *next;
	struct node *top = dir_id_dir(d, g->root);

	for (l = d->tq[g->slot].lru.next; l != &d->tq[g->slot].lru; l = next) {
		next = l->next;
		dir_quota_follow(d, ver_node(container_of(l, struct ver, lru)));
	}
	if (top)
		recharge_subtree(d, top);
}

/* Every root in t gets a slot (a kept one, or a free one); the new ones in fresh[]. */
static int assign_slots(struct dir *d, const struct dir_tenant *t, uint32_t n,
			uint64_t *fresh, uint32_t *nfresh)
{
	uint32_t i, s;

	for (i = 0; i < n; i++) {
		s = slot_of_root(d, t[i].root);
		if (!s) {
			/* n <= 255 and dropped slots are drained: one is free */
			s = free_slot(d);
			if (!s)
				return -E2BIG;
			slot_reset(&d->tq[s]);
			d->tq[s].root = t[i].root;
			fresh[(*nfresh)++] = t[i].root;
		}
		d->tq[s].quota = t[i].quota;
		strncpy(d->tq[s].name, t[i].name, DIR_TENANT_NAME_MAX);
		d->tq[s].name[DIR_TENANT_NAME_MAX] = '\0';
	}
	return 0;
}

/*
 * After the roots changed (the dropped ones drained already): charge what
 * the new roots hold and the pending versions. O(the files of the changed
 * roots + pending versions).
 */
static void recharge_changed(struct dir *d, const struct gone *g, uint32_t ng,
			     const uint64_t *fresh, uint32_t nfresh)
{
	struct node *top;
	uint32_t i;

	for (i = 0; i < nfresh; i++)
		if ((top = dir_id_dir(d, fresh[i])))
			recharge_subtree(d, top);
	if (nfresh)
		retag_pends(d);
	/* a dropped slot still charged: something escaped the walks, walk all */
	for (i = 0; i < ng; i++)
		if (d->tq[g[i].slot].used || d->tq[g[i].slot].pending) {
			recharge_all(d);
			return;
		}
}

struct set_scratch {
	struct gone g[DIR_TQ_SLOTS];
	uint64_t fresh[DIR_TQ_SLOTS];
};

static int set_locked(struct dir *d, const struct dir_tenant *t, uint32_t n)
{
	struct dir_root_ix *mid, *fin;
	struct set_scratch *x;
	uint32_t i, ng, nfresh = 0;
	int rc;

	rc = tenants_valid(d, t, n);
	if (rc)
		return rc;
	x = calloc(1, sizeof(*x));
	mid = calloc(DIR_TQ_SLOTS, sizeof(*mid));
	fin = calloc(DIR_TQ_SLOTS, sizeof(*fin));
	if (!x || !mid || !fin) {
		free(x);
		free(mid);
		free(fin);
		return -ENOMEM;
	}
	/* The dropped roots hold nothing from here; their slots drain, free again. */
	ng = drop_roots(d, t, n, x->g);
	index_roots(d, mid);
	for (i = 0; i < ng; i++)
		drain_slot(d, &x->g[i]);
	if (ng)
		retag_pends(d);
	rc = assign_slots(d, t, n, x->fresh, &nfresh);
	index_roots(d, fin);
	/* The first set charges everything (LRU order kept; before serving);
	 * a later one only what the changed roots hold. */
	if (!d->charged && d->nroots)
		recharge_all(d);
	else
		recharge_changed(d, x->g, ng, x->fresh, nfresh);
	d->charged = 1;
	free(x);
	return rc;
}

int dir_set_tenants(struct dir *d, const struct dir_tenant *t, uint32_t n)
{
	int rc;

	if (n && !t)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	rc = set_locked(d, t, n);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* ---- reading out ---- */

static void usage_of(const struct dir_tq *q, struct dir_tenant_usage *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->name, q->name, sizeof(out->name));
	out->root = q->root;
	out->quota = q->quota;
	out->used = q->used;
	out->pending = q->pending;
	out->evictable = q->evictable;
	out->evictions = q->evictions;
	out->evicted_bytes = q->evicted_bytes;
	out->enospc = q->enospc;
}

uint32_t dir_tenant_usages(struct dir *d, struct dir_tenant_usage *out, uint32_t max)
{
	uint32_t i, n = 0;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->nroots && n < max; i++)
		usage_of(&d->tq[d->roots[i].slot], &out[n++]);
	pthread_mutex_unlock(&d->lock);
	return n;
}

int dir_tenant_usage_of(struct dir *d, uint64_t root, struct dir_tenant_usage *out)
{
	uint32_t t;

	pthread_mutex_lock(&d->lock);
	t = root_slot(d, root);
	if (t)
		usage_of(&d->tq[t], out);
	pthread_mutex_unlock(&d->lock);
	return t ? 0 : -ENODATA;
}

/* ---- dir_check ---- */

struct qcount {
	uint64_t used, pending, evictable;
};

static const char *census_vers(struct dir *d, struct qcount *c)
{
	uint64_t pos = 0;
	uintptr_t it;

	while ((it = htab_walk(&d->ids, &pos))) {
		struct ver *v = (struct ver *)it;
		uint64_t r;

		/* Symlinks and special files hold no pool bytes: charged nowhere. */
		if ((it & TAG) || !it || v->state == DIR_ST_ORPHANED || !ver_regular(v))
			continue;
		r = ver_reserved(v);
		if (v->state == DIR_ST_PENDING) {
			if (v->tenant != dir_quota_slot(d, ver_pend(v)->parent))
				return "pending version charged to another tenant";
			c[v->tenant].pending += r;
			continue;
		}
		if (v->tenant != dir_quota_slot(d, ver_node(v)->parent))
			return "published version charged to another tenant";
		c[v->tenant].used += r;
	}
	return NULL;
}

static const char *census_lrus(struct dir *d, struct qcount *c)
{
	const struct lru_link *l;
	uint32_t t;

	for (t = 0; t < DIR_TQ_SLOTS; t++) {
		for (l = d->tq[t].lru.next; l != &d->tq[t].lru; l = l->next) {
			const struct ver *v = container_of(l, struct ver, lru);

			if (v->tenant != t)
				return "version on another tenant's LRU";
			c[t].evictable += ver_reserved(v);
		}
	}
	return NULL;
}

const char *dir_quota_census(struct dir *d)
{
	struct qcount *c = calloc(DIR_TQ_SLOTS, sizeof(*c));
	const char *bad;
	uint32_t t;

	if (!c)
		return NULL;	/* no memory to recount: nothing is claimed wrong */
	bad = census_vers(d, c);
	if (!bad)
		bad = census_lrus(d, c);
	for (t = 0; !bad && t < DIR_TQ_SLOTS; t++) {
		const struct dir_tq *q = &d->tq[t];

		if (c[t].used != q->used || c[t].pending != q->pending ||
		    c[t].evictable != q->evictable)
			bad = "tenant byte counters differ from a recount";
	}
	free(c);
	return bad;
}
