/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/persist.c: the directory's side of warm restart. It turns
 * namespace changes into journal records (daemon/meta/journal.h; bodies
 * from jenc.c) and decides when a checkpoint (ckpt.c) must come.
 *
 * Writing: every change that subscribers see as an event is also what the
 * journal must hold, so the one hook is in ev_push() (event.c), called
 * under d->lock at the moment of the change: PUBLISH/REPLACE record the
 * bound version in full (after flushing its data on dax), UNLINK, EVICT
 * and RMDIR its id, RENAME both names, MKDIR the directory, SETATTR the
 * attributes, SYMLINK and MKNOD the new entry whole (target, rdev), LINK
 * the new name and the version it binds. A name of a version with other
 * names (hard links) is not the version: its UNLINK records that one name
 * (JR_UNNAME; restore promotes another name when the primary goes), an
 * EVICT records the version once, for its primary name, and recovery
 * drops every name with it; publishing or renaming over a shared name
 * needs nothing more, since restore drops only the name a JR_FILE or
 * JR_RENAME lands on. Pending versions, leases and sessions are never recorded:
 * they do not survive a restart. A record that does not fit triggers a
 * checkpoint of the state after the change (which then needs no record).
 * Changes that grow the state (publish, mkdir, rename) first ask
 * persist_room(), which checkpoints early or answers -ENOSPC, so the state
 * always fits a half and no change is ever applied without being recorded.
 * Ids handed out are covered by JR_IDS marks, one per JOURNAL_ID_BATCH, so
 * a restarted marud never reuses an id a client may have seen.
 *
 * Restoring (restore.c): records are applied in order with the low-level
 * calls of node.c, without events; every extent of a recovered version is claimed
 * in the allocator (alloc_claim), removals give bytes back as usual, so
 * accounting comes out exact. Then every version's bytes are hashed and a
 * version whose XXH3 differs from the one recorded at publish is dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "dir_priv.h"
#include "failpoint.h"
#include "journal.h"
#include "log.h"

void persist_fini(struct dir *d)
{
	ckpt_fini(d);
	free(d->jb);
	d->jb = NULL;
}

/* ---- recording changes ---- */

/*
 * Append; when the half is full, checkpoint. pre: the change is not applied
 * yet (removals are recorded before they happen), so the checkpoint still
 * holds the item and the record must follow it into the new half.
 */
static void jwrite(struct dir *d, uint32_t type, const void *body, uint32_t blen,
		   const char *op, int pre)
{
	char fp[48];
	int rc;

	snprintf(fp, sizeof(fp), "marud.journal.%s", op);
	{
		char before[64];

		snprintf(before, sizeof(before), "%s.before", fp);
		(void)FAILPOINT(before);
	}
	rc = journal_append(d->j, type, body, blen, fp);
	if (rc == -ENOSPC) {
		/* 1: a background checkpoint caught up, without this change */
		rc = ckpt_now(d);
		if (rc == 1 || (!rc && pre))
			rc = journal_append(d->j, type, body, blen, fp);
	}
	if (!rc)
		ckpt_kick(d);
	else
		log_warnx("journal: %s not recorded (%s): a restart would not see it",
			  op, strerror(-rc));
}

/* Data bytes of a version durable before the record naming them (dax). */
static void flush_data(struct dir *d, const struct ver *v)
{
	struct extent_list tmp;
	const struct extent_list *l = ver_view(v, &tmp);
	uint64_t left = v->size;
	uint32_t i;

	for (i = 0; i < l->n && left; i++) {
		uint64_t n = l->v[i].len < left ? l->v[i].len : left;

		journal_flush(d->j, l->v[i].off, n);
		left -= n;
	}
}

static void record_file(struct dir *d, uint64_t ino, const char *op)
{
	struct ver *v = id_ver(d, ino);
	uint32_t blen;
	uint8_t *p;

	if (!v || v->state != DIR_ST_PUBLISHED)
		return;
	flush_data(d, v);
	p = jenc_file(d, ver_node(v), &blen);
	if (p)
		jwrite(d, JR_FILE, p, blen, op, 0);
	else
		log_warnx("journal: %s not recorded: out of memory", op);
}

static void record_remove(struct dir *d, uint32_t type, uint64_t ino, const char *op)
{
	struct jb_remove b = { ino, type, 0 };

	d->jremoved++;
	jwrite(d, JR_REMOVE, &b, sizeof(b), op, 1);
}

/* The node an event names (still bound when the event is pushed). */
static struct node *ev_target(const struct dir *d, const struct evname *a)
{
	struct nkey k;

	if (!a)
		return NULL;
	nkey_set(&k, a->parent, a->name, a->nlen);
	return name_find(d, &k);
}

/*
 * UNLINK and EVICT come before the change. A name of a version with other
 * names is one JR_UNNAME; an eviction drops every name, recorded once, at
 * the primary name's event (restore drops the links with it).
 */
static void record_drop(struct dir *d, uint32_t type, uint64_t ino,
			const struct evname *a, const char *op)
{
	struct node *n = ev_target(d, a);
	uint8_t body[sizeof(struct jb_unname) + PROTO_NAME_MAX];

	if (type == DEV_EVICT && n && n->kind == NODE_LINK)
		return;
	if (type != DEV_UNLINK || !n || n->kind == NODE_DIR || !node_shared(d, n)) {
		record_remove(d, type, ino, op);
		return;
	}
	d->jremoved++;
	jwrite(d, JR_UNNAME, body, jenc_unname(body, type, ino, a), op, 1);
}

