/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/restore.c: rebuilding a directory from its journal at
 * start (persist_restore). The records of the active half are replayed in
 * log order (persist_journal_scan); each is decoded and checked (enc.c) and handed
 * to the owner's apply_item, which applies it to the namespace without
 * events and without writing anything (dir/replay.c says what each kind
 * means). A record that does not apply (its parent is gone, its extents
 * overlap live ones: only a damaged journal does that) is skipped and
 * counted. Ids resume above every id a record names. Last, every file's
 * bytes are hashed in pool memory; one whose XXH3 differs from the one
 * recorded at publish is dropped (drop_version) and logged, never served.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "log.h"
#include "persist_priv.h"

#define ROOT_ID 1ull	/* ids start above the root directory's */

struct restore {
	struct persist *p;
	struct persist_restore_stats *st;
	uint64_t max_id;
};

static void seen_id(struct restore *r, uint64_t id)
{
	if (id > r->max_id)
		r->max_id = id;
}

static int replay_one(struct restore *r, uint32_t type, const void *body, uint32_t blen)
{
	struct persist_item it;
	int rc;

	rc = persist_dec(type, body, blen, &it);
	if (rc)
		return rc;
	if (type == JR_IDS) {
		if (it.id)
			seen_id(r, it.id - 1);
		return 0;
	}
	if (type != JR_ATTR)
		seen_id(r, it.id);
	rc = persist_item_check(&it);
	if (rc)
		return rc;
	return r->p->own.ops->apply_item(r->p->own.dir, &it);
}

static int replay(void *arg, uint32_t type, const void *body, uint32_t blen)
{
	struct restore *r = arg;
	int rc = replay_one(r, type, body, blen);

	if (rc == -ENOMEM)
		return rc;
	if (rc && r->st->skipped++ < 10)
		log_warnx("recovery: a journal record (type %u) did not apply: %s", type,
			  strerror(-rc));
	return 0;
}

/* ---- checksums ---- */

static uint64_t file_hash(const struct persist_item *it, const uint8_t *base)
{
	uint64_t left = it->size, h;
	XXH3_state_t *st;
	uint32_t i;

	if (!it->size || (it->next && it->ext[0].len >= it->size))
		return XXH3_64bits(it->next ? base + it->ext[0].off : base, it->size);
	st = XXH3_createState();
	if (!st)
		return ~it->xxh3;	/* unverifiable reads as a mismatch */
	XXH3_64bits_reset(st);
	for (i = 0; i < it->next && left; i++) {
		uint64_t n = it->ext[i].len < left ? it->ext[i].len : left;

		XXH3_64bits_update(st, base + it->ext[i].off, n);
		left -= n;
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

struct verify {
	const uint8_t *base;
	struct persist_restore_stats *st;
	uint64_t *bad, nbad, cap;
};

/* A file whose bytes do not hash as published: logged, kept for the drop. */
static int verify_item(void *arg, const struct persist_item *it)
{
	struct verify *v = arg;
	uint64_t h, *nb;

	/* symlinks and special files have no bytes to check */
	if (it->type != JR_FILE)
		return 0;
	h = file_hash(it, v->base);
	if (h == it->xxh3)
		return 0;
	if (v->nbad == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 16;
		nb = realloc(v->bad, v->cap * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		v->bad = nb;
	}
	v->bad[v->nbad++] = it->id;
	log_warnx("recovery: dropping '%.*s' (ino %" PRIu64 ", in directory %" PRIu64
		  ", %" PRIu64 " bytes): its bytes hash to %016" PRIx64 ", published as %016"
		  PRIx64, (int)it->at.nlen, it->at.name, it->id, it->at.parent, it->size, h,
		  it->xxh3);
	v->st->bad_sum++;
	v->st->bad_sum_bytes += it->size;
	return 0;
}

static int verify_all(struct persist *p, const uint8_t *base, struct persist_restore_stats *st)
{
	struct verify v = { base, st, NULL, 0, 0 };
	uint64_t i;
	int rc;

	rc = p->own.ops->walk_items(p->own.dir, verify_item, &v);
	/* Dropping changes the tree: only after the walk. */
	for (i = 0; !rc && i < v.nbad; i++)
		p->own.ops->drop_version(p->own.dir, v.bad[i]);
	free(v.bad);
	return rc;
}

int persist_restore(struct persist *p, const uint8_t *pool_base, struct journal_scan *sc,
		    struct persist_restore_stats *st)
{
	struct restore r = { p, st, ROOT_ID };
	int rc;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(p->own.lock);
	rc = persist_journal_scan(p->j, replay, &r, sc);
	if (!rc)
		rc = verify_all(p, pool_base, st);
	p->own.ops->replayed(p->own.dir, r.max_id, st);
	p->id_mark = st->next_id;
	pthread_mutex_unlock(p->own.lock);
	return rc;
}
