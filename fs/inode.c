/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/inode.c: the table of what this mount has told the kernel: one node per
 * inode the kernel knows (lookup count, last known parent/name, the
 * user.maru.hint, one payload object), indexed by ino and by (parent, name)
 * in two shared hash tables (htab.h) whose items are the nodes.
 *
 * Lock: t->lock, a leaf. No libmaru call and no payload drop is made with
 * it held; a payload hold (an atomic increment) may be. Callers may hold a
 * pending's rw lock or the pending table's lock when they call in here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "htab.h"
#include "inode.h"

#define ROOT_INO 1	/* FUSE_ROOT_ID: never counted, never forgotten */
#define ITAB_MIN 1024u	/* slots each index starts with */

struct node {
	uint64_t ino;
	uint64_t parent;
	char *name;		/* NULL: not in by_name */
	uint64_t nlookup;
	void *payload;		/* held; pending.c's struct pending */
	int hint;		/* last user.maru.hint + 1, 0 = none */
	uint32_t nhash;		/* of (parent, name): by_name moves it without rehashing */
	struct node *moved;	/* itab_rename's list of nodes it renames */
};

struct itab {
	pthread_mutex_t lock;
	struct htab by_ino;	/* every node */
	struct htab by_name;	/* nodes with a name */
	struct itab_payload_ops ops;
};

/* FNV-1a over the name, folded with the parent id. */
uint64_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ULL;
	}
	return hash_mix64(h ^ hash_mix64(parent));
}

static uint32_t ino_hash(uint64_t ino)
{
	return (uint32_t)hash_mix64(ino);
}

static uint32_t node_ino_hash(uintptr_t it)
{
	return ino_hash(((const struct node *)it)->ino);
}

static uint32_t node_name_hash(uintptr_t it)
{
	return ((const struct node *)it)->nhash;
}

static int node_is_ino(uintptr_t it, const void *key)
{
	return ((const struct node *)it)->ino == *(const uint64_t *)key;
}

