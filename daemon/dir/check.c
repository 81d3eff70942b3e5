/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/check.c: the directory's accounting read out: dir_stats(), a
 * snapshot of the counters, and dir_check(), which recounts every byte and
 * object from the records (the tables, the sessions, the LRU) and compares
 * the recount with the counters and with the allocator. It changes nothing.
 */
#include <errno.h>
#include <pthread.h>

#include "dir_priv.h"
#include "log.h"
#include "persist.h"

void dir_stats(struct dir *d, struct dir_stats *out)
{
	struct persist_stats ps;

	pthread_mutex_lock(&d->lock);
	dir_pins_expire(d);
	*out = d->st;
	out->pinned_bytes = d->pins.bytes;
	out->pins = d->pins.count;
	out->pin_expired = d->pins.expired;
	out->pin_refused = d->pins.refused;
	out->capacity = alloc_capacity(d->o.alloc);
	out->free = alloc_free_bytes(d->o.alloc);
	out->used = d->used;
	out->pending = d->pending;
	out->orphaned = d->orphaned;
	/* With eviction off nothing will be evicted: report none as available. */
	out->evictable = d->o.eviction == DIR_EVICT_NONE ? 0 : d->evictable;
	out->names = d->nnames;
	out->dirs = d->ndirs;
	out->versions = d->nvers;
	out->leases = d->nleases;
	out->sessions = d->nsessions;
	out->event_seq = d->ev.seq;
	out->block = d->block;
	persist_stats(d->p, &ps);
	out->ckpt_sync = ps.sync;
	out->ckpt_bg = ps.bg;
	out->ckpt_failed = ps.failed;
	out->ckpt_hold_ns = ps.hold_ns;
	out->ckpt_running = (uint64_t)ps.running;
	pthread_mutex_unlock(&d->lock);
}

struct census {
	uint64_t used, pending, orphaned, evictable;
	uint64_t names, dirs, vers, leases, attached, links;
	const char *bad;
};

static uint64_t count_kids(const struct node *n)
{
	const struct rb_node *r;
	uint64_t c = 0;

	for (r = rb_first(&n->u.d.kids); r; r = rb_next(r))
		c++;
	return c;
}

static void census_dir(struct dir *d, const struct node *n, struct census *c)
{
	if (n->u.d.id != DIR_ROOT_ID) {
		c->dirs++;
		if (dir_node_found(d, n) != n)
			c->bad = "directory not found by its name";
	}
	if (count_kids(n) != n->u.d.nent)
		c->bad = "directory entry count differs from its children";
}

static void census_ver(struct dir *d, struct ver *v, struct census *c)
{
	uint64_t r = ver_reserved(v);
	struct node *n;

	c->vers++;
	c->leases += v->leases;
	if (v->state == DIR_ST_PENDING) {
		c->pending += r;
		c->attached += ver_pend(v)->attached;
		if (v->lru.prev)
			c->bad = "pending version on the LRU";
		return;
	}
	if (v->state == DIR_ST_ORPHANED) {
		c->orphaned += r;
		if (!v->leases || v->lru.prev)
			c->bad = "orphaned version without lease or on the LRU";
		return;
	}
	n = ver_node(v);
	c->used += r;
	c->names += 1u + v->links;
	c->links += v->links;
	if (!ver_regular(v) && r)
		c->bad = "symlink or special file holding pool bytes";
	if (v->pinned != (ttlpin_find(&d->pins, v->id) != NULL))
		c->bad = "a version's pin flag differs from the pin table";
	if (ver_evictable(v, n)) {
		c->evictable += r;
		if (!v->lru.prev)
			c->bad = "evictable version missing from the LRU";
	} else if (v->lru.prev) {
		c->bad = "leased or .tmp version on the LRU";
	}
}

static void census_sessions(struct dir *d, struct census *c)
{
	const struct dir_session *s;
	const struct rb_node *r;
	const struct pend *p;
	uint64_t leases = 0, nsess = 0, pb;

	for (s = d->sessions; s; s = s->next, nsess++) {
		uint64_t sl = 0;

		for (r = rb_first(&s->leases); r; r = rb_next(r)) {
			const struct lease *l = rb_entry(r, struct lease, rb);
			const struct ver *v = dir_id_ver(d, l->id);

			if (!v || v->leases < l->count || !l->count)
				c->bad = "lease record without a matching version";
			sl += l->count;
		}
		if (sl != s->nleases)
			c->bad = "session lease count differs from its records";
		leases += sl;
		for (pb = 0, p = s->pends; p; p = p->snext)
			pb += ver_reserved(&p->v);
		if (pb != s->pending_bytes)
			c->bad = "session pending bytes differ from its versions";
	}
	if (leases != c->leases)
		c->bad = "lease records differ from version lease counts";
	if (nsess != d->nsessions)
		c->bad = "session count differs";
}

static void census_lru(struct dir *d, struct census *c)
{
	const struct lru_link *l;
	uint64_t bytes = 0;

	for (l = d->lru.next; l != &d->lru; l = l->next)
		bytes += ver_reserved(container_of(l, struct ver, lru));
	if (bytes != c->evictable)
		c->bad = "LRU bytes differ from evictable versions";
}

/* Every link node names a published version; their count is the versions'. */
static void census_links(struct dir *d, struct census *c)
{
	const struct rb_node *r;
	uint64_t n = 0;

	for (r = rb_first(&d->links); r; r = rb_next(r), n++) {
		const struct node *l = container_of(r, struct node, u.l.rb);
		const struct ver *v = dir_id_ver(d, l->u.l.target);

		if (l->kind != NODE_LINK || !v || v->state != DIR_ST_PUBLISHED)
			c->bad = "link node without a published version";
	}
	if (n != c->links)
		c->bad = "link nodes differ from the versions' link counts";
}

static const char *check_locked(struct dir *d)
{
	struct census c = { 0 };
	uint64_t pos = 0, free_b = alloc_free_bytes(d->o.alloc);
	uintptr_t it;

	while ((it = htab_walk(&d->ids, &pos))) {
		if (it & TAG)
			census_dir(d, (const struct node *)(it & ~(uintptr_t)TAG), &c);
		else if (it)
			census_ver(d, (struct ver *)it, &c);
	}
	census_sessions(d, &c);
	census_lru(d, &c);
	census_links(d, &c);
	if (c.bad)
		return c.bad;
	if (c.used != d->used || c.pending != d->pending || c.orphaned != d->orphaned ||
	    c.evictable != d->evictable)
		return "byte counters differ from a recount";
	if (free_b + c.used + c.pending + c.orphaned != alloc_capacity(d->o.alloc))
		return "free + used + pending + orphaned != capacity";
	if (c.names != d->nnames || c.dirs != d->ndirs || c.vers != d->nvers ||
	    c.leases != d->nleases)
		return "object counters differ from a recount";
	if (d->names.count != c.names + c.dirs + c.attached)
		return "name table holds stray entries";
	if (d->ids.count != c.vers + c.dirs + 1)
		return "id table holds stray entries";
	return NULL;
}

int dir_check(struct dir *d)
{
	const char *bad;

	pthread_mutex_lock(&d->lock);
	bad = check_locked(d);
	pthread_mutex_unlock(&d->lock);
	if (!bad)
		return 0;
	log_warnx("dir: invariant broken: %s", bad);
	return -EUCLEAN;
}

