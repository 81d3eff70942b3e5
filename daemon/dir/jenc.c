/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/jenc.c: journal record bodies (daemon/meta/journal.h) from
 * the directory's nodes, versions and event names. It only encodes: what a
 * record means on replay is restore.c's, when one is written persist.c's
 * (changes) and ckpt.c's (checkpoints). A body is built in d->jb, valid
 * until the next encoding; enc_unname and enc_attr write into the caller's
 * buffer. Called with d->lock held, or in a checkpoint's child process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dir_priv.h"
#include "journal.h"

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

uint32_t jenc_file_len(size_t nlen, uint32_t next)
{
	return (uint32_t)(sizeof(struct jb_file) + next * sizeof(struct extent) + nlen);
}

uint8_t *jenc_file(struct dir *d, const struct node *n, uint32_t *blen)
{
	const struct ver *v = &n->u.v;
	struct extent_list tmp;
	const struct extent_list *l = ver_view(v, &tmp);
	struct jb_file b = { v->id, n->parent, v->size, v->xxh3, v->atime, v->mtime,
			     v->ctime, v->mode, v->uid, v->gid, n->nlen, l->n, 0 };
	uint8_t *p;

	*blen = jenc_file_len(n->nlen, l->n);
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, &b, sizeof(b));
	if (l->n)
		memcpy(p + sizeof(b), l->v, l->n * sizeof(struct extent));
	memcpy(p + sizeof(b) + l->n * sizeof(struct extent), n->name, n->nlen);
	return p;
}

/* A body of a fixed part and then n's name. */
static uint8_t *fixed_and_name(struct dir *d, const void *b, size_t blen_fixed,
			       const struct node *n, uint32_t *blen)
{
	uint8_t *p;

	*blen = (uint32_t)(blen_fixed + n->nlen);
	p = jb_room(d, *blen);
	if (!p)
		return NULL;
	memcpy(p, b, blen_fixed);
	memcpy(p + blen_fixed, n->name, n->nlen);
	return p;
}

uint8_t *jenc_dir(struct dir *d, const struct node *n, uint32_t *blen)
{
	const struct dnode *dn = &n->u.d;
	struct jb_dir b = { dn->id, n->parent, dn->atime, dn->mtime, dn->ctime,
			    dn->mode, dn->uid, dn->gid, n->nlen };

	return fixed_and_name(d, &b, sizeof(b), n, blen);
}

/* A symlink, FIFO, socket or device node: metadata and the target or rdev. */
uint8_t *jenc_special(struct dir *d, const struct node *n, uint32_t *blen)
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
uint8_t *jenc_link(struct dir *d, struct node *n, uint32_t *blen)
{
	const struct ver *v = node_ver(d, n);
	struct jb_link b = { n->u.l.target, n->parent, v ? v->ctime : 0, n->nlen, 0 };

	return fixed_and_name(d, &b, sizeof(b), n, blen);
}

/*
 * Into p (sizeof(struct jb_unname) + PROTO_NAME_MAX bytes), not d->jb: the
 * record is written before the change, and a checkpoint on the way (which
 * uses d->jb) must not overwrite it before it is appended again.
 */
uint32_t jenc_unname(uint8_t *p, uint32_t why, uint64_t id, const struct evname *a)
{
	struct jb_unname b = { id, a->parent, (uint32_t)a->nlen, why };

	memcpy(p, &b, sizeof(b));
	memcpy(p + sizeof(b), a->name, a->nlen);
	return (uint32_t)(sizeof(b) + a->nlen);
}

int jenc_attr(uintptr_t it, struct jb_attr *b)
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
uint8_t *jenc_rename(struct dir *d, uint64_t ino, const struct evname *a,
			   const struct evname *b, uint32_t *blen)
{
	struct jb_rename r = { ino, a->parent, b->parent, (uint32_t)a->nlen, (uint32_t)b->nlen };
	struct jb_attr at = { 0 };
	uint8_t *p;

	jenc_attr(id_find(d, ino), &at);
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

