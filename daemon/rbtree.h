/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/rbtree.h: an intrusive red-black tree. Nodes live inside the caller's
 * structs (24 bytes: the colour is kept in the low bit of the parent
 * pointer); the tree never allocates. Used by the allocator (free ranges by
 * offset and by size) and the directory (entries of a directory by cookie).
 * Not thread-safe.
 */
#ifndef MARU_RBTREE_H
#define MARU_RBTREE_H

#include <stddef.h>
#include <stdint.h>

struct rb_node {
	uintptr_t parent_color;
	struct rb_node *left, *right;
};

struct rb_root {
	struct rb_node *node;
};

#define RB_ROOT_INIT { NULL }
#define rb_entry(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define rb_entry_safe(ptr, type, member) \
	((ptr) ? rb_entry(ptr, type, member) : NULL)

/* <0, 0, >0 as a sorts before, equal to, after b. */
typedef int (*rb_cmp_fn)(const struct rb_node *a, const struct rb_node *b);
/* <0, 0, >0 as key sorts before, equal to, after node n. */
typedef int (*rb_keycmp_fn)(const void *key, const struct rb_node *n);

/* Insert n; equal nodes go after existing ones. O(log n). */
void rb_insert(struct rb_root *root, struct rb_node *n, rb_cmp_fn cmp);
void rb_erase(struct rb_root *root, struct rb_node *n);

struct rb_node *rb_first(const struct rb_root *root);
struct rb_node *rb_last(const struct rb_root *root);
struct rb_node *rb_next(const struct rb_node *n);
struct rb_node *rb_prev(const struct rb_node *n);

/* Some node equal to key, or NULL. */
struct rb_node *rb_find(const struct rb_root *root, const void *key, rb_keycmp_fn cmp);
/* First node >= key, or NULL. */
struct rb_node *rb_lower_bound(const struct rb_root *root, const void *key, rb_keycmp_fn cmp);
/* First node > key, or NULL. */
struct rb_node *rb_upper_bound(const struct rb_root *root, const void *key, rb_keycmp_fn cmp);
/* Last node <= key, or NULL. */
struct rb_node *rb_floor(const struct rb_root *root, const void *key, rb_keycmp_fn cmp);

static inline int rb_empty(const struct rb_root *root)
{
	return root->node == NULL;
}

#endif
