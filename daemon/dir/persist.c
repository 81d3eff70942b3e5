/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/persist.c: the directory's side of warm restart. It turns
 * namespace changes into journal records (daemon/meta/journal.h), writes
 * checkpoints of the live state, and rebuilds a directory from a journal.
 *
 * Writing: every change that subscribers see as an event is also what the
 * journal must hold, so the one hook is in ev_push() (event.c), called
 * under d->lock at the moment of the change: PUBLISH/REPLACE record the
 * bound version in full (after flushing its data on dax), UNLINK, EVICT
 * and RMDIR its id, RENAME both names, MKDIR the directory, SETATTR the
 * attributes. Pending versions, leases and sessions are never recorded:
 * they do not survive a restart. A record that does not fit triggers a
 * checkpoint of the state after the change (which then needs no record).
 * Changes that grow the state (publish, mkdir, rename) first ask
 * persist_room(), which checkpoints early or answers -ENOSPC, so the state
 * always fits a half and no change is ever applied without being recorded.
 * Ids handed out are covered by JR_IDS marks, one per JOURNAL_ID_BATCH, so
 * a restarted marud never reuses an id a client may have seen.
 *
 * Restoring: records are applied in order with the low-level calls of
 * node.c, without events; every extent of a recovered version is claimed
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

/* ---- encoding ---- */

static uint8_t *jb_room(struct dir *d, uint32_t len)
{
	uint8_t *nb;

	if (len > d->jbcap) {
		nb = realloc(d->jb, len);
		if (!nb)
			return NULL;
		d->jb = nb;
		d->jbcap = len;
	}
	return d->jb;
}

static uint32_t file_body_len(size_t nlen, uint32_t next)
{
	return (uint32_t)(sizeof(struct jb_file) + next * sizeof(struct extent) + nlen);
}

static uint8_t *enc_file(struct dir *d, const struct node *n, uint32_t *blen)
{
	const struct ver *v = &n->u.v;
	struct extent_list tmp;
	const struct extent_list *l = ver_view(v, &tmp);
	struct jb_file b = { v->id, n->parent, v->size, v->xxh3, v->atime, v->mtime,
			     v->ctime, v->mode, v->uid, v->gid, n->nlen, l->n, 0 };
	uint8_t *p;

	*blen = file_body_len(n->nlen, l->n);
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, &b, sizeof(b));
	memcpy(p + sizeof(b), l->v, l->n * sizeof(struct extent));
	memcpy(p + sizeof(b) + l->n * sizeof(struct extent), n->name, n->nlen);
	return p;
}

static uint8_t *enc_dir(struct dir *d, const struct node *n, uint32_t *blen)
{
	const struct dnode *dn = &n->u.d;
	struct jb_dir b = { dn->id, n->parent, dn->atime, dn->mtime, dn->ctime,
			    dn->mode, dn->uid, dn->gid, n->nlen };
	uint8_t *p;

	*blen = (uint32_t)(sizeof(b) + n->nlen);
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, &b, sizeof(b));
	memcpy(p + sizeof(b), n->name, n->nlen);
	return p;
}

static uint8_t *enc_rename(struct dir *d, uint64_t ino, const struct evname *a,
			   const struct evname *b, uint32_t *blen)
{
	struct jb_rename r = { ino, a->parent, b->parent, (uint32_t)a->nlen, (uint32_t)b->nlen };
	uint8_t *p;

	*blen = (uint32_t)(sizeof(r) + a->nlen + b->nlen);
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, &r, sizeof(r));
	memcpy(p + sizeof(r), a->name, a->nlen);
	memcpy(p + sizeof(r) + a->nlen, b->name, b->nlen);
	return p;
}

static int enc_attr(uintptr_t it, struct jb_attr *b)
{
	const struct node *n = (const struct node *)(it & ~(uintptr_t)TAG);
	const struct ver *v = (const struct ver *)it;

	if (!it)
		return -ENOENT;
	if (it & TAG)
		*b = (struct jb_attr){ n->u.d.id, n->u.d.atime, n->u.d.mtime, n->u.d.ctime,
				       n->u.d.mode, n->u.d.uid, n->u.d.gid, 0 };
	else
		*b = (struct jb_attr){ v->id, v->atime, v->mtime, v->ctime,
				       v->mode, v->uid, v->gid, 0 };
	return 0;
}

