/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/lease_cache.c: leases of small published files the caller closed
 * lately, kept for its next open of the same version, so that
 * open+read+close of a file just written or read costs marud neither an
 * OPEN nor a RELEASE (maru_lease_cache_*, libmaru(3)). A held lease keeps
 * its version's bytes, so the cache is bounded every way: files of at most
 * MARU_LEASE_CACHE_FILE_MAX bytes, at most opts.lease_cache of them, within
 * a byte budget (1/LC_POOL_SHARE of the pool, at most LC_BYTES_MAX), each
 * for opts.lease_cache_ms. The caller drops what it no longer wants (a
 * version whose name went); a lease of an older session or generation is
 * closed instead of handed out.
 *
 * Entries are found by ino in the shared table (lib/common/htab.h) and
 * leave oldest first through a list in age order.
 *
 * Lock: lease_cache.lock, a leaf. Leases are closed after it is dropped.
 */
#include <errno.h>
#include <stdlib.h>

#include "client_priv.h"
#include "hash.h"
#include "htab.h"
#include "lease_cache.h"
#include "route.h"

#define LC_SLOTS_MIN	256	/* the table starts so, and doubles */
#define LC_BYTES_MAX	(64ull << 20)
#define LC_POOL_SHARE	32
#define LC_TTL_MS	5000

struct lent {
	uint64_t ino, bytes, deadline;
	struct maru_file *f;
	struct lent *next;		/* a list of entries to close */
	struct lent *older, *newer;	/* age list */
};

struct lease_cache {
	pthread_mutex_t lock;
	struct htab by_ino;		/* struct lent */
	struct lent *oldest, *newest;
	unsigned int n;		/* read unlocked as a hint */
	unsigned int max;	/* opts.lease_cache */
	uint64_t ttl_ns, bytes;
};

static uint32_t ino_hash(uint64_t ino)
{
	return (uint32_t)hash_mix64(ino);
}

static uint32_t lent_hash(uintptr_t item)
{
	return ino_hash(((const struct lent *)item)->ino);
}

static int lent_is(uintptr_t item, const void *key)
{
	return ((const struct lent *)item)->ino == *(const uint64_t *)key;
}

int lease_cache_new(struct maru_client *c)
{
	struct lease_cache *lc;

	c->lc = NULL;
	if (!c->opts.lease_cache)
		return 0;
	lc = calloc(1, sizeof(*lc));
	if (!lc)
		return -ENOMEM;
	if (htab_init(&lc->by_ino, LC_SLOTS_MIN, lent_hash, HTAB_BULK)) {
		free(lc);
		return -ENOMEM;
	}
	pthread_mutex_init(&lc->lock, NULL);
	lc->max = c->opts.lease_cache;
	lc->ttl_ns = (uint64_t)(c->opts.lease_cache_ms ? c->opts.lease_cache_ms : LC_TTL_MS) *
		     1000000;
	c->lc = lc;
	return 0;
}

void lease_cache_free(struct maru_client *c)
{
	struct lease_cache *lc = c->lc;

	if (!lc)
		return;
	maru_lease_cache_clear(c);
	htab_fini(&lc->by_ino);
	pthread_mutex_destroy(&lc->lock);
	free(lc);
	c->lc = NULL;
}

/* Unhook e from the table and the age list; lock held. */
static void unhook_locked(struct lease_cache *lc, struct lent *e)
{
	htab_del(&lc->by_ino, (uintptr_t)e);
	if (e->older)
		e->older->newer = e->newer;
	else
		lc->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		lc->newest = e->older;
	__atomic_sub_fetch(&lc->n, 1, __ATOMIC_RELAXED);
	lc->bytes -= e->bytes;
	e->older = e->newer = NULL;
}

/* Move e to the caller's list of entries to close. */
static void evict_locked(struct lease_cache *lc, struct lent *e, struct lent **drop)
{
	unhook_locked(lc, e);
	e->next = *drop;
	*drop = e;
}

static void expire_locked(struct lease_cache *lc, uint64_t now, struct lent **drop)
{
	while (lc->oldest && lc->oldest->deadline <= now)
		evict_locked(lc, lc->oldest, drop);
}

static void close_all(struct lent *drop)
{
	struct lent *next;

	for (; drop; drop = next) {
		next = drop->next;
		maru_file_close(drop->f);
		free(drop);
	}
}

static struct lent *find_locked(struct lease_cache *lc, uint64_t ino)
{
	return (struct lent *)htab_find(&lc->by_ino, ino_hash(ino), lent_is, &ino);
}

/* The byte budget: a share of the pool, capped. */
static uint64_t budget(struct maru_client *c)
{
	uint64_t b;

	pthread_mutex_lock(&c->lock);
	b = c->s.pool_size / LC_POOL_SHARE;
	pthread_mutex_unlock(&c->lock);
	return b < LC_BYTES_MAX ? b : LC_BYTES_MAX;
}

