/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/inode.c: the tables of what this mount has told the kernel and what it
 * is writing. The inode table holds one node per inode the kernel knows
 * (lookup count, last known parent/name, a link to this mount's pending state
 * of that file), indexed by ino and by (parent, name). The pending table maps
 * (parent, name) to the one live pending version this mount writes there, so
 * every handle opening that name for write shares it.
 *
 * Everything here is under one mutex, tab_lock, a leaf with respect to
 * libmaru: no libmaru call is made with it held (the last pend_put closes the
 * file after dropping it). Callers may hold a pending's rw lock when they
 * take tab_lock, never the reverse.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "marufs.h"

#define PEND_BUCKETS 4096

struct itab {
	pthread_mutex_t lock;
	struct node **ino_b;	/* chained by ino_next */
	struct node **name_b;	/* chained by name_next */
	size_t nb;		/* buckets in each, power of two */
	size_t nodes;
	struct pending *pend_b[PEND_BUCKETS];
	size_t pends;
};

static struct itab *tab;

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
static uint64_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ULL;
	}
	return mix64(h ^ mix64(parent));
}

int itab_init(void)
{
	tab = calloc(1, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	tab->nb = 1024;
	tab->ino_b = calloc(tab->nb, sizeof(*tab->ino_b));
	tab->name_b = calloc(tab->nb, sizeof(*tab->name_b));
	if (!tab->ino_b || !tab->name_b) {
		free(tab->ino_b);
		free(tab->name_b);
		free(tab);
		tab = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&tab->lock, NULL);
	return 0;
}

static void pend_free(struct pending *p)
{
	if (p->file)
		maru_file_close(p->file);
	pthread_rwlock_destroy(&p->rw);
	free(p->name);
	free(p);
}

void itab_destroy(void)
{
	size_t i;

	if (!tab)
		return;
	for (i = 0; i < tab->nb; i++) {
		struct node *n = tab->ino_b[i], *next;

		for (; n; n = next) {
			next = n->ino_next;
			if (n->pend && --n->pend->refs == 0)
				pend_free(n->pend);
			free(n->name);
			free(n);
		}
	}
	free(tab->ino_b);
	free(tab->name_b);
	pthread_mutex_destroy(&tab->lock);
	free(tab);
	tab = NULL;
}

static struct node *node_by_ino(uint64_t ino)
{
	struct node *n = tab->ino_b[mix64(ino) & (tab->nb - 1)];

	while (n && n->ino != ino)
		n = n->ino_next;
	return n;
}

static void name_link(struct node *n)
{
	struct node **b;

	if (!n->name)
		return;
	b = &tab->name_b[name_hash(n->parent, n->name) & (tab->nb - 1)];
	n->name_next = *b;
	*b = n;
}

static void name_unlink(struct node *n)
{
	struct node **pp;

	if (!n->name)
		return;
	pp = &tab->name_b[name_hash(n->parent, n->name) & (tab->nb - 1)];
	while (*pp && *pp != n)
		pp = &(*pp)->name_next;
	if (*pp)
		*pp = n->name_next;
	n->name_next = NULL;
}

/* Double both indexes when the load passes one; on ENOMEM keep chaining. */
static void itab_grow(void)
{
	size_t nb = tab->nb * 2, i;
	struct node **ib = calloc(nb, sizeof(*ib));
	struct node **nbk = calloc(nb, sizeof(*nbk));

	if (!ib || !nbk) {
		free(ib);
		free(nbk);
		return;
	}
	for (i = 0; i < tab->nb; i++) {
		struct node *n = tab->ino_b[i], *next;

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
	free(tab->ino_b);
	free(tab->name_b);
	tab->ino_b = ib;
	tab->name_b = nbk;
	tab->nb = nb;
}

static void node_set_name(struct node *n, uint64_t parent, const char *name)
{
	char *copy;

	if (n->name && n->parent == parent && strcmp(n->name, name) == 0)
		return;
	copy = strdup(name);
	if (!copy)
		return;	/* keep the old name: only bookkeeping suffers */
	name_unlink(n);
	free(n->name);
	n->name = copy;
	n->parent = parent;
	name_link(n);
}

void itab_remember(uint64_t ino, uint64_t parent, const char *name)
{
	struct node *n;

	if (ino == FUSE_ROOT_ID || ino_is_virt(ino))
		return;
	pthread_mutex_lock(&tab->lock);
	n = node_by_ino(ino);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n)
			goto out;
		n->ino = ino;
		n->ino_next = tab->ino_b[mix64(ino) & (tab->nb - 1)];
		tab->ino_b[mix64(ino) & (tab->nb - 1)] = n;
		tab->nodes++;
	}
	n->nlookup++;
	node_set_name(n, parent, name);
	if (tab->nodes > tab->nb)
		itab_grow();
out:
	pthread_mutex_unlock(&tab->lock);
}

