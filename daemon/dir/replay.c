/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/replay.c: what each journal record means to the directory,
 * applied in log order as persist/restore.c replays them (dir_replay_item,
 * through the owner table kept at the end of this file), with node.c's calls, without
 * events and without writing anything: a JR_FILE binds its version under
 * its name (dropping what was there) and claims its extents in the
 * allocator, JR_REMOVE drops by id, JR_RENAME drops what is at the target
 * and moves the named item, JR_DIR and JR_ATTR set directories and
 * attributes. Hard links, symlinks and special files: JR_SPECIAL makes a
 * symlink (with its target) or a FIFO, socket or device node, JR_LINK
 * binds one more name to a version, JR_UNNAME drops one name of a version
 * that keeps others (the primary name going promotes a link, as link.c
 * does). A name a JR_FILE or JR_RENAME lands on goes alone; a JR_REMOVE of
 * a version takes every name of it. Times are never set here but from
 * records. Every extent of a recovered version is claimed in the
 * allocator (alloc_claim) and removals give bytes back as usual, so the
 * accounting comes out exact.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dir_priv.h"
#include "persist.h"

/* Parent directory and key of a recorded name (persist/ checked its length). */
static int rkey(struct dir *d, const struct persist_name *a, struct nkey *k, struct node **pd)
{
	return dir_name_key(d, a->parent, a->name, a->nlen, k, pd);
}

/* 0 when a new item's name and id are free and the index has room, else 1. */
static int rfresh(struct dir *d, const struct persist_item *it, struct nkey *k,
		  struct node **pd)
{
	return rkey(d, &it->at, k, pd) || dir_name_find(d, k) || dir_id_find(d, it->id) ||
	       dir_index_reserve(d);
}

/* Attach n under pd without touching pd's recorded times. */
static void rattach(struct dir *d, struct node *pd, struct node *n)
{
	uint64_t m = pd->u.d.mtime, c = pd->u.d.ctime;

	n->cookie = d->next_cookie++;
	dir_node_attach(d, pd, n);
	pd->u.d.mtime = m;
	pd->u.d.ctime = c;
}

static void rdetach_keep(struct dir *d, struct node *n, void (*rm)(struct dir *, struct node *))
{
	struct node *pd = dir_id_dir(d, n->parent);
	uint64_t m = pd ? pd->u.d.mtime : 0, c = pd ? pd->u.d.ctime : 0;

	rm(d, n);
	if (pd) {
		pd->u.d.mtime = m;
		pd->u.d.ctime = c;
	}
}

static void rm_file(struct dir *d, struct node *n)
{
	dir_lru_del(d, &n->u.v);
	dir_file_remove(d, n, NULL);
}

/* An extra name of a version. */
static void rm_link(struct dir *d, struct node *n)
{
	struct ver *v = dir_node_ver(d, n);

	dir_link_unhook(d, n);
	dir_node_detach(d, n);
	if (v)
		v->links--;
	d->nnames--;
	free(n);
}

/* The primary name of a version with links: a link takes the version over. */
static void rm_primary(struct dir *d, struct node *n)
{
	struct ver *v = &n->u.v;
	struct node *l = dir_link_first(d, v->id);

	dir_link_unhook(d, l);
	dir_lru_del(d, v);
	dir_node_detach(d, n);
	dir_ver_move(d, v, &l->u.v);
	l->kind = NODE_FILE;
	l->u.v.links--;
	dir_lru_settle(d, l);
	d->nnames--;
	free(n);
}

/* One name; the version goes only with its last name. */
static void rm_name(struct dir *d, struct node *n)
{
	if (n->kind == NODE_LINK)
		rm_link(d, n);
	else if (n->u.v.links)
		rm_primary(d, n);
	else
		rm_file(d, n);
}

/* Drop the name n, whatever it binds; -ENOTEMPTY for a directory with entries. */
static int rdrop(struct dir *d, struct node *n)
{
	if (n->kind != NODE_DIR) {
		rdetach_keep(d, n, rm_name);
		return 0;
	}
	if (n->u.d.nent || n->u.d.id == DIR_ROOT_ID)
		return -ENOTEMPTY;
	rdetach_keep(d, n, dir_remove);
	return 0;
}

