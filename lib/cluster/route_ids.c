// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route_ids.c: the tables of a routed client (route_priv.h):
 * the pools by slot (a slot per pool UUID, given as the pool is first
 * seen and never reused, so a file id's tag stays its pool's), connecting
 * a pool's client when it is first needed, and the directories by id
 * (the router's own ids, each mapped to its path and, lazily, to its id on
 * each pool) and by path (htab.h). Removing a directory walks them all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_priv.h"
#include "hash.h"
#include "route_priv.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- directories ---- */

int route_join(const char *dir, const char *name, char *buf, size_t len)
{
	int n = dir[0] ? snprintf(buf, len, "%s/%s", dir, name) : snprintf(buf, len, "%s", name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static uint32_t path_hash(const char *path)
{
	return (uint32_t)hash_xxh3(path, strlen(path));
}

static uint32_t dir_hash(uintptr_t item)
{
	return path_hash(((const struct route_dir *)item)->path);
}

static int dir_is(uintptr_t item, const void *key)
{
	return !strcmp(((const struct route_dir *)item)->path, key);
}

int route_dirs_init(struct route *r)
{
	if (htab_init(&r->by_path, 64, dir_hash, HTAB_BULK))
		return -ENOMEM;
	r->by_path_ok = 1;
	return 0;
}

void route_dirs_fini(struct route *r)
{
	size_t i;

	for (i = 0; i < r->ndir; i++)
		if (r->dir[i]) {
			free(r->dir[i]->path);
			free(r->dir[i]);
		}
	free(r->dir);
	if (r->by_path_ok)
		htab_fini(&r->by_path);
}

static struct route_dir *find_locked(struct route *r, const char *path)
{
	return (struct route_dir *)htab_find(&r->by_path, path_hash(path), dir_is, path);
}

static struct route_dir *dir_at(struct route *r, uint64_t id)
{
	if (!id || route_slot_of(id) >= 0 || id > r->ndir)
		return NULL;
	return r->dir[id - 1];
}

int route_dir_path(struct route *r, uint64_t id, char *buf, size_t len)
{
	struct route_dir *d;
	int rc = 0;

	if (route_slot_of(id) >= 0)
		return -ENOTDIR;
	pthread_mutex_lock(&r->lock);
	d = dir_at(r, id);
	if (!d)
		rc = -ENOENT;
	else if (strlen(d->path) >= len)
		rc = -ENAMETOOLONG;
	else
		strcpy(buf, d->path);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

static uint64_t intern_locked(struct route *r, const char *path)
{
	struct route_dir *d, **nd;

	d = find_locked(r, path);
	if (d)
		return d->id;
	if (htab_reserve(&r->by_path))
		return 0;
	if (r->ndir == r->dircap) {
		nd = realloc(r->dir, (r->dircap ? 2 * r->dircap : 64) * sizeof(*nd));
		if (!nd)
			return 0;
		r->dir = nd;
		r->dircap = r->dircap ? 2 * r->dircap : 64;
	}
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return 0;
	}
	r->dir[r->ndir++] = d;
	d->id = r->ndir;
	htab_place(&r->by_path, (uintptr_t)d, path_hash(path));
	return d->id;
}

/* the id of directory path if this client knows it, else 0 */
uint64_t route_dir_find(struct route *r, const char *path)
{
	struct route_dir *d;
	uint64_t id;

	pthread_mutex_lock(&r->lock);
	d = find_locked(r, path);
	id = d ? d->id : 0;
	pthread_mutex_unlock(&r->lock);
	return id;
}

uint64_t route_dir_intern(struct route *r, const char *path)
{
	uint64_t id;

	pthread_mutex_lock(&r->lock);
	id = intern_locked(r, path);
	pthread_mutex_unlock(&r->lock);
	return id;
}

/* path and every directory below it: their ids end (never reused) */
void route_dir_drop(struct route *r, const char *path)
{
	size_t i, n = strlen(path);
	struct route_dir *d;

	if (!n)
		return;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->ndir; i++) {
		d = r->dir[i];
		if (d && !strncmp(d->path, path, n) && (!d->path[n] || d->path[n] == '/')) {
			htab_del(&r->by_path, (uintptr_t)d);
			free(d->path);
			free(d);
			r->dir[i] = NULL;
		}
	}
	pthread_mutex_unlock(&r->lock);
}

uint64_t route_dir_local_get(struct route *r, uint64_t id, unsigned int slot)
{
	struct route_dir *d;
	uint64_t l;

	pthread_mutex_lock(&r->lock);
	d = dir_at(r, id);
	l = d ? d->local[slot] : 0;
	pthread_mutex_unlock(&r->lock);
	return l;
}

uint64_t route_dir_of_local(struct route *r, unsigned int slot, uint64_t local)
{
	uint64_t id = 0;
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->ndir && !id && local; i++)
		if (r->dir[i] && r->dir[i]->local[slot] == local)
			id = r->dir[i]->id;
	pthread_mutex_unlock(&r->lock);
	return id;
}