/* ---- checkpoint ---- */

static int ckpt_node(struct dir *d, const struct node *n)
{
	uint32_t blen;
	uint8_t *p = n->kind == NODE_DIR ? enc_dir(d, n, &blen) : enc_file(d, n, &blen);

	if (!p)
		return -ENOMEM;
	return journal_ckpt_add(d->j, n->kind == NODE_DIR ? JR_DIR : JR_FILE, p, blen);
}

/* Every directory before its children, depth first (explicit stack). */
static int ckpt_tree(struct dir *d)
{
	const struct node **stack, **ns;
	size_t top = 0, cap = 64;
	struct rb_node *r;
	int rc = 0;

	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[top++] = d->root;
	while (top && !rc) {
		const struct node *dn = stack[--top];

		for (r = rb_first(&dn->u.d.kids); r && !rc; r = rb_next(r)) {
			const struct node *c = rb_entry(r, struct node, rb);

			rc = ckpt_node(d, c);
			if (rc || c->kind != NODE_DIR)
				continue;
			if (top == cap) {
				ns = realloc(stack, cap * 2 * sizeof(*stack));
				if (!ns) {
					rc = -ENOMEM;
					break;
				}
				stack = ns;
				cap *= 2;
			}
			stack[top++] = c;
		}
	}
	free(stack);
	return rc;
}

static int checkpoint_locked(struct dir *d)
{
	struct jb_ids ids;
	struct jb_attr root;
	int rc;

	if (d->id_mark < d->next_id + JOURNAL_ID_BATCH)
		d->id_mark = d->next_id + JOURNAL_ID_BATCH;
	ids.next_id = d->id_mark;
	enc_attr((uintptr_t)d->root | TAG, &root);
	rc = journal_ckpt_begin(d->j);
	if (!rc)
		rc = journal_ckpt_add(d->j, JR_IDS, &ids, sizeof(ids));
	if (!rc)
		rc = journal_ckpt_add(d->j, JR_ATTR, &root, sizeof(root));
	if (!rc)
		rc = ckpt_tree(d);
	if (!rc)
		rc = journal_ckpt_commit(d->j);
	if (rc) {
		journal_ckpt_abort(d->j);
		return rc;
	}
	d->jremoved = 0;
	d->jtight = !journal_fits(d->j, journal_half_len(d->j) / 8);
	return 0;
}

int dir_checkpoint(struct dir *d)
{
	int rc = 0;

	pthread_mutex_lock(&d->lock);
	if (d->j)
		rc = checkpoint_locked(d);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void dir_set_journal(struct dir *d, struct journal *j)
{
	pthread_mutex_lock(&d->lock);
	d->j = j;
	pthread_mutex_unlock(&d->lock);
}

void persist_fini(struct dir *d)
{
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
		rc = checkpoint_locked(d);
		if (!rc && pre)
			rc = journal_append(d->j, type, body, blen, fp);
	}
	if (rc)
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
	p = enc_file(d, ver_node(v), &blen);
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
		if (n && (p = enc_dir(d, n, &blen)) != NULL)
			jwrite(d, JR_DIR, p, blen, "mkdir", 0);
		break;
	case DEV_RENAME:
		if (a && b && (p = enc_rename(d, ino, a, b, &blen)) != NULL)
			jwrite(d, JR_RENAME, p, blen, "rename", 0);
		break;
	case DEV_SETATTR:
		if (!enc_attr(id_find(d, ino), &at))
			jwrite(d, JR_ATTR, &at, sizeof(at), "setattr", 0);
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
		record_remove(d, type, ino, "unlink");
		break;
	case DEV_EVICT:
		record_remove(d, type, ino, "evict");
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
		return file_body_len(nlen, next);
	if (type == JR_DIR)
		return (uint32_t)(sizeof(struct jb_dir) + nlen);
	return (uint32_t)(sizeof(struct jb_rename) + nlen);
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
		rc = checkpoint_locked(d);
		if (rc && rc != -ENOSPC)
			return rc;
		if (!rc && journal_fits(d->j, need) && !d->jtight) {
			d->jfull_logged = 0;
			return 0;
		}
	}
	if (journal_fits(d->j, need) && type != JR_FILE && type != JR_DIR)
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