/* Make room for bytes more (lock held); 0 when they can never fit. */
static int room_locked(struct lease_cache *lc, uint64_t bytes, uint64_t budget,
		       struct lent **drop)
{
	if (bytes > budget)
		return 0;
	while (lc->oldest && (lc->n >= lc->max || lc->bytes + bytes > budget))
		evict_locked(lc, lc->oldest, drop);
	return 1;
}

/* Keep e; 0, or -ENOMEM (the table cannot grow: e is not kept). */
static int link_locked(struct lease_cache *lc, struct lent *e)
{
	if (htab_reserve(&lc->by_ino))
		return -ENOMEM;
	htab_place(&lc->by_ino, (uintptr_t)e, ino_hash(e->ino));
	e->older = lc->newest;
	if (lc->newest)
		lc->newest->newer = e;
	else
		lc->oldest = e;
	lc->newest = e;
	__atomic_add_fetch(&lc->n, 1, __ATOMIC_RELAXED);
	lc->bytes += e->bytes;
	return 0;
}

/* A lease of this session of a file that fits: worth keeping. */
static int keepable(struct maru_file *f)
{
	struct maru_client *c = f->c;

	return c->lc && !maru_file_is_pending(f) &&
	       maru_file_size(f) <= MARU_LEASE_CACHE_FILE_MAX &&
	       maru_file_extents(f, NULL, 0) >= 0;
}

void maru_lease_cache_put(struct maru_file *f)
{
	struct lent *e = NULL, *drop = NULL, *old;
	struct lease_cache *lc;
	uint64_t now, b;

	if (!f)
		return;
	if (keepable(f))
		e = calloc(1, sizeof(*e));
	if (!e) {
		maru_file_close(f);
		return;
	}
	lc = f->c->lc;
	b = budget(f->c);
	now = mono_ns();
	/* a lease's size never changes */
	*e = (struct lent){ .ino = maru_file_ino(f), .bytes = maru_file_size(f), .f = f,
			    .deadline = now + lc->ttl_ns };
	pthread_mutex_lock(&lc->lock);
	expire_locked(lc, now, &drop);
	old = find_locked(lc, e->ino);
	if (old)
		evict_locked(lc, old, &drop);
	if (!room_locked(lc, e->bytes, b, &drop) || link_locked(lc, e) < 0) {
		e->next = drop;
		drop = e;
	}
	pthread_mutex_unlock(&lc->lock);
	close_all(drop);
}

int maru_lease_cache_take(struct maru_client *c, uint64_t ino, struct maru_file **out)
{
	struct lease_cache *lc = c ? c->lc : NULL;
	struct lent *e, *drop = NULL;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (c && c->route)
		return route_lease_cache(c, ROUTE_LC_TAKE, ino, out);
	if (!lc || !__atomic_load_n(&lc->n, __ATOMIC_RELAXED))
		return -ENOENT;
	pthread_mutex_lock(&lc->lock);
	expire_locked(lc, mono_ns(), &drop);
	e = find_locked(lc, ino);
	if (e)
		unhook_locked(lc, e);
	pthread_mutex_unlock(&lc->lock);
	close_all(drop);
	/* of the session alive now (one marud ended took the lease with it) */
	if (e && maru_file_extents(e->f, NULL, 0) >= 0)
		*out = e->f;
	else if (e)
		maru_file_close(e->f);
	free(e);
	return *out ? 0 : -ENOENT;
}

void maru_lease_cache_drop(struct maru_client *c, uint64_t ino)
{
	struct maru_file *f;

	if (c && c->route) {
		route_lease_cache(c, ROUTE_LC_DROP, ino, NULL);
		return;
	}
	if (maru_lease_cache_take(c, ino, &f) == 0)
		maru_file_close(f);
}

void maru_lease_cache_clear(struct maru_client *c)
{
	struct lease_cache *lc = c ? c->lc : NULL;
	struct lent *drop = NULL;

	if (c && c->route) {
		route_lease_cache(c, ROUTE_LC_CLEAR, 0, NULL);
		return;
	}
	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	while (lc->oldest)
		evict_locked(lc, lc->oldest, &drop);
	pthread_mutex_unlock(&lc->lock);
	close_all(drop);
}

void maru_lease_cache_expire(struct maru_client *c)
{
	struct lease_cache *lc = c ? c->lc : NULL;
	struct lent *drop = NULL;

	if (c && c->route) {
		route_lease_cache(c, ROUTE_LC_EXPIRE, 0, NULL);
		return;
	}
	if (!lc || !__atomic_load_n(&lc->n, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&lc->lock);
	expire_locked(lc, mono_ns(), &drop);
	pthread_mutex_unlock(&lc->lock);
	close_all(drop);
}

unsigned int maru_lease_cache_count(struct maru_client *c)
{
	struct lease_cache *lc = c ? c->lc : NULL;

	if (c && c->route)
		return (unsigned int)route_lease_cache(c, ROUTE_LC_COUNT, 0, NULL);
	return lc ? __atomic_load_n(&lc->n, __ATOMIC_RELAXED) : 0;
}
