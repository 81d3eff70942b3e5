/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/index.c: the two lookup tables of a directory, over htab.c.
 * `names` maps (parent id, name) to bound nodes and to attached pending
 * versions (tag bit 1); `ids` maps ids to directories (tag bit 1) and
 * versions. It owns the keys and hashes of both and every lookup by name or
 * id; it changes no record. Called with d->lock held.
 */
#include <errno.h>
#include <string.h>

#include "dir_priv.h"
#include "hash.h"

static uint32_t name_hash(uint64_t parent, const char *name, size_t nlen)
{
	uint64_t h = hash_xxh3(name, nlen) ^ hash_mix64(parent);

	return (uint32_t)(h ^ (h >> 32));
}

void dir_nkey_set(struct nkey *k, uint64_t parent, const char *name, size_t nlen)
{
	k->parent = parent;
	k->name = name;
	k->nlen = nlen;
	k->hash = name_hash(parent, name, nlen);
}

/* A node keeps no hash (4 bytes a name): moving it rehashes its name. */
uint32_t dir_node_hash(const struct node *n)
{
	return name_hash(n->parent, n->name, n->nlen);
}

void dir_node_key(struct nkey *k, const struct node *n)
{
	dir_nkey_set(k, n->parent, n->name, n->nlen);
}

static uint32_t names_hash(uintptr_t it)
{
	if (it & TAG)
		return ((const struct pend *)(it & ~(uintptr_t)TAG))->hash;
	return dir_node_hash((const struct node *)it);
}

static uint64_t item_id(uintptr_t it)
{
	if (it & TAG)
		return ((const struct node *)(it & ~(uintptr_t)TAG))->u.d.id;
	return ((const struct ver *)it)->id;
}

static uint32_t id_hash(uint64_t id)
{
	return (uint32_t)hash_mix64(id);
}

static uint32_t ids_hash(uintptr_t it)
{
	return id_hash(item_id(it));
}

int dir_index_init(struct dir *d)
{
	if (htab_init(&d->names, HTAB_MIN, names_hash, HTAB_INCREMENTAL))
		return -ENOMEM;
	if (htab_init(&d->ids, HTAB_MIN, ids_hash, HTAB_INCREMENTAL)) {
		htab_fini(&d->names);
		return -ENOMEM;
	}
	return 0;
}

void dir_index_fini(struct dir *d)
{
	htab_fini(&d->ids);
	htab_fini(&d->names);
}

/* Room for one more name and one more id, before anything changes. */
int dir_index_reserve(struct dir *d)
{
	if (htab_reserve(&d->names) || htab_reserve(&d->ids))
		return -ENOMEM;
	return 0;
}

void dir_id_place_dir(struct dir *d, struct node *n)
{
	htab_place(&d->ids, (uintptr_t)n | TAG, id_hash(n->u.d.id));
}

void dir_id_place_ver(struct dir *d, struct ver *v)
{
	htab_place(&d->ids, (uintptr_t)v, id_hash(v->id));
}

uintptr_t dir_id_find(const struct dir *d, uint64_t id)
{
	struct htab_probe p;
	uintptr_t it;

	for (it = htab_probe(&d->ids, id_hash(id), &p); it; it = htab_more(&p))
		if (item_id(it) == id)
			return it;
	return 0;
}

struct ver *dir_id_ver(const struct dir *d, uint64_t id)
{
	uintptr_t it = dir_id_find(d, id);

	return it && !(it & TAG) ? (struct ver *)it : NULL;
}

struct node *dir_id_dir(const struct dir *d, uint64_t id)
{
	uintptr_t it = dir_id_find(d, id);

	return it & TAG ? (struct node *)(it & ~(uintptr_t)TAG) : NULL;
}

/* Directory by id: -ENOENT if unknown, -ENOTDIR if a file. */
int dir_get_dir(const struct dir *d, uint64_t id, struct node **out)
{
	uintptr_t it = dir_id_find(d, id);

	if (!it)
		return -ENOENT;
	if (!(it & TAG))
		return -ENOTDIR;
	*out = (struct node *)(it & ~(uintptr_t)TAG);
	return 0;
}

static int node_is(const struct node *n, const struct nkey *k)
{
	return n->parent == k->parent && n->nlen == k->nlen &&
	       !memcmp(n->name, k->name, k->nlen);
}

static int pend_is(const struct pend *p, const struct nkey *k)
{
	return p->hash == k->hash && p->parent == k->parent && p->nlen == k->nlen &&
	       !memcmp(p->name, k->name, k->nlen);
}

/* The bound node (file or directory) of a name. */
struct node *dir_name_find(const struct dir *d, const struct nkey *k)
{
	struct htab_probe p;
	uintptr_t it;

	for (it = htab_probe(&d->names, k->hash, &p); it; it = htab_more(&p))
		if (!(it & TAG) && node_is((const struct node *)it, k))
			return (struct node *)it;
	return NULL;
}

/* Is item it one of s's attached pending versions of k? */
static struct pend *item_pend(uintptr_t it, const struct dir_session *s,
			      const struct nkey *k)
{
	struct pend *p = (struct pend *)(it & ~(uintptr_t)TAG);

	if ((it & TAG) && p->owner == s && pend_is(p, k))
		return p;
	return NULL;
}

/* s's newest attached pending version of a name. */
struct pend *dir_pend_find(const struct dir *d, const struct dir_session *s,
		       const struct nkey *k)
{
	struct pend *best = NULL, *p;
	struct htab_probe pr;
	uintptr_t it;

	if (!s || !s->pends)
		return NULL;
	for (it = htab_probe(&d->names, k->hash, &pr); it; it = htab_more(&pr)) {
		p = item_pend(it, s, k);
		if (p && (!best || p->v.id > best->v.id))
			best = p;
	}
	return best;
}

/* How many of s's attached pending versions a name has. */
int dir_pends_of(const struct dir *d, const struct dir_session *s, const struct nkey *k)
{
	struct htab_probe pr;
	uintptr_t it;
	int n = 0;

	if (!s || !s->pends)
		return 0;
	for (it = htab_probe(&d->names, k->hash, &pr); it; it = htab_more(&pr))
		n += item_pend(it, s, k) != NULL;
	return n;
}

/* The node found by n's own name (the accounting check). */
struct node *dir_node_found(const struct dir *d, const struct node *n)
{
	struct nkey k;

	dir_node_key(&k, n);
	return dir_name_find(d, &k);
}

/* Validate name and resolve parent to a directory. */
int dir_name_key(struct dir *d, uint64_t parent, const char *name, size_t nlen,
	     struct nkey *k, struct node **pdir)
{
	int rc;

	if (!name)
		return -EINVAL;
	rc = proto_name_valid(name, nlen);
	if (rc)
		return rc;
	rc = dir_get_dir(d, parent, pdir);
	if (rc)
		return rc;
	dir_nkey_set(k, parent, name, nlen);
	return 0;
}
