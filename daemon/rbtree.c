/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/rbtree.c: the intrusive red-black tree of rbtree.h. Balancing follows
 * the textbook (CLRS) insert and delete fix-ups, written with NULL leaves
 * instead of a sentinel so nodes need no tree-wide nil. The colour lives in
 * bit 0 of parent_color (1 = black), which rb_node's alignment leaves free.
 */
#include "rbtree.h"

#define RB_RED		0u
#define RB_BLACK	1u

static inline struct rb_node *parent_of(const struct rb_node *n)
{
	return (struct rb_node *)(n->parent_color & ~(uintptr_t)1);
}

static inline unsigned int color_of(const struct rb_node *n)
{
	return n ? (unsigned int)(n->parent_color & 1) : RB_BLACK;
}

static inline int is_red(const struct rb_node *n)
{
	return color_of(n) == RB_RED;
}

static inline void set_parent(struct rb_node *n, struct rb_node *p)
{
	n->parent_color = (uintptr_t)p | (n->parent_color & 1);
}

static inline void set_color(struct rb_node *n, unsigned int c)
{
	n->parent_color = (n->parent_color & ~(uintptr_t)1) | c;
}

/* Make the slot that held old (in parent or at the root) hold new. */
static void replace_child(struct rb_root *root, struct rb_node *parent,
			  struct rb_node *old, struct rb_node *new)
{
	if (!parent)
		root->node = new;
	else if (parent->left == old)
		parent->left = new;
	else
		parent->right = new;
	if (new)
		set_parent(new, parent);
}

static void rotate_left(struct rb_root *root, struct rb_node *x)
{
	struct rb_node *y = x->right;

	x->right = y->left;
	if (y->left)
		set_parent(y->left, x);
	replace_child(root, parent_of(x), x, y);
	y->left = x;
	set_parent(x, y);
}

static void rotate_right(struct rb_root *root, struct rb_node *x)
{
	struct rb_node *y = x->left;

	x->left = y->right;
	if (y->right)
		set_parent(y->right, x);
	replace_child(root, parent_of(x), x, y);
	y->right = x;
	set_parent(x, y);
}

static void insert_fixup(struct rb_root *root, struct rb_node *n)
{
	struct rb_node *p, *g, *u;

	while ((p = parent_of(n)) && is_red(p)) {
		/* A red parent is never the root, so g exists. */
		g = parent_of(p);
		if (p == g->left) {
			u = g->right;
			if (is_red(u)) {
				set_color(p, RB_BLACK);
				set_color(u, RB_BLACK);
				set_color(g, RB_RED);
				n = g;
				continue;
			}
			if (n == p->right) {
				rotate_left(root, p);
				n = p;
				p = parent_of(n);
			}
			set_color(p, RB_BLACK);
			set_color(g, RB_RED);
			rotate_right(root, g);
		} else {
			u = g->left;
			if (is_red(u)) {
				set_color(p, RB_BLACK);
				set_color(u, RB_BLACK);
				set_color(g, RB_RED);
				n = g;
				continue;
			}
			if (n == p->left) {
				rotate_right(root, p);
				n = p;
				p = parent_of(n);
			}
			set_color(p, RB_BLACK);
			set_color(g, RB_RED);
			rotate_left(root, g);
		}
	}
	set_color(root->node, RB_BLACK);
}

void rb_insert(struct rb_root *root, struct rb_node *n, rb_cmp_fn cmp)
{
	struct rb_node **link = &root->node, *parent = NULL;

	while (*link) {
		parent = *link;
		/* Ties go right so equal keys keep insertion order. */
		link = cmp(n, parent) < 0 ? &parent->left : &parent->right;
	}
	n->left = n->right = NULL;
	n->parent_color = (uintptr_t)parent | RB_RED;
	*link = n;
	insert_fixup(root, n);
}

/*
 * x (possibly NULL) sits where a black node was removed and carries an extra
 * black; parent is its parent, needed because x may be NULL.
 */
static void erase_fixup(struct rb_root *root, struct rb_node *x,
			struct rb_node *parent)
{
	struct rb_node *w;