void itab_forget(uint64_t ino, uint64_t count)
{
	struct node **pp, *n;
	struct pending *p = NULL;

	pthread_mutex_lock(&tab->lock);
	pp = &tab->ino_b[mix64(ino) & (tab->nb - 1)];
	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->ino_next;
	n = *pp;
	if (n && n->nlookup > count) {
		n->nlookup -= count;
		n = NULL;
	}
	if (!n) {
		pthread_mutex_unlock(&tab->lock);
		return;
	}
	*pp = n->ino_next;
	name_unlink(n);
	tab->nodes--;
	p = n->pend;
	pthread_mutex_unlock(&tab->lock);
	free(n->name);
	free(n);
	if (p)
		pend_put(p);
}

int itab_name(uint64_t ino, uint64_t *parent, char *name, size_t len)
{
	struct node *n;
	int rc = -ENOENT;

	pthread_mutex_lock(&tab->lock);
	n = node_by_ino(ino);
	if (n && n->name && strlen(n->name) < len) {
		*parent = n->parent;
		memcpy(name, n->name, strlen(n->name) + 1);
		rc = 0;
	}
	pthread_mutex_unlock(&tab->lock);
	return rc;
}

struct pending *itab_pending(uint64_t ino)
{
	struct node *n;
	struct pending *p = NULL;

	pthread_mutex_lock(&tab->lock);
	n = node_by_ino(ino);
	if (n && n->pend) {
		p = n->pend;
		p->refs++;
	}
	pthread_mutex_unlock(&tab->lock);
	return p;
}

void itab_link_pending(uint64_t ino, struct pending *p)
{
	struct node *n;
	struct pending *old = NULL;

	pthread_mutex_lock(&tab->lock);
	n = node_by_ino(ino);
	if (n && n->pend != p) {
		old = n->pend;
		n->pend = p;
		p->refs++;
	}
	pthread_mutex_unlock(&tab->lock);
	if (old)
		pend_put(old);
}

void itab_set_hint(uint64_t ino, int hint)
{
	struct node *n;

	pthread_mutex_lock(&tab->lock);
	n = node_by_ino(ino);
	if (n)
		n->hint = hint;
	pthread_mutex_unlock(&tab->lock);
}

int itab_get_hint(uint64_t ino)
{
	struct node *n;
	int hint = 0;

	pthread_mutex_lock(&tab->lock);
	n = node_by_ino(ino);
	if (n)
		hint = n->hint;
	pthread_mutex_unlock(&tab->lock);
	return hint;
}

/* Every node last seen under (op, on) is now under (np, nn). */
void itab_rename(uint64_t op, const char *on, uint64_t np, const char *nn)
{
	struct node *n, *next, *moved = NULL;

	pthread_mutex_lock(&tab->lock);
	n = tab->name_b[name_hash(op, on) & (tab->nb - 1)];
	for (; n; n = next) {
		next = n->name_next;
		if (n->parent == op && strcmp(n->name, on) == 0) {
			name_unlink(n);
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
		name_link(n);
	}
	pthread_mutex_unlock(&tab->lock);
}

size_t itab_count(void)
{
	size_t n;

	pthread_mutex_lock(&tab->lock);
	n = tab->nodes;
	pthread_mutex_unlock(&tab->lock);
	return n;
}

void itab_foreach(void (*fn)(void *arg, uint64_t ino), void *arg)
{
	size_t i;

	pthread_mutex_lock(&tab->lock);
	for (i = 0; i < tab->nb; i++) {
		struct node *n;

		for (n = tab->ino_b[i]; n; n = n->ino_next)
			fn(arg, n->ino);
	}
	pthread_mutex_unlock(&tab->lock);
}

/* ---- pending table ---- */

static struct pending **pend_bucket(uint64_t parent, const char *name)
{
	return &tab->pend_b[name_hash(parent, name) & (PEND_BUCKETS - 1)];
}

static struct pending *pend_lookup_locked(uint64_t parent, const char *name)
{
	struct pending *p = *pend_bucket(parent, name);

	while (p && !(p->parent == parent && strcmp(p->name, name) == 0))
		p = p->hnext;
	return p;
}

static void pend_unlink_locked(struct pending *p)
{
	struct pending **pp;

	if (!p->in_table)
		return;
	pp = pend_bucket(p->parent, p->name);
	while (*pp && *pp != p)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = p->hnext;
	p->hnext = NULL;
	p->in_table = 0;
	tab->pends--;
}

struct pending *pend_find(uint64_t parent, const char *name)
{
	struct pending *p;

	pthread_mutex_lock(&tab->lock);
	p = pend_lookup_locked(parent, name);
	if (p && pend_live(p))
		p->refs++;
	else
		p = NULL;
	pthread_mutex_unlock(&tab->lock);
	return p;
}

struct pending *pend_new(struct maru_file *f, uint64_t parent, const char *name,
			 uint64_t src_ino)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->name = name ? strdup(name) : NULL;
	if (name && !p->name) {
		free(p);
		return NULL;
	}
	pthread_rwlock_init(&p->rw, NULL);
	p->file = f;
	p->ino = maru_file_ino(f);
	p->src_ino = src_ino;
	p->parent = parent;
	p->epoch = mfs_epoch();
	p->state = PEND_PENDING;
	p->refs = 1;
	return p;
}