int route_slot_of_client(struct route *r, const struct maru_client *sub)
{
	unsigned int i;
	int slot = -1;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->npool && slot < 0; i++)
		if (r->pool[i].c == sub)
			slot = (int)i;
	pthread_mutex_unlock(&r->lock);
	return slot;
}

void route_dir_local_set(struct route *r, uint64_t id, unsigned int slot, uint64_t local)
{
	struct route_dir *d;

	pthread_mutex_lock(&r->lock);
	d = dir_at(r, id);
	if (d)
		d->local[slot] = local;
	pthread_mutex_unlock(&r->lock);
}

void route_dir_forget_slot(struct route *r, unsigned int slot)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->ndir; i++)
		if (r->dir[i])
			r->dir[i]->local[slot] = 0;
	pthread_mutex_unlock(&r->lock);
}

/* ---- pools ---- */

static int slot_locked(struct route *r, const struct maru_cluster_pool *p)
{
	unsigned int i;

	for (i = 0; i < r->npool; i++)
		if (!strcmp(r->pool[i].rec.uuid, p->uuid)) {
			r->pool[i].rec = *p;
			return (int)i;
		}
	if (r->npool == ROUTE_POOLS)
		return -ENOSPC;
	i = r->npool++;
	r->pool[i].r = r;
	r->pool[i].slot = i;
	r->pool[i].rec = *p;
	r->pool[i].state = p->draining ? ROUTE_DRAINING : ROUTE_ACTIVE;
	return (int)i;
}

static int by_slot(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

/*
 * The slots of the pools in the membership now (active or draining: both
 * serve their names), in slot order; pools no longer there are GONE.
 */
int route_members(struct route *r, unsigned int *slots, unsigned int max)
{
	struct maru_cluster_pool p[ROUTE_POOLS];
	int n = maru_cluster_pools(r->cl, p, ROUTE_POOLS), s;
	unsigned int i, k = 0, seen[ROUTE_POOLS] = { 0 };

	if (n > ROUTE_POOLS)
		n = ROUTE_POOLS;
	atomic_store(&r->members_ms, now_ms());
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < (unsigned int)n; i++) {
		s = slot_locked(r, &p[i]);
		if (s < 0)
			continue;
		if (r->pool[s].state == ROUTE_GONE)
			r->pool[s].back_s = (int64_t)time(NULL);
		r->pool[s].state = p[i].draining ? ROUTE_DRAINING : ROUTE_ACTIVE;
		seen[s] = 1;
		if (k < max)
			slots[k++] = (unsigned int)s;
	}
	for (i = 0; i < r->npool; i++)
		if (!seen[i])
			r->pool[i].state = ROUTE_GONE;
	pthread_mutex_unlock(&r->lock);
	if (k)
		qsort(slots, k, sizeof(*slots), by_slot);
	return (int)k;
}

/* The slots of path's owner and of where it was placed before (may be equal). */
int route_owner(struct route *r, const char *path, int *owner, int *prev)
{
	struct maru_cluster_pool o, p;
	int rc = maru_cluster_owner(r->cl, path, &o, &p);

	if (rc)
		return rc;
	pthread_mutex_lock(&r->lock);
	*owner = slot_locked(r, &o);
	*prev = slot_locked(r, &p);
	pthread_mutex_unlock(&r->lock);
	if (*owner < 0)
		return *owner;
	if (*prev < 0)
		*prev = *owner;
	return 0;
}

/* Is rc the error of a pool out of reach? */
int route_unreachable(int rc)
{
	switch (-rc) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ENOTCONN:
	case EPIPE:
		return 1;
	default:
		return 0;
	}
}

/*
 * What a call to the pool in slot returned: an error of a pool out of
 * reach marks it so for ROUTE_AWAY_MS, for the calls that may skip it.
 */