int itab_new(const struct itab_payload_ops *ops, struct itab **out)
{
	struct itab *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (htab_init(&t->by_ino, ITAB_MIN, node_ino_hash, HTAB_BULK)) {
		free(t);
		return -ENOMEM;
	}
	if (htab_init(&t->by_name, ITAB_MIN, node_name_hash, HTAB_BULK)) {
		htab_fini(&t->by_ino);
		free(t);
		return -ENOMEM;
	}
	t->ops = *ops;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void itab_free(struct itab *t)
{
	uint64_t pos = 0;
	uintptr_t it;

	if (!t)
		return;
	while ((it = htab_walk(&t->by_ino, &pos))) {
		struct node *n = (struct node *)it;

		if (n->payload)
			t->ops.drop(n->payload);
		free(n->name);
		free(n);
	}
	htab_fini(&t->by_ino);
	htab_fini(&t->by_name);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct node *node_by_ino(struct itab *t, uint64_t ino)
{
	return (struct node *)htab_find(&t->by_ino, ino_hash(ino), node_is_ino, &ino);
}

/* Room in by_name must have been reserved (or freed by name_unlink). */
static void name_link(struct itab *t, struct node *n)
{
	if (!n->name)
		return;
	n->nhash = (uint32_t)name_hash(n->parent, n->name);
	htab_place(&t->by_name, (uintptr_t)n, n->nhash);
}

static void name_unlink(struct itab *t, struct node *n)
{
	if (n->name)
		htab_del(&t->by_name, (uintptr_t)n);
}

static void node_set_name(struct itab *t, struct node *n, uint64_t parent,
			  const char *name)
{
	char *copy;

	if (n->name && n->parent == parent && strcmp(n->name, name) == 0)
		return;
	if (!n->name && htab_reserve(&t->by_name))
		return;	/* no name: only bookkeeping suffers */
	copy = strdup(name);
	if (!copy)
		return;	/* keep the old name: only bookkeeping suffers */
	name_unlink(t, n);
	free(n->name);
	n->name = copy;
	n->parent = parent;
	name_link(t, n);
}

/* A new node for ino, in by_ino; NULL if out of memory. */
static struct node *node_add(struct itab *t, uint64_t ino)
{
	struct node *n;

	if (htab_reserve(&t->by_ino))
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->ino = ino;
	htab_place(&t->by_ino, (uintptr_t)n, ino_hash(ino));
	return n;
}

void itab_remember(struct itab *t, uint64_t ino, uint64_t parent, const char *name)
{
	struct node *n;

	if (ino == ROOT_INO)
		return;
	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (!n)
		n = node_add(t, ino);
	if (n) {
		n->nlookup++;
		node_set_name(t, n, parent, name);
	}
	pthread_mutex_unlock(&t->lock);
}

void itab_forget(struct itab *t, uint64_t ino, uint64_t count)
{
	struct node *n;
	void *p;

	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (n && n->nlookup > count) {
		n->nlookup -= count;
		n = NULL;
	}
	if (!n) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	htab_del(&t->by_ino, (uintptr_t)n);
	name_unlink(t, n);
	p = n->payload;
	pthread_mutex_unlock(&t->lock);
	free(n->name);
	free(n);
	if (p)
		t->ops.drop(p);
}

int itab_name(struct itab *t, uint64_t ino, uint64_t *parent, char *name, size_t len)
{
	struct node *n;
	int rc = -ENOENT;

	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (n && n->name && strlen(n->name) < len) {
		*parent = n->parent;
		memcpy(name, n->name, strlen(n->name) + 1);
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void *itab_payload(struct itab *t, uint64_t ino)
{
	struct node *n;
	void *p = NULL;

	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (n && n->payload) {
		p = n->payload;
		t->ops.hold(p);
	}
	pthread_mutex_unlock(&t->lock);
	return p;
}

void itab_link(struct itab *t, uint64_t ino, void *obj)
{
	struct node *n;
	void *old = NULL;

	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (n && n->payload != obj) {
		old = n->payload;
		n->payload = obj;
		t->ops.hold(obj);
	}
	pthread_mutex_unlock(&t->lock);
	if (old)
		t->ops.drop(old);
}

void itab_set_hint(struct itab *t, uint64_t ino, int hint)
{
	struct node *n;

	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (n)
		n->hint = hint;
	pthread_mutex_unlock(&t->lock);
}

int itab_get_hint(struct itab *t, uint64_t ino)
{
	struct node *n;
	int hint = 0;

	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (n)
		hint = n->hint;
	pthread_mutex_unlock(&t->lock);
	return hint;
}

/* Every node last seen under (op, on) is now under (np, nn). */
void itab_rename(struct itab *t, uint64_t op, const char *on, uint64_t np, const char *nn)
{
	struct node *n, *next, *moved = NULL;
	struct htab_probe pr;
	uintptr_t it;

	pthread_mutex_lock(&t->lock);
	/* Collected first: the table may not change during a probe. */
	for (it = htab_probe(&t->by_name, (uint32_t)name_hash(op, on), &pr); it;
	     it = htab_more(&pr)) {
		n = (struct node *)it;
		if (n->parent == op && strcmp(n->name, on) == 0) {
			n->moved = moved;
			moved = n;
		}
	}
	for (n = moved; n; n = next) {
		char *copy = strdup(nn);

		next = n->moved;
		n->moved = NULL;
		name_unlink(t, n);
		if (copy) {
			free(n->name);
			n->name = copy;
			n->parent = np;
		}
		name_link(t, n);
	}
	pthread_mutex_unlock(&t->lock);
}

size_t itab_count(struct itab *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = (size_t)t->by_ino.count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

void itab_foreach(struct itab *t, void (*fn)(void *arg, uint64_t ino), void *arg)
{
	uint64_t pos = 0;
	uintptr_t it;

	pthread_mutex_lock(&t->lock);
	while ((it = htab_walk(&t->by_ino, &pos)))
		fn(arg, ((const struct node *)it)->ino);
	pthread_mutex_unlock(&t->lock);
}

