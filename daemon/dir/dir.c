/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/dir.c: the directory object and its sessions: dir_new(),
 * dir_destroy(), dir_session_new(), dir_session_end(), and the scratch
 * directories `marud -n` restores into (dir_scratch, a table handed to
 * persist_check so daemon/persist/ needs no dir/ name). The other files of
 * daemon/dir/ own one concern each (see dir_priv.h for the map and the
 * direction of calls); this one owns the lock.
 *
 * Locking: d->lock is the only lock and guards every record, table, counter
 * and the event ring. Every public dir_* call takes it once and returns
 * without it; nothing under it blocks on I/O, and nothing outside
 * daemon/dir/ is called with it held except the copy callback from the
 * plain (non-*_begin) calls. Two condition variables wait on it, both on
 * CLOCK_MONOTONIC (cond_init_mono): d->cond wakes event waiters
 * (event.c), d->fill_cond wakes calls waiting for a pending version's
 * out-of-lock fill to end (fill.c, version.c). No lock of marud is taken
 * while d->lock is held; callers hold none of theirs when calling in
 * (session.c calls dir_session_end() with no lock held).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dir_priv.h"
#include "persist.h"
#include "recover.h"

static int dir_conds_init(struct dir *d)
{
	if (cond_init_mono(&d->cond))
		return -ENOMEM;
	if (cond_init_mono(&d->fill_cond)) {
		pthread_cond_destroy(&d->cond);
		return -ENOMEM;
	}
	return 0;
}

int dir_new(const struct dir_opts *opts, struct dir **out)
{
	struct dir *d;

	if (!opts || !opts->alloc || !opts->copy || !out)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->o = *opts;
	d->block = alloc_block(opts->alloc);
	d->ev.max = opts->event_ring ? opts->event_ring : EVENT_RING_DEFAULT;
	d->lru.prev = d->lru.next = &d->lru;
	d->next_id = 2;
	d->next_cookie = 1;
	d->next_sid = 1;
	ttlpin_init(&d->pins, opts->pin_max_bytes, opts->pin_max_seconds);
	if (dir_index_init(d))
		goto out_free;
	d->root = dir_root_new();
	if (!d->root)
		goto out_index;
	dir_id_place_dir(d, d->root);
	if (dir_conds_init(d))
		goto out_root;
	pthread_mutex_init(&d->lock, NULL);
	*out = d;
	return 0;

out_root:
	free(d->root);
out_index:
	dir_index_fini(d);
out_free:
	free(d);
	return -ENOMEM;
}

void dir_destroy(struct dir *d)
{
	struct dir_session *s, *sn;
	uint64_t pos = 0;
	uintptr_t it;

	if (!d)
		return;
	for (s = d->sessions; s; s = sn) {
		sn = s->next;
		dir_lease_free_all(s);
		free(s);
	}
	while ((it = htab_walk(&d->ids, &pos)))
		dir_free_item(d, it);
	dir_link_fini(d);
	ttlpin_fini(&d->pins);
	dir_index_fini(d);
	dir_ev_fini(d);
	persist_stop(d->p);	/* its thread walks d: gone before d */
	pthread_cond_destroy(&d->fill_cond);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* ---- sessions ---- */

int dir_session_new(struct dir *d, struct dir_session **out)
{
	struct dir_session *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	s->id = d->next_sid++;
	s->next = d->sessions;
	if (d->sessions)
		d->sessions->prev = s;
	d->sessions = s;
	d->nsessions++;
	pthread_mutex_unlock(&d->lock);
	*out = s;
	return 0;
}

static int session_filling(const struct dir_session *s)
{
	const struct pend *p;

	for (p = s->pends; p; p = p->snext)
		if (p->filling)
			return 1;
	return 0;
}

void dir_session_end(struct dir *d, struct dir_session *s)
{
	struct rb_node *r;

	if (!s)
		return;
	pthread_mutex_lock(&d->lock);
	/* A fill in flight holds a pin lease and writes a pending: let it end. */
	while (session_filling(s))
		pthread_cond_wait(&d->fill_cond, &d->lock);
	while ((r = rb_first(&s->leases)) != NULL) {
		struct lease *l = rb_entry(r, struct lease, rb);

		dir_lease_drop(d, s, l, l->count);
	}
	while (s->pends)
		dir_pend_abandon(d, s->pends);
	if (s->prev)
		s->prev->next = s->next;
	else
		d->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	d->nsessions--;
	pthread_mutex_unlock(&d->lock);
	free(s);
}

uint64_t dir_session_id(const struct dir_session *s)
{
	return s->id;
}

/* ---- the scratch directory of `marud -n` (persist_check) ---- */

struct scratch {
	struct alloc *a;
	struct dir *d;
};

static void no_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		    const struct extent_list *src, uint64_t src_off, uint64_t len)
{
}

static void scratch_free(void *h)
{
	struct scratch *s = h;

	dir_destroy(s->d);
	alloc_destroy(s->a);
	free(s);
}

static int scratch_new(uint64_t data_off, uint64_t data_len, uint64_t align,
		       struct persist_owner *own, void **h)
{
	struct dir_opts o = { .copy = no_copy };
	struct scratch *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	rc = alloc_new(data_off, data_len, 4096, align, &s->a);
	o.alloc = s->a;
	if (!rc)
		rc = dir_new(&o, &s->d);
	if (rc) {
		alloc_destroy(s->a);
		free(s);
		return rc;
	}
	dir_persist_owner(s->d, own);
	*h = s;
	return 0;
}

static int scratch_check(void *h)
{
	return dir_check(((struct scratch *)h)->d);
}

const struct persist_scratch dir_scratch = {
	.scratch_open = scratch_new,
	.scratch_check = scratch_check,
	.scratch_close = scratch_free,
};
