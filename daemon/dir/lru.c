/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/lru.c: the LRU of evictable versions and eviction. A published
 * version is on the LRU iff it has no lease, no TTL pin and its name is not
 * ".tmp" (dir_lru_settle keeps that true), and d->evictable counts its
 * bytes. When the allocator is short, dir_get_bytes() first lets pins that
 * ran out go (dir_pins_expire: lazy, no timer thread), then evicts from the
 * head (least recently used), one O(1) unbind each, telling subscribers
 * with DEV_EVICT. A pinned version is never on the LRU, so eviction cannot
 * reach it, and bytes pinned are not counted evictable.
 * Called with d->lock held, except dir_touch() which takes it.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "dir_priv.h"

void dir_lru_del(struct dir *d, struct ver *v)
{
	if (!v->lru.prev)
		return;
	v->lru.prev->next = v->lru.next;
	v->lru.next->prev = v->lru.prev;
	v->lru.prev = v->lru.next = NULL;
	d->evictable -= ver_reserved(v);
}

static void lru_add_tail(struct dir *d, struct ver *v)
{
	v->lru.prev = d->lru.prev;
	v->lru.next = &d->lru;
	d->lru.prev->next = &v->lru;
	d->lru.prev = &v->lru;
	d->evictable += ver_reserved(v);
}

static void lru_add_head(struct dir *d, struct ver *v)
{
	v->lru.next = d->lru.next;
	v->lru.prev = &d->lru;
	d->lru.next->prev = &v->lru;
	d->lru.next = &v->lru;
	d->evictable += ver_reserved(v);
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

static void evict_one(struct dir *d)
{
	struct ver *v = container_of(d->lru.next, struct ver, lru);
	struct node *n = ver_node(v);
	uint64_t r = ver_reserved(v);

	/* Every name of the version goes with it. */
	if (v->links)
		dir_link_drop_all(d, v, DEV_EVICT);
	dir_ev_node(d, DEV_EVICT, v->id, n);
	dir_lru_del(d, v);
	dir_file_remove(d, n, NULL);
	d->st.evictions++;
	d->st.evicted_bytes += r;
}

/*
 * Append at least len bytes to l, evicting LRU versions when the pool is
 * short. l is a pending version's and grows call by call: alloc_grow()
 * keeps it mappable at the pool's alignment (and may pad it to a boundary). Refuses at once (evicting nothing) when even evicting everything
 * evictable could not make room. Each eviction is O(1) plus the allocator.
 */
int dir_get_bytes(struct dir *d, uint64_t len, struct extent_list *l)
{
	uint64_t need = round_up(len, d->block);
	int rc;

	if (alloc_free_bytes(d->o.alloc) < need) {
		dir_pins_expire(d);
		if (d->o.eviction == DIR_EVICT_NONE ||
		    alloc_free_bytes(d->o.alloc) + d->evictable < need) {
			d->st.enospc++;
			return -ENOSPC;
		}
		while (alloc_free_bytes(d->o.alloc) < need && d->lru.next != &d->lru)
			evict_one(d);
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