int pend_insert(struct pending *p, struct pending **out)
{
	struct pending *cur;

	*out = p;
	if (!p->name)
		return 0;
	pthread_mutex_lock(&tab->lock);
	cur = pend_lookup_locked(p->parent, p->name);
	if (cur && pend_live(cur)) {
		cur->refs++;
		*out = cur;
		pthread_mutex_unlock(&tab->lock);
		return 1;
	}
	if (cur)
		pend_unlink_locked(cur);	/* stale: a newer one takes the name */
	p->hnext = *pend_bucket(p->parent, p->name);
	*pend_bucket(p->parent, p->name) = p;
	p->in_table = 1;
	tab->pends++;
	pthread_mutex_unlock(&tab->lock);
	return 0;
}

void pend_get(struct pending *p)
{
	pthread_mutex_lock(&tab->lock);
	p->refs++;
	pthread_mutex_unlock(&tab->lock);
}

void pend_put(struct pending *p)
{
	int last;

	pthread_mutex_lock(&tab->lock);
	last = --p->refs == 0;
	if (last)
		pend_unlink_locked(p);
	pthread_mutex_unlock(&tab->lock);
	if (last)
		pend_free(p);
}

void pend_unregister(struct pending *p)
{
	pthread_mutex_lock(&tab->lock);
	pend_unlink_locked(p);
	pthread_mutex_unlock(&tab->lock);
}

void pend_rename(uint64_t op, const char *on, uint64_t np, const char *nn)
{
	struct pending *p;
	char *copy = strdup(nn);

	if (!copy)
		return;
	pthread_mutex_lock(&tab->lock);
	p = pend_lookup_locked(op, on);
	if (p) {
		pend_unlink_locked(p);
		free(p->name);
		p->name = copy;
		copy = NULL;
		p->parent = np;
		p->hnext = *pend_bucket(np, nn);
		*pend_bucket(np, nn) = p;
		p->in_table = 1;
		tab->pends++;
	}
	pthread_mutex_unlock(&tab->lock);
	free(copy);
}

void pend_detach_name(uint64_t parent, const char *name)
{
	struct pending *p;

	pthread_mutex_lock(&tab->lock);
	p = pend_lookup_locked(parent, name);
	if (p) {
		__atomic_store_n(&p->unlinked, 1, __ATOMIC_RELEASE);
		pend_unlink_locked(p);
	}
	pthread_mutex_unlock(&tab->lock);
}

size_t pend_count(void)
{
	size_t n;

	pthread_mutex_lock(&tab->lock);
	n = tab->pends;
	pthread_mutex_unlock(&tab->lock);
	return n;
}

int pend_where(struct pending *p, uint64_t *parent, char *name, size_t len)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&tab->lock);
	if (p->name && strlen(p->name) < len) {
		*parent = p->parent;
		memcpy(name, p->name, strlen(p->name) + 1);
		rc = 0;
	}
	pthread_mutex_unlock(&tab->lock);
	return rc;
}

void pend_attach(struct pending *p, int writer, int *h_active)
{
	pthread_mutex_lock(&tab->lock);
	p->refs++;
	if (writer) {
		p->writers++;
		p->active++;
		*h_active = 1;
	} else {
		p->readers++;
		*h_active = 0;
	}
	pthread_mutex_unlock(&tab->lock);
}

int pend_detach(struct pending *p, int writer, int *h_active, int *writers_left)
{
	int left;

	pthread_mutex_lock(&tab->lock);
	if (writer) {
		p->writers--;
		if (*h_active)
			p->active--;
		*h_active = 0;
	} else {
		p->readers--;
	}
	*writers_left = p->writers;
	left = p->writers + p->readers;
	pthread_mutex_unlock(&tab->lock);
	return left;
}

int pend_set_active(struct pending *p, int *h_active, int on)
{
	int active;

	pthread_mutex_lock(&tab->lock);
	if (on && !*h_active)
		p->active++;
	else if (!on && *h_active)
		p->active--;
	*h_active = on;
	active = p->active;
	pthread_mutex_unlock(&tab->lock);
	return active;
}

void pend_counts(struct pending *p, int *writers, int *active)
{
	pthread_mutex_lock(&tab->lock);
	*writers = p->writers;
	*active = p->active;
	pthread_mutex_unlock(&tab->lock);
}

int pend_users(struct pending *p)
{
	int n;

	pthread_mutex_lock(&tab->lock);
	n = p->writers + p->readers;
	pthread_mutex_unlock(&tab->lock);
	return n;
}