	while (x != root->node && !is_red(x)) {
		if (x == parent->left) {
			w = parent->right;
			if (is_red(w)) {
				set_color(w, RB_BLACK);
				set_color(parent, RB_RED);
				rotate_left(root, parent);
				w = parent->right;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				set_color(w, RB_RED);
				x = parent;
				parent = parent_of(x);
				continue;
			}
			if (!is_red(w->right)) {
				set_color(w->left, RB_BLACK);
				set_color(w, RB_RED);
				rotate_right(root, w);
				w = parent->right;
			}
			set_color(w, color_of(parent));
			set_color(parent, RB_BLACK);
			set_color(w->right, RB_BLACK);
			rotate_left(root, parent);
		} else {
			w = parent->left;
			if (is_red(w)) {
				set_color(w, RB_BLACK);
				set_color(parent, RB_RED);
				rotate_right(root, parent);
				w = parent->left;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				set_color(w, RB_RED);
				x = parent;
				parent = parent_of(x);
				continue;
			}
			if (!is_red(w->left)) {
				set_color(w->right, RB_BLACK);
				set_color(w, RB_RED);
				rotate_left(root, w);
				w = parent->left;
			}
			set_color(w, color_of(parent));
			set_color(parent, RB_BLACK);
			set_color(w->left, RB_BLACK);
			rotate_right(root, parent);
		}
		x = root->node;
	}
	if (x)
		set_color(x, RB_BLACK);
}

static struct rb_node *leftmost(struct rb_node *n)
{
	while (n->left)
		n = n->left;
	return n;
}

static struct rb_node *rightmost(struct rb_node *n)
{
	while (n->right)
		n = n->right;
	return n;
}

void rb_erase(struct rb_root *root, struct rb_node *z)
{
	struct rb_node *child, *parent, *y;
	unsigned int removed;

	if (!z->left || !z->right) {
		child = z->left ? z->left : z->right;
		parent = parent_of(z);
		removed = color_of(z);
		replace_child(root, parent, z, child);
	} else {
		/* Move the successor y into z's place, colour included. */
		y = leftmost(z->right);
		removed = color_of(y);
		child = y->right;
		if (parent_of(y) == z) {
			parent = y;
		} else {
			parent = parent_of(y);
			replace_child(root, parent, y, child);
			y->right = z->right;
			set_parent(y->right, y);
		}
		replace_child(root, parent_of(z), z, y);
		y->parent_color = z->parent_color;
		y->left = z->left;
		set_parent(y->left, y);
	}
	if (removed == RB_BLACK)
		erase_fixup(root, child, parent);
}

struct rb_node *rb_first(const struct rb_root *root)
{
	return root->node ? leftmost(root->node) : NULL;
}

struct rb_node *rb_last(const struct rb_root *root)
{
	return root->node ? rightmost(root->node) : NULL;
}

struct rb_node *rb_next(const struct rb_node *n)
{
	struct rb_node *p;

	if (n->right)
		return leftmost(n->right);
	while ((p = parent_of(n)) && n == p->right)
		n = p;
	return p;
}

struct rb_node *rb_prev(const struct rb_node *n)
{
	struct rb_node *p;

	if (n->left)
		return rightmost(n->left);
	while ((p = parent_of(n)) && n == p->left)
		n = p;
	return p;
}

struct rb_node *rb_find(const struct rb_root *root, const void *key, rb_keycmp_fn cmp)
{
	struct rb_node *n = root->node;
	int c;

	while (n) {
		c = cmp(key, n);
		if (c == 0)
			return n;
		n = c < 0 ? n->left : n->right;
	}
	return NULL;
}

struct rb_node *rb_lower_bound(const struct rb_root *root, const void *key,
			       rb_keycmp_fn cmp)
{
	struct rb_node *n = root->node, *best = NULL;

	while (n) {
		if (cmp(key, n) <= 0) {
			best = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best;
}

struct rb_node *rb_upper_bound(const struct rb_root *root, const void *key,
			       rb_keycmp_fn cmp)
{
	struct rb_node *n = root->node, *best = NULL;

	while (n) {
		if (cmp(key, n) < 0) {
			best = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best;
}

struct rb_node *rb_floor(const struct rb_root *root, const void *key, rb_keycmp_fn cmp)
{
	struct rb_node *n = root->node, *best = NULL;

	while (n) {
		if (cmp(key, n) >= 0) {
			best = n;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return best;
}
