/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/inode.c: the table of what this mount has told the kernel: one node per
 * inode the kernel knows (lookup count, last known parent/name, the
 * user.maru.hint, one payload object), indexed by ino and by (parent, name).
 *
 * Lock: t->lock, a leaf. No libmaru call and no payload drop is made with
 * it held; a payload hold (an atomic increment) may be. Callers may hold a
 * pending's rw lock or the pending table's lock when they call in here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inode.h"

#define ROOT_INO 1	/* FUSE_ROOT_ID: never counted, never forgotten */

struct node {
	uint64_t ino;
	uint64_t parent;
	char *name;
	uint64_t nlookup;
	void *payload;		/* held; pending.c's struct pending */
	int hint;		/* last user.maru.hint + 1, 0 = none */
	struct node *ino_next, *name_next;
};

struct itab {
	pthread_mutex_t lock;
	struct node **ino_b;	/* chained by ino_next */
	struct node **name_b;	/* chained by name_next */
	size_t nb;		/* buckets in each, power of two */
	size_t nodes;
	struct itab_payload_ops ops;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* FNV-1a over the name, folded with the parent id. */
uint64_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ULL;
	}
	return mix64(h ^ mix64(parent));
}

int itab_new(const struct itab_payload_ops *ops, struct itab **out)
{
	struct itab *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->nb = 1024;
	t->ino_b = calloc(t->nb, sizeof(*t->ino_b));
	t->name_b = calloc(t->nb, sizeof(*t->name_b));
	if (!t->ino_b || !t->name_b) {
		free(t->ino_b);
		free(t->name_b);
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
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nb; i++) {
		struct node *n = t->ino_b[i], *next;

		for (; n; n = next) {
			next = n->ino_next;
			if (n->payload)
				t->ops.drop(n->payload);
			free(n->name);
			free(n);
		}
	}
	free(t->ino_b);
	free(t->name_b);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct node *node_by_ino(struct itab *t, uint64_t ino)
{
	struct node *n = t->ino_b[mix64(ino) & (t->nb - 1)];

	while (n && n->ino != ino)
		n = n->ino_next;
	return n;
}

static void name_link(struct itab *t, struct node *n)
{
	struct node **b;

	if (!n->name)
		return;
	b = &t->name_b[name_hash(n->parent, n->name) & (t->nb - 1)];
	n->name_next = *b;
	*b = n;
}

static void name_unlink(struct itab *t, struct node *n)
{
	struct node **pp;

	if (!n->name)
		return;
	pp = &t->name_b[name_hash(n->parent, n->name) & (t->nb - 1)];
	while (*pp && *pp != n)
		pp = &(*pp)->name_next;
	if (*pp)
		*pp = n->name_next;
	n->name_next = NULL;
}

/* Double both indexes when the load passes one; on ENOMEM keep chaining. */
static void itab_grow(struct itab *t)
{
	size_t nb = t->nb * 2, i;
	struct node **ib = calloc(nb, sizeof(*ib));
	struct node **nbk = calloc(nb, sizeof(*nbk));

	if (!ib || !nbk) {
		free(ib);
		free(nbk);
		return;
	}
	for (i = 0; i < t->nb; i++) {
		struct node *n = t->ino_b[i], *next;

		for (; n; n = next) {
			next = n->ino_next;
			n->ino_next = ib[mix64(n->ino) & (nb - 1)];
			ib[mix64(n->ino) & (nb - 1)] = n;
			if (n->name) {
				size_t h = name_hash(n->parent, n->name) & (nb - 1);

				n->name_next = nbk[h];
				nbk[h] = n;
			}
		}
	}
	free(t->ino_b);
	free(t->name_b);
	t->ino_b = ib;
	t->name_b = nbk;
	t->nb = nb;
}

static void node_set_name(struct itab *t, struct node *n, uint64_t parent,
			  const char *name)
{
	char *copy;

	if (n->name && n->parent == parent && strcmp(n->name, name) == 0)
		return;
	copy = strdup(name);
	if (!copy)
		return;	/* keep the old name: only bookkeeping suffers */
	name_unlink(t, n);
	free(n->name);
	n->name = copy;
	n->parent = parent;
	name_link(t, n);
}

void itab_remember(struct itab *t, uint64_t ino, uint64_t parent, const char *name)
{
	struct node *n;

	if (ino == ROOT_INO)
		return;
	pthread_mutex_lock(&t->lock);
	n = node_by_ino(t, ino);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n)
			goto out;
		n->ino = ino;
		n->ino_next = t->ino_b[mix64(ino) & (t->nb - 1)];
		t->ino_b[mix64(ino) & (t->nb - 1)] = n;
		t->nodes++;
	}
	n->nlookup++;
	node_set_name(t, n, parent, name);
	if (t->nodes > t->nb)
		itab_grow(t);
out:
	pthread_mutex_unlock(&t->lock);
}

void itab_forget(struct itab *t, uint64_t ino, uint64_t count)
{
	struct node **pp, *n;
	void *p;

	pthread_mutex_lock(&t->lock);
	pp = &t->ino_b[mix64(ino) & (t->nb - 1)];
	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->ino_next;
	n = *pp;
	if (n && n->nlookup > count) {
		n->nlookup -= count;
		n = NULL;
	}
	if (!n) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	*pp = n->ino_next;
	name_unlink(t, n);
	t->nodes--;
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

	pthread_mutex_lock(&t->lock);
	n = t->name_b[name_hash(op, on) & (t->nb - 1)];
	for (; n; n = next) {
		next = n->name_next;
		if (n->parent == op && strcmp(n->name, on) == 0) {
			name_unlink(t, n);
			n->name_next = moved;
			moved = n;
		}
	}
	for (n = moved; n; n = next) {
		char *copy = strdup(nn);

		next = n->name_next;
		n->name_next = NULL;
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
	n = t->nodes;
	pthread_mutex_unlock(&t->lock);
	return n;
}

void itab_foreach(struct itab *t, void (*fn)(void *arg, uint64_t ino), void *arg)
{
	size_t i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nb; i++) {
		struct node *n;

		for (n = t->ino_b[i]; n; n = n->ino_next)
			fn(arg, n->ino);
	}
	pthread_mutex_unlock(&t->lock);
}

