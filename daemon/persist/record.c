/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/record.c: struct persist and the writing side of warm
 * restart. The directory (dir/record.c) hands each namespace change here
 * as a struct persist_item, under its lock, at the moment of the change;
 * this file appends its record (bodies from enc.c) and decides when a
 * checkpoint (ckpt.c) must come. A record that does not fit triggers a
 * checkpoint of the state after the change (which then needs no record;
 * a removal is recorded before it happens, so its record follows the
 * checkpoint into the new half). Changes that grow the state (publish,
 * mkdir, rename, link, symlink) first ask persist_room(), which
 * checkpoints early or answers -ENOSPC, so the state always fits a half
 * and no change is ever applied without being recorded. Ids handed out
 * are covered by JR_IDS marks, one per JOURNAL_ID_BATCH, so a restarted
 * marud never reuses an id a client may have seen.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failpoint.h"
#include "log.h"
#include "persist_priv.h"
#include "proto.h"

int persist_new(struct journal *j, const struct persist_owner *own, struct persist **out)
{
	struct persist *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->j = j;
	p->own = *own;
	pthread_mutex_lock(own->lock);
	p->id_mark = own->ops->id_next(own->dir);
	persist_ckpt_start(p);
	pthread_mutex_unlock(own->lock);
	*out = p;
	return 0;
}

void persist_stop(struct persist *p)
{
	if (p)
		persist_ckpt_fini(p);
}

void persist_free(struct persist *p)
{
	if (!p)
		return;
	persist_ckpt_fini(p);
	free(p->jb);
	free(p);
}

struct journal *persist_journal(const struct persist *p)
{
	return p ? p->j : NULL;
}

/*
 * Append; when the half is full, checkpoint. pre: the change is not applied
 * yet (removals are recorded before they happen), so the checkpoint still
 * holds the item and the record must follow it into the new half.
 */
static void jwrite(struct persist *p, uint32_t type, const void *body, uint32_t blen,
		   const char *op, int pre)
{
	char fp[48], before[64];
	int rc;

	snprintf(fp, sizeof(fp), "marud.journal.%s", op);
	snprintf(before, sizeof(before), "%s.before", fp);
	(void)FAILPOINT(before);
	rc = persist_journal_append(p->j, type, body, blen, fp);
	if (rc == -ENOSPC) {
		/* 1: a background checkpoint caught up, without this change */
		rc = persist_ckpt_now(p);
		if (rc == 1 || (!rc && pre))
			rc = persist_journal_append(p->j, type, body, blen, fp);
	}
	if (!rc)
		persist_ckpt_kick(p);
	else
		log_warnx("journal: %s not recorded (%s): a restart would not see it",
			  op, strerror(-rc));
}

void persist_write(struct persist *p, const struct persist_item *it, const char *op, int pre)
{
	uint8_t small[sizeof(struct jb_unname) + PROTO_NAME_MAX];
	uint32_t blen;
	uint8_t *b;

	if (!p)
		return;
	if (it->type == JR_REMOVE || it->type == JR_UNNAME)
		p->jremoved++;
	/* a record written before its change must outlive a checkpoint's use of p->jb */
	if (pre && persist_enc_len(it) <= sizeof(small)) {
		jwrite(p, it->type, small, persist_enc_to(it, small), op, pre);
		return;
	}
	b = persist_enc(p, it, &blen);
	if (b)
		jwrite(p, it->type, b, blen, op, pre);
	else
		log_warnx("journal: %s not recorded: out of memory", op);
}

/* Data bytes of a version durable before the record naming them (dax). */
void persist_write_file(struct persist *p, const struct persist_item *it, const char *op)
{
	uint64_t left = it->size;
	uint32_t i;

	if (!p)
		return;
	for (i = 0; i < it->next && left; i++) {
		uint64_t n = it->ext[i].len < left ? it->ext[i].len : left;

		persist_journal_flush(p->j, it->ext[i].off, n);
		left -= n;
	}
	persist_write(p, it, op, 0);
}

static uint32_t room_body_len(uint32_t type, size_t nlen, uint32_t next)
{
	if (type == JR_FILE)
		return (uint32_t)(sizeof(struct jb_file) + next * sizeof(struct extent) + nlen);
	if (type == JR_DIR)
		return (uint32_t)(sizeof(struct jb_dir) + nlen);
	if (type == JR_SPECIAL)		/* nlen: name and target */
		return (uint32_t)(sizeof(struct jb_special) + nlen);
	if (type == JR_LINK)
		return (uint32_t)(sizeof(struct jb_link) + nlen);
	if (type == JR_PIN)
		return (uint32_t)sizeof(struct jb_pin);
	return (uint32_t)(sizeof(struct jb_rename) + nlen + sizeof(uint64_t));
}

/* A new name (or pin: a checkpoint lists it) grows the state; a rename only moves one. */
static int room_grows(uint32_t type)
{
	return type == JR_FILE || type == JR_DIR || type == JR_SPECIAL || type == JR_LINK ||
	       type == JR_PIN;
}

/* Room now, and not tight after the last checkpoint. */
static int roomy(struct persist *p, uint64_t need)
{
	if (!persist_journal_fits(p->j, need) || p->jtight)
		return 0;
	p->jfull_logged = 0;
	return 1;
}

int persist_room(struct persist *p, uint32_t type, size_t nlen, uint32_t next,
		 uint64_t names, uint64_t dirs)
{
	uint64_t need, slack;
	int rc;

	if (!p)
		return 0;
	need = jrec_size(room_body_len(type, nlen, next));
	slack = persist_journal_half_len(p->j) / 8;
	if (roomy(p, need))
		return 0;
	/* Full, or tight after the last checkpoint: a new one only helps once
	 * enough was removed since (each removal frees at least a record). */
	if (!p->jtight || p->jremoved * jrec_size(sizeof(struct jb_file)) >= slack) {
		rc = persist_ckpt_now(p);
		if (rc < 0 && rc != -ENOSPC)
			return rc;
		if (rc >= 0 && roomy(p, need))
			return 0;
	}
	if (persist_journal_fits(p->j, need) && !room_grows(type))
		return 0;
	if (!p->jfull_logged++)
		log_warnx("journal: metadata area full (%" PRIu64 " names, %" PRIu64
			  " directories): refusing new names with ENOSPC; remove names or restart with a larger --meta-size",
			  names, dirs);
	return -ENOSPC;
}

void persist_ids(struct persist *p, uint64_t next_id)
{
	struct persist_item it = { .type = JR_IDS };

	if (!p || next_id < p->id_mark)
		return;
	p->id_mark = next_id + JOURNAL_ID_BATCH;
	it.id = p->id_mark;
	persist_write(p, &it, "ids", 0);
}

void persist_stats(const struct persist *p, struct persist_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	out->sync = p->ck.sync;
	out->bg = p->ck.bg;
	out->failed = p->ck.failed;
	out->hold_ns = p->ck.hold_ns;
	out->running = p->ck.state != CK_IDLE;
}