/* Drop a published version with every name it has (evict, unlink, bad sum). */
static void rdrop_ver(struct dir *d, struct ver *v)
{
	struct node *l;

	while ((l = dir_link_first(d, v->id)) != NULL)
		rdetach_keep(d, l, rm_link);
	rdetach_keep(d, ver_node(v), rm_file);
}

static int apply_dir(struct dir *d, const struct persist_item *it)
{
	struct node *pd, *n;
	struct nkey k;

	if (rfresh(d, it, &k, &pd))
		return -EEXIST;
	n = dir_node_alloc(it->at.nlen);
	if (!n)
		return -ENOMEM;
	dir_node_set_name(n, &k);
	n->kind = NODE_DIR;
	n->u.d = (struct dnode){ .id = it->id, .atime = it->atime, .mtime = it->mtime,
				 .ctime = it->ctime, .mode = it->mode, .uid = it->uid,
				 .gid = it->gid };
	dir_id_place_dir(d, n);
	rattach(d, pd, n);
	d->ndirs++;
	return 0;
}

/* Claim every extent, or none. */
static int claim_all(struct dir *d, const struct extent *e, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (alloc_claim(d->o.alloc, e[i].off, e[i].len))
			break;
	if (i == n)
		return 0;
	while (i--)
		alloc_put(d->o.alloc, e[i].off, e[i].len);
	return -EEXIST;
}

static int file_ext(struct ver *v, const struct extent *e, uint32_t n)
{
	struct extent_list l = { 0 };

	if (n) {
		l.v = malloc(n * sizeof(*l.v));
		if (!l.v)
			return -ENOMEM;
		memcpy(l.v, e, n * sizeof(*l.v));
		l.n = l.cap = n;
	}
	dir_ver_put_list(v, &l);
	return 0;
}

/* A version's recorded attributes. */
static void ver_of_item(struct ver *v, const struct persist_item *it)
{
	*v = (struct ver){ .id = it->id, .size = it->size, .xxh3 = it->xxh3,
			   .atime = it->atime, .mtime = it->mtime, .ctime = it->ctime,
			   .mode = it->mode, .uid = it->uid, .gid = it->gid,
			   .state = DIR_ST_PUBLISHED };
}

static int file_bind(struct dir *d, const struct persist_item *it, struct nkey *k,
		     struct node *pd)
{
	struct node *n = dir_node_alloc(it->at.nlen);
	struct ver *v;

	if (!n)
		return -ENOMEM;
	dir_node_set_name(n, k);
	n->kind = NODE_FILE;
	v = &n->u.v;
	ver_of_item(v, it);
	if (file_ext(v, it->ext, it->next)) {
		free(n);
		return -ENOMEM;
	}
	dir_id_place_ver(d, v);
	rattach(d, pd, n);
	d->nnames++;
	d->nvers++;
	d->used += ver_reserved(v);
	dir_lru_settle(d, n);
	return 0;
}

static int apply_file(struct dir *d, const struct persist_item *it)
{
	struct node *pd, *old;
	struct nkey k;
	uint32_t i;
	int rc;

	rc = rkey(d, &it->at, &k, &pd);
	if (rc || dir_id_find(d, it->id) || dir_index_reserve(d))
		return rc ? rc : -EEXIST;
	old = dir_name_find(d, &k);
	if (old && (old->kind == NODE_DIR || rdrop(d, old)))
		return -EISDIR;
	rc = claim_all(d, it->ext, it->next);
	if (!rc) {
		rc = file_bind(d, it, &k, pd);
		if (rc)
			for (i = 0; i < it->next; i++)
				alloc_put(d->o.alloc, it->ext[i].off, it->ext[i].len);
	}
	return rc;
}