void route_pool_heard(struct route *r, int slot, int rc)
{
	if (route_unreachable(rc) && slot >= 0 && slot < ROUTE_POOLS)
		atomic_store(&r->pool[slot].away_ms, now_ms() + ROUTE_AWAY_MS);
}

int route_pool_away(struct route *r, unsigned int slot)
{
	return slot < ROUTE_POOLS && now_ms() < atomic_load(&r->pool[slot].away_ms);
}

/*
 * A pool's marud restarted: its ids are stale, so are the directory ids
 * known there; the caller hears of a new generation of the whole client.
 */
static void on_generation(void *arg, uint64_t old_gen, uint64_t new_gen)
{
	struct route_pool *p = arg;
	struct route *r = p->r;
	struct maru_client *self = r->self;
	uint64_t g = atomic_fetch_add(&r->gen, 1);
	maru_generation_cb cb;
	void *cb_arg;

	(void)old_gen;
	(void)new_gen;
	route_dir_forget_slot(r, p->slot);
	pthread_mutex_lock(&self->lock);
	cb = self->gen_cb;
	cb_arg = self->gen_arg;
	pthread_mutex_unlock(&self->lock);
	if (cb)
		cb(cb_arg, g, g + 1);
}

/*
 * The generation changes that staled id: its pool client's for a file
 * (counted as that client takes the new session, before any reply of
 * the new marud), every pool's for a directory (its id per pool is
 * forgotten on each, as the callback runs).
 */
uint64_t route_epoch(struct maru_client *c, uint64_t id)
{
	struct route *r = c->route;
	int slot = route_slot_of(id);
	struct maru_client *sub;

	if (slot < 0 || slot >= ROUTE_POOLS)
		return atomic_load(&r->gen) - 1;
	/* set once, kept until the end */
	sub = __atomic_load_n(&r->pool[slot].c, __ATOMIC_ACQUIRE);
	return sub ? r->ops->epoch(sub) : 0;
}

static int connect_pool(struct route *r, struct route_pool *p, struct maru_client **out)
{
	struct maru_client_opts o = r->opts;
	struct maru_client *c;
	char name[32];
	int rc;

	o.uri = p->rec.uri;
	snprintf(name, sizeof(name), "%.24s#%u", r->name, p->slot);
	o.client_name = name;
	rc = r->ops->client_new(&o, &c);
	if (rc)
		return rc;
	c->up = r->self;
	c->slot = p->slot;
	maru_client_on_generation(c, on_generation, p);
	*out = c;
	return 0;
}

/*
 * The client of the pool in slot (connected now if it was not): 0, or
 * the error of connecting (-EHOSTUNREACH without trying within
 * ROUTE_RETRY_MS of a failure, so that a lost pool costs one timeout).
 */
int route_sub(struct route *r, unsigned int slot, struct maru_client **out)
{
	struct route_pool *p;
	struct maru_client *c;
	int rc = 0, gone;

	/* an id tagged with a slot this client never gave */
	if (slot >= ROUTE_POOLS || slot >= r->npool)
		return -ESTALE;
	p = &r->pool[slot];
	if (now_ms() > atomic_load(&r->members_ms) + ROUTE_MEMBERS_MS)
		route_members(r, NULL, 0);
	pthread_mutex_lock(&r->lock);
	c = p->c;
	gone = p->state == ROUTE_GONE;
	pthread_mutex_unlock(&r->lock);
	/* Gone as last read: read the membership now, as placement does (a
	 * pool back from a warm restart owns names again at once; answering
	 * from a state up to ROUTE_MEMBERS_MS old failed its creates). */
	if (gone) {
		route_members(r, NULL, 0);
		pthread_mutex_lock(&r->lock);
		gone = p->state == ROUTE_GONE;
		pthread_mutex_unlock(&r->lock);
	}
	/* a pool that left: its ids are stale, the VFS looks the name up again */
	if (gone)
		return -ESTALE;
	if (c) {
		*out = c;
		return 0;
	}
	pthread_mutex_lock(&r->connect_lock);
	pthread_mutex_lock(&r->lock);
	c = p->c;
	if (!c && now_ms() < p->retry_ms)
		rc = -EHOSTUNREACH;
	pthread_mutex_unlock(&r->lock);
	if (!c && !rc) {
		rc = connect_pool(r, p, &c);
		pthread_mutex_lock(&r->lock);
		if (rc)
			p->retry_ms = now_ms() + ROUTE_RETRY_MS;
		else
			__atomic_store_n(&p->c, c, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&r->connect_lock);
	if (!rc)
		*out = c;
	return rc;
}
