/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/links.c: the index of hard-link nodes. Every name of a version
 * but its primary one is a NODE_LINK node kept in d->links, ordered by
 * (version id, cookie), so the names of one version are found in O(log n);
 * this file keeps that index and removes all of a version's extra names at
 * once (eviction). link.c, which makes and drops single names, and lru.c,
 * which evicts, both sit above it. Called with d->lock held.
 */
#include <stdlib.h>

#include "dir_priv.h"

struct lkey {
	uint64_t target, cookie;
};

static int link_cmp(const struct rb_node *a, const struct rb_node *b)
{
	const struct node *x = container_of(a, struct node, u.l.rb);
	const struct node *y = container_of(b, struct node, u.l.rb);

	if (x->u.l.target != y->u.l.target)
		return x->u.l.target < y->u.l.target ? -1 : 1;
	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

static int link_keycmp(const void *key, const struct rb_node *r)
{
	const struct lkey *k = key;
	const struct node *n = container_of(r, struct node, u.l.rb);

	if (k->target != n->u.l.target)
		return k->target < n->u.l.target ? -1 : 1;
	return k->cookie < n->cookie ? -1 : k->cookie > n->cookie;
}

/* Some link node of version id, or NULL. */
struct node *dir_link_first(const struct dir *d, uint64_t id)
{
	struct lkey k = { id, 0 };
	struct rb_node *r = rb_lower_bound(&d->links, &k, link_keycmp);
	struct node *n = r ? container_of(r, struct node, u.l.rb) : NULL;

	return n && n->u.l.target == id ? n : NULL;
}

void dir_link_unhook(struct dir *d, struct node *n)
{
	rb_erase(&d->links, &n->u.l.rb);
}

void dir_link_hook(struct dir *d, struct node *n)
{
	rb_insert(&d->links, &n->u.l.rb, link_cmp);
}

void dir_link_drop_all(struct dir *d, struct ver *v, uint32_t type)
{
	struct node *l;

	while ((l = dir_link_first(d, v->id)) != NULL) {
		dir_ev_node(d, type, v->id, l);
		dir_link_unhook(d, l);
		dir_node_detach(d, l);
		v->links--;
		d->nnames--;
		free(l);
	}
}

void dir_link_fini(struct dir *d)
{
	struct rb_node *r;

	while ((r = rb_first(&d->links)) != NULL) {
		rb_erase(&d->links, r);
		free(container_of(r, struct node, u.l.rb));
	}
}