static int apply_remove(struct dir *d, const struct persist_item *r)
{
	uintptr_t it = dir_id_find(d, r->id);

	if (!it)
		return -ENOENT;
	if (it & TAG)
		return rdrop(d, (struct node *)(it & ~(uintptr_t)TAG));
	if (((struct ver *)it)->state != DIR_ST_PUBLISHED)
		return -ENOENT;
	rdrop_ver(d, (struct ver *)it);
	return 0;
}

/* The version a non-directory name binds, or NULL. */
static struct ver *name_ver(struct dir *d, struct node *n)
{
	return n && n->kind != NODE_DIR ? dir_node_ver(d, n) : NULL;
}

static int apply_unname(struct dir *d, const struct persist_item *it)
{
	struct node *pd, *n;
	struct ver *v;
	struct nkey k;

	if (rkey(d, &it->at, &k, &pd))
		return -ENOENT;
	n = dir_name_find(d, &k);
	v = name_ver(d, n);
	if (!v || v->id != it->id)
		return -ENOENT;
	return rdrop(d, n);
}

static int apply_link(struct dir *d, const struct persist_item *it)
{
	struct ver *v = dir_id_ver(d, it->id);
	struct node *pd, *n;
	struct nkey k;

	if (!v || v->state != DIR_ST_PUBLISHED)
		return -ENOENT;
	if (rkey(d, &it->at, &k, &pd) || dir_name_find(d, &k) || v->links == UINT16_MAX ||
	    dir_index_reserve(d))
		return -EEXIST;
	n = dir_node_alloc(it->at.nlen);
	if (!n)
		return -ENOMEM;
	dir_node_set_name(n, &k);
	n->kind = NODE_LINK;
	n->u.l.target = it->id;
	rattach(d, pd, n);	/* the link index orders by cookie: hook after */
	dir_link_hook(d, n);
	v->links++;
	v->ctime = it->ctime;
	d->nnames++;
	return 0;
}

static struct node *special_node(const struct persist_item *it, const struct nkey *k)
{
	struct node *n = dir_node_alloc(it->at.nlen);
	struct ver *v;

	if (!n)
		return NULL;
	dir_node_set_name(n, k);
	n->kind = NODE_FILE;
	v = &n->u.v;
	ver_of_item(v, it);
	v->xxh3 = 0;
	if (!it->tlen) {
		v->ext.rdev = it->rdev;
		return n;
	}
	v->ext.target = malloc(it->tlen + 1);
	if (!v->ext.target) {
		free(n);
		return NULL;
	}
	memcpy(v->ext.target, it->target, it->tlen);
	v->ext.target[it->tlen] = '\0';
	return n;
}

static int apply_special(struct dir *d, const struct persist_item *it)
{
	struct node *pd, *n;
	struct nkey k;

	if (rfresh(d, it, &k, &pd))
		return -EEXIST;
	n = special_node(it, &k);
	if (!n)
		return -ENOMEM;
	dir_id_place_ver(d, &n->u.v);
	rattach(d, pd, n);
	d->nnames++;
	d->nvers++;
	return 0;
}

/* Move node src to key k under todir (a new allocation if the name length changes). */
static int rmove(struct dir *d, struct node *src, const struct nkey *k, struct node *todir)
{
	struct node *n = src;

	if (src->nlen != k->nlen) {
		n = dir_node_alloc(k->nlen);
		if (!n)
			return -ENOMEM;
	}
	if (dir_index_reserve(d)) {
		if (n != src)
			free(n);
		return -ENOMEM;
	}
	rdetach_keep(d, src, dir_node_detach);
	if (src->kind == NODE_LINK)
		dir_link_unhook(d, src);
	if (n != src) {
		memcpy(n, src, offsetof(struct node, name));
		if (src->kind == NODE_DIR)
			htab_replace(&d->ids, (uintptr_t)src | TAG, (uintptr_t)n | TAG);
		else if (src->kind == NODE_FILE)
			dir_ver_move(d, &src->u.v, &n->u.v);
		free(src);
	}
	dir_node_set_name(n, k);
	rattach(d, todir, n);
	if (n->kind == NODE_LINK)
		dir_link_hook(d, n);
	return 0;
}