/* SYMLINK, MKNOD, LINK: after the change, from the new node. */
static void record_new_name(struct dir *d, uint32_t type, const struct evname *a)
{
	struct node *n = ev_target(d, a);
	const char *op = type == DEV_LINK ? "link" : type == DEV_SYMLINK ? "symlink" : "mknod";
	uint32_t blen;
	uint8_t *p = NULL;

	if (n && type == DEV_LINK && n->kind == NODE_LINK)
		p = jenc_link(d, n, &blen);
	else if (n && type != DEV_LINK && n->kind == NODE_FILE && !ver_regular(&n->u.v))
		p = jenc_special(d, n, &blen);
	if (p)
		jwrite(d, type == DEV_LINK ? JR_LINK : JR_SPECIAL, p, blen, op, 0);
	else
		log_warnx("journal: %s not recorded: %s", op, n ? "out of memory" : "no such name");
}

static void record_other(struct dir *d, uint32_t type, uint64_t ino,
			 const struct evname *a, const struct evname *b)
{
	struct jb_attr at;
	struct node *n;
	uint32_t blen;
	uint8_t *p;

	switch (type) {
	case DEV_MKDIR:
		n = id_dir(d, ino);
		if (n && (p = jenc_dir(d, n, &blen)) != NULL)
			jwrite(d, JR_DIR, p, blen, "mkdir", 0);
		break;
	case DEV_RENAME:
		if (a && b && (p = jenc_rename(d, ino, a, b, &blen)) != NULL)
			jwrite(d, JR_RENAME, p, blen, "rename", 0);
		break;
	case DEV_SETATTR:
		if (!jenc_attr(id_find(d, ino), &at))
			jwrite(d, JR_ATTR, &at, sizeof(at), "setattr", 0);
		break;
	case DEV_SYMLINK:
	case DEV_LINK:
	case DEV_MKNOD:
		record_new_name(d, type, a);
		break;
	}
}

void persist_event(struct dir *d, uint32_t type, uint64_t ino,
		   const struct evname *a, const struct evname *b)
{
	if (!d->j)
		return;
	switch (type) {
	case DEV_PUBLISH:
		record_file(d, ino, "publish");
		break;
	case DEV_REPLACE:
		record_file(d, ino, "replace");
		break;
	case DEV_UNLINK:
		record_drop(d, type, ino, a, "unlink");
		break;
	case DEV_EVICT:
		record_drop(d, type, ino, a, "evict");
		break;
	case DEV_RMDIR:
		record_remove(d, type, ino, "rmdir");
		break;
	default:
		record_other(d, type, ino, a, b);
	}
}

static uint32_t room_body_len(uint32_t type, size_t nlen, uint32_t next)
{
	if (type == JR_FILE)
		return jenc_file_len(nlen, next);
	if (type == JR_DIR)
		return (uint32_t)(sizeof(struct jb_dir) + nlen);
	if (type == JR_SPECIAL)		/* nlen: name and target */
		return (uint32_t)(sizeof(struct jb_special) + nlen);
	if (type == JR_LINK)
		return (uint32_t)(sizeof(struct jb_link) + nlen);
	return (uint32_t)(sizeof(struct jb_rename) + nlen + sizeof(uint64_t));
}

/* A new name grows the state; a rename only moves one. */
static int room_grows(uint32_t type)
{
	return type == JR_FILE || type == JR_DIR || type == JR_SPECIAL || type == JR_LINK;
}

int persist_room(struct dir *d, uint32_t type, size_t nlen, uint32_t next)
{
	uint64_t need, slack;
	int rc;

	if (!d->j)
		return 0;
	need = jrec_size(room_body_len(type, nlen, next));
	slack = journal_half_len(d->j) / 8;
	if (journal_fits(d->j, need) && !d->jtight) {
		d->jfull_logged = 0;
		return 0;
	}
	/* Full, or tight after the last checkpoint: a new one only helps once
	 * enough was removed since (each removal frees at least a record). */
	if (!d->jtight || d->jremoved * jrec_size(sizeof(struct jb_file)) >= slack) {
		rc = ckpt_now(d);
		if (rc < 0 && rc != -ENOSPC)
			return rc;
		if (rc >= 0 && journal_fits(d->j, need) && !d->jtight) {
			d->jfull_logged = 0;
			return 0;
		}
	}
	if (journal_fits(d->j, need) && !room_grows(type))
		return 0;
	if (!d->jfull_logged++)
		log_warnx("journal: metadata area full (%" PRIu64 " names, %" PRIu64
			  " directories): refusing new names with ENOSPC; remove names or restart with a larger --meta-size",
			  d->nnames, d->ndirs);
	d->st.enospc++;
	return -ENOSPC;
}

void persist_ids(struct dir *d)
{
	struct jb_ids b;

	if (!d->j || d->next_id < d->id_mark)
		return;
	d->id_mark = d->next_id + JOURNAL_ID_BATCH;
	b.next_id = d->id_mark;
	jwrite(d, JR_IDS, &b, sizeof(b), "ids", 0);
}
