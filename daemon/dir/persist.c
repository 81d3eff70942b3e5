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
 * A checkpoint writes directories, files and special files in tree order,
 * then every extra name from d->links, so each link follows its version.
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
	if (l->n)
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

/* A symlink, FIFO, socket or device node: metadata and the target or rdev. */
static uint8_t *enc_special(struct dir *d, const struct node *n, uint32_t *blen)
{
	const struct ver *v = &n->u.v;
	uint32_t tlen = S_ISLNK(v->mode) ? (uint32_t)v->size : 0;
	struct jb_special b = { v->id, n->parent, v->size, tlen ? 0 : v->ext.rdev,
				v->atime, v->mtime, v->ctime, v->mode, v->uid, v->gid,
				n->nlen, tlen, 0 };
	uint8_t *p;

	*blen = (uint32_t)(sizeof(b) + tlen + n->nlen);
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, &b, sizeof(b));
	if (tlen)	/* only a symlink has a target (ext is rdev otherwise) */
		memcpy(p + sizeof(b), v->ext.target, tlen);
	memcpy(p + sizeof(b) + tlen, n->name, n->nlen);
	return p;
}

/* Link node n: its name, the version it binds and that version's ctime. */
static uint8_t *enc_link(struct dir *d, struct node *n, uint32_t *blen)
{
	const struct ver *v = node_ver(d, n);
	struct jb_link b = { n->u.l.target, n->parent, v ? v->ctime : 0, n->nlen, 0 };
	uint8_t *p;

	*blen = (uint32_t)(sizeof(b) + n->nlen);
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, &b, sizeof(b));
	memcpy(p + sizeof(b), n->name, n->nlen);
	return p;
}

/*
 * Into p (sizeof(struct jb_unname) + PROTO_NAME_MAX bytes), not d->jb: the
 * record is written before the change, and a checkpoint on the way (which
 * uses d->jb) must not overwrite it before it is appended again.
 */
static uint32_t enc_unname(uint8_t *p, uint32_t why, uint64_t id, const struct evname *a)
{
	struct jb_unname b = { id, a->parent, (uint32_t)a->nlen, why };

	memcpy(p, &b, sizeof(b));
	memcpy(p + sizeof(b), a->name, a->nlen);
	return (uint32_t)(sizeof(b) + a->nlen);
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

/* The moved item's ctime follows the names (a rename changes it). */
static uint8_t *enc_rename(struct dir *d, uint64_t ino, const struct evname *a,
			   const struct evname *b, uint32_t *blen)
{
	struct jb_rename r = { ino, a->parent, b->parent, (uint32_t)a->nlen, (uint32_t)b->nlen };
	struct jb_attr at = { 0 };
	uint8_t *p;

	enc_attr(id_find(d, ino), &at);
	*blen = (uint32_t)(sizeof(r) + a->nlen + b->nlen + sizeof(at.ctime));
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, &r, sizeof(r));
	memcpy(p + sizeof(r), a->name, a->nlen);
	memcpy(p + sizeof(r) + a->nlen, b->name, b->nlen);
	memcpy(p + sizeof(r) + a->nlen + b->nlen, &at.ctime, sizeof(at.ctime));
	return p;
}

/* ---- checkpoint ---- */

/* One tree entry; link nodes wait for ckpt_links (after their versions). */
static int ckpt_node(struct dir *d, const struct node *n)
{
	uint32_t blen, type;
	uint8_t *p;

	if (n->kind == NODE_LINK)
		return 0;
	if (n->kind == NODE_DIR) {
		type = JR_DIR;
		p = enc_dir(d, n, &blen);
	} else if (ver_regular(&n->u.v)) {
		type = JR_FILE;
		p = enc_file(d, n, &blen);
	} else {
		type = JR_SPECIAL;
		p = enc_special(d, n, &blen);
	}
	if (!p)
		return -ENOMEM;
	return journal_ckpt_add(d->j, type, p, blen);
}

static int ckpt_links(struct dir *d)
{
	struct rb_node *r;
	uint32_t blen;
	uint8_t *p;
	int rc = 0;

	for (r = rb_first(&d->links); r && !rc; r = rb_next(r)) {
		p = enc_link(d, container_of(r, struct node, u.l.rb), &blen);
		rc = p ? journal_ckpt_add(d->j, JR_LINK, p, blen) : -ENOMEM;
	}
	return rc;
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
		rc = ckpt_links(d);
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
	jwrite(d, JR_UNNAME, body, enc_unname(body, type, ino, a), op, 1);
}

/* SYMLINK, MKNOD, LINK: after the change, from the new node. */
static void record_new_name(struct dir *d, uint32_t type, const struct evname *a)
{
	struct node *n = ev_target(d, a);
	const char *op = type == DEV_LINK ? "link" : type == DEV_SYMLINK ? "symlink" : "mknod";
	uint32_t blen;
	uint8_t *p = NULL;

	if (n && type == DEV_LINK && n->kind == NODE_LINK)
		p = enc_link(d, n, &blen);
	else if (n && type != DEV_LINK && n->kind == NODE_FILE && !ver_regular(&n->u.v))
		p = enc_special(d, n, &blen);
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
		return file_body_len(nlen, next);
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
		rc = checkpoint_locked(d);
		if (rc && rc != -ENOSPC)
			return rc;
		if (!rc && journal_fits(d->j, need) && !d->jtight) {
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