static void rename_ctime(struct dir *d, uint64_t id, uint64_t ctime)
{
	uintptr_t it = dir_id_find(d, id);

	if (it & TAG)
		((struct node *)(it & ~(uintptr_t)TAG))->u.d.ctime = ctime;
	else if (it)
		((struct ver *)it)->ctime = ctime;
}

static int apply_rename(struct dir *d, const struct persist_item *it)
{
	struct node *fd, *td, *src, *dst;
	struct nkey from, to;
	int rc;

	if (rkey(d, &it->at, &from, &fd) || rkey(d, &it->to, &to, &td))
		return -ENOENT;
	src = dir_name_find(d, &from);
	if (src && (src->kind == NODE_DIR ? src->u.d.id : dir_node_ver(d, src)->id) != it->id)
		src = NULL;
	dst = dir_name_find(d, &to);
	/* Two names of one version: rename does nothing (never recorded). */
	if (dst && dst != src && rdrop(d, dst))
		return -ENOTEMPTY;
	if (!src)
		return 0;
	rc = rmove(d, src, &to, td);
	if (!rc && it->ctime)
		rename_ctime(d, it->id, it->ctime);
	return rc;
}

static int apply_attr(struct dir *d, const struct persist_item *a)
{
	uintptr_t it = dir_id_find(d, a->id);
	struct node *n;
	struct ver *v;

	if (!it)
		return -ENOENT;
	if (it & TAG) {
		n = (struct node *)(it & ~(uintptr_t)TAG);
		n->u.d.atime = a->atime;
		n->u.d.mtime = a->mtime;
		n->u.d.ctime = a->ctime;
		n->u.d.mode = a->mode;
		n->u.d.uid = a->uid;
		n->u.d.gid = a->gid;
		return 0;
	}
	v = (struct ver *)it;
	v->atime = a->atime;
	v->mtime = a->mtime;
	v->ctime = a->ctime;
	v->mode = a->mode;
	v->uid = a->uid;
	v->gid = a->gid;
	return 0;
}

int dir_replay_item(void *dir, const struct persist_item *it)
{
	struct dir *d = dir;

	switch (it->type) {
	case JR_DIR:
		return apply_dir(d, it);
	case JR_FILE:
		return apply_file(d, it);
	case JR_REMOVE:
		return apply_remove(d, it);
	case JR_RENAME:
		return apply_rename(d, it);
	case JR_ATTR:
		return apply_attr(d, it);
	case JR_LINK:
		return apply_link(d, it);
	case JR_UNNAME:
		return apply_unname(d, it);
	case JR_SPECIAL:
		return apply_special(d, it);
	case JR_PIN:
		return dir_pin_replay(d, it);
	}
	return -EBADMSG;
}

void dir_replay_drop(void *dir, uint64_t id)
{
	struct ver *v = dir_id_ver(dir, id);

	if (v && v->state == DIR_ST_PUBLISHED)
		rdrop_ver(dir, v);
}

void dir_replayed(void *dir, uint64_t max_id, struct persist_restore_stats *st)
{
	struct dir *d = dir;

	if (max_id + 1 > d->next_id)
		d->next_id = max_id + 1;
	st->next_id = d->next_id;
	st->dirs = d->ndirs;
	st->files = d->nnames;
	st->bytes = d->used;
}

/* The table persist/ reaches the directory through: record.c's walk, the
 * replay calls above. It lives here so that record.c, which event.c calls
 * for every change, never calls replay.c (whose calls lead back to events). */
static const struct persist_ops dir_ops = {
	.walk_items = dir_record_walk,
	.id_next = dir_record_id_next,
	.apply_item = dir_replay_item,
	.drop_version = dir_replay_drop,
	.replayed = dir_replayed,
};

void dir_persist_owner(struct dir *d, struct persist_owner *out)
{
	*out = (struct persist_owner){ &dir_ops, d, &d->lock };
}
