/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/lru.c: the LRUs of evictable versions and eviction. A
 * published version is on an LRU iff it has no lease, no TTL pin and its
 * name is not ".tmp" (dir_lru_settle keeps that true): the LRU of the
 * tenant slot it is charged to (quota.c; slot 0: under no tenant root), and
 * d->evictable and the slot's evictable count its bytes. Two kinds of room
 * are made here, each by evicting from the head of an LRU (least recently
 * used), one O(1) unbind each, telling subscribers with DEV_EVICT:
 *  - quota room (dir_quota_room): a tenant over its quota loses its own
 *    oldest versions, never anyone else's;
 *  - pool room (dir_get_bytes): when the allocator is short, tenants over
 *    their quota first, then versions under no tenant, then the writer's
 *    own tenant's; a tenant within its quota is never evicted for another.
 * Before either evicts, pins that ran out go (dir_pins_expire: lazy, no
 * timer thread). A pinned version is never on an LRU, so eviction cannot
 * reach it, and bytes pinned are not counted evictable (they still count
 * as the tenant's used bytes).
 * Called with d->lock held, except dir_touch() which takes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <time.h>

#include "clock.h"
#include "dir_priv.h"
#include "log.h"

void dir_lru_del(struct dir *d, struct ver *v)
{
	if (!v->lru.prev)
		return;
	v->lru.prev->next = v->lru.next;
	v->lru.next->prev = v->lru.prev;
	v->lru.prev = v->lru.next = NULL;
	d->evictable -= ver_reserved(v);
	ver_tq(d, v)->evictable -= ver_reserved(v);
}

static void lru_add_tail(struct dir *d, struct ver *v)
{
	struct dir_tq *t = ver_tq(d, v);

	v->lru.prev = t->lru.prev;
	v->lru.next = &t->lru;
	t->lru.prev->next = &v->lru;
	t->lru.prev = &v->lru;
	d->evictable += ver_reserved(v);
	t->evictable += ver_reserved(v);
}

static void lru_add_head(struct dir *d, struct ver *v)
{
	struct dir_tq *t = ver_tq(d, v);

	v->lru.next = t->lru.next;
	v->lru.prev = &t->lru;
	t->lru.next->prev = &v->lru;
	t->lru.next = &v->lru;
	d->evictable += ver_reserved(v);
	t->evictable += ver_reserved(v);
}

/* Put a published version where it belongs: on the LRU iff ver_evictable. */
void dir_lru_settle(struct dir *d, struct node *n)
{
	struct ver *v = &n->u.v;
	int want = ver_evictable(v, n);

	if (want && !v->lru.prev)
		lru_add_tail(d, v);
	else if (!want && v->lru.prev)
		dir_lru_del(d, v);
}

static int lru_empty(const struct dir *d, uint32_t t)
{
	return d->tq[t].lru.next == &d->tq[t].lru;
}

/* Evict the least recently used version of slot t. */
static void evict_one(struct dir *d, uint32_t t)
{
	struct ver *v = container_of(d->tq[t].lru.next, struct ver, lru);
	struct node *n = ver_node(v);
	uint64_t r = ver_reserved(v), now;

	if (hist_on()) {
		now = now_ns();
		hist_observe_age(&d->evicted_age, now > v->mtime ? now - v->mtime : 0);
	}
	/* Every name of the version goes with it. */
	if (v->links)
		dir_link_drop_all(d, v, DEV_EVICT);
	dir_ev_node(d, DEV_EVICT, v->id, n);
	dir_lru_del(d, v);
	dir_file_remove(d, n, NULL);
	d->st.evictions++;
	d->st.evicted_bytes += r;
	d->tq[t].evictions++;
	d->tq[t].evicted_bytes += r;
}

static int over_quota(const struct dir_tq *q)
{
	return q->quota && q->used + q->pending > q->quota;
}

/* At most one line per tenant per 10 s; the next says how many it stood for. */
static void quota_refused(struct dir *d, uint32_t t, uint64_t got)
{
	struct dir_tq *q = &d->tq[t];
	uint64_t now = mono_ms();

	d->st.enospc++;
	q->enospc++;
	if (q->log_ms && now - q->log_ms < 10000) {
		q->log_quiet++;
		return;
	}
	log_warnx("quota: tenant %s: ENOSPC for %" PRIu64 " bytes: used %" PRIu64
		  " + pending %" PRIu64 " of quota %" PRIu64 " bytes, %" PRIu64
		  " of its own evictable (%" PRIu64 " more refusals since the last line)",
		  q->name, got, q->used, q->pending, q->quota, q->evictable, q->log_quiet);
	q->log_ms = now ? now : 1;
	q->log_quiet = 0;
}

int dir_quota_room(struct dir *d, uint32_t t, uint64_t got, int evict)
{
	struct dir_tq *q = &d->tq[t];

	if (!t || !q->quota || q->used + q->pending + got <= q->quota)
		return 0;
	if (!evict)
		return -ENOSPC;
	dir_pins_expire(d);
	/* Refused at once, evicting nothing, when even all of its own would not do. */
	if (d->o.eviction == DIR_EVICT_NONE ||
	    q->used - q->evictable + q->pending + got > q->quota) {
		quota_refused(d, t, got);
		return -ENOSPC;
	}
	while (q->used + q->pending + got > q->quota && !lru_empty(d, t))
		evict_one(d, t);
	return 0;
}

/* What pool pressure from slot t may evict (an upper bound for over-quota slots). */
static uint64_t pool_evictable(const struct dir *d, uint32_t t)
{
	uint64_t e = d->tq[0].evictable + (t ? d->tq[t].evictable : 0);
	uint32_t i;

	for (i = 1; i < DIR_TQ_SLOTS; i++)
		if (i != t && over_quota(&d->tq[i]))
			e += d->tq[i].evictable;
	return e;
}

static void evict_for_pool(struct dir *d, uint32_t t, uint64_t need)
{
	struct alloc *a = d->o.alloc;
	uint32_t i;

	for (i = 1; i < DIR_TQ_SLOTS && alloc_free_bytes(a) < need; i++)
		while (i != t && over_quota(&d->tq[i]) && alloc_free_bytes(a) < need &&
		       !lru_empty(d, i))
			evict_one(d, i);
	while (alloc_free_bytes(a) < need && !lru_empty(d, 0))
		evict_one(d, 0);
	while (t && alloc_free_bytes(a) < need && !lru_empty(d, t))
		evict_one(d, t);
}

const struct hist *dir_evicted_age(struct dir *d)
{
	return &d->evicted_age;
}

/*
 * Append at least len bytes to l, evicting when the pool is short (the
 * order above). l is a pending version's and grows call by call:
 * alloc_grow() keeps it mappable at the pool's alignment (and may pad it to
 * a boundary). Refuses at once (evicting nothing) when even evicting all
 * that slot t may evict could not make room. Each eviction is O(1) plus
 * the allocator.
 */
int dir_get_bytes(struct dir *d, uint32_t t, uint64_t len, struct extent_list *l, int evict)
{
	uint64_t need = round_up(len, d->block);
	int rc;

	if (!evict && alloc_free_bytes(d->o.alloc) < need)
		return -ENOSPC;
	if (alloc_free_bytes(d->o.alloc) < need) {
		dir_pins_expire(d);
		if (d->o.eviction == DIR_EVICT_NONE ||
		    alloc_free_bytes(d->o.alloc) + pool_evictable(d, t) < need) {
			d->st.enospc++;
			return -ENOSPC;
		}
		evict_for_pool(d, t, need);
	}
	rc = alloc_grow(d->o.alloc, len, l);
	if (rc == -ENOSPC)
		d->st.enospc++;
	return rc;
}

uint64_t dir_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void dir_pins_expire(struct dir *d)
{
	uint64_t now = dir_wall_ns(), id;
	struct ver *v;

	while ((id = ttlpin_expired(&d->pins, now))) {
		v = dir_id_ver(d, id);
		if (!v)
			continue;
		v->pinned = 0;
		if (v->state == DIR_ST_PUBLISHED && !v->lru.prev && ver_evictable(v, ver_node(v)))
			lru_add_head(d, v);
	}
}

/* v was used: move it to the LRU tail if it is on the LRU. */
void dir_lru_touch(struct dir *d, struct ver *v)
{
	/* Leased versions rejoin the LRU at its tail when released anyway. */
	if (v && v->lru.prev) {
		dir_lru_del(d, v);
		lru_add_tail(d, v);
	}
}

void dir_touch(struct dir *d, uint64_t ino)
{
	pthread_mutex_lock(&d->lock);
	dir_lru_touch(d, dir_id_ver(d, ino));
	pthread_mutex_unlock(&d->lock);
}
