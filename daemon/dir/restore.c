/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/restore.c: rebuilding a directory from its journal at start
 * (dir_restore). Records (daemon/meta/journal.h) are applied in log order
 * with node.c's calls, without events and without writing anything: a
 * JR_FILE binds its version under its name (dropping what was there) and
 * claims its extents in the allocator, JR_REMOVE drops by id, JR_RENAME
 * drops what is at the target and moves the named item, JR_DIR and JR_ATTR
 * set directories and attributes, JR_IDS raises the id floor. Hard links,
 * symlinks and special files: JR_SPECIAL makes a symlink (with its target)
 * or a FIFO, socket or device node, JR_LINK binds one more name to a
 * version, JR_UNNAME drops one name of a version that keeps others (the
 * primary name going promotes a link, as link.c does). A name a JR_FILE
 * or JR_RENAME lands on goes alone; a JR_REMOVE of a version takes every
 * name of it. Times are never set here but from records. A record
 * that does not apply (its parent is gone, its extents overlap live ones:
 * only a damaged journal does that) is skipped and counted. Last, every
 * version's bytes are hashed in pool memory; one whose XXH3 differs from
 * the recorded one is dropped and logged, never served.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "dir_priv.h"
#include "journal.h"
#include "log.h"

struct restore {
	struct dir *d;
	struct dir_restore_stats *st;
	uint64_t max_id;
};

static void seen_id(struct restore *r, uint64_t id)
{
	if (id > r->max_id)
		r->max_id = id;
}

/* Parent directory and key of a recorded name; keeps the parent's times. */
static int rkey(struct dir *d, uint64_t parent, const char *name, uint32_t nlen,
		struct nkey *k, struct node **pd)
{
	if (nlen == 0 || nlen > PROTO_NAME_MAX)
		return -EINVAL;
	return name_key(d, parent, name, nlen, k, pd);
}

/* Attach n under pd without touching pd's recorded times. */
static void rattach(struct dir *d, struct node *pd, struct node *n)
{
	uint64_t m = pd->u.d.mtime, c = pd->u.d.ctime;

	n->cookie = d->next_cookie++;
	node_attach(d, pd, n);
	pd->u.d.mtime = m;
	pd->u.d.ctime = c;
}

static void rdetach_keep(struct dir *d, struct node *n, void (*rm)(struct dir *, struct node *))
{
	struct node *pd = id_dir(d, n->parent);
	uint64_t m = pd ? pd->u.d.mtime : 0, c = pd ? pd->u.d.ctime : 0;

	rm(d, n);
	if (pd) {
		pd->u.d.mtime = m;
		pd->u.d.ctime = c;
	}
}

static void rm_file(struct dir *d, struct node *n)
{
	lru_del(d, &n->u.v);
	file_remove(d, n, NULL);
}

/* An extra name of a version. */
static void rm_link(struct dir *d, struct node *n)
{
	struct ver *v = node_ver(d, n);

	link_unhook(d, n);
	node_detach(d, n);
	if (v)
		v->links--;
	d->nnames--;
	free(n);
}

/* The primary name of a version with links: a link takes the version over. */
static void rm_primary(struct dir *d, struct node *n)
{
	struct ver *v = &n->u.v;
	struct node *l = link_first(d, v->id);

	link_unhook(d, l);
	lru_del(d, v);
	node_detach(d, n);
	ver_move(d, v, &l->u.v);
	l->kind = NODE_FILE;
	l->u.v.links--;
	lru_settle(d, l);
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

	while ((l = link_first(d, v->id)) != NULL)
		rdetach_keep(d, l, rm_link);
	rdetach_keep(d, ver_node(v), rm_file);
}

static int apply_dir(struct restore *r, const void *body, uint32_t blen)
{
	struct dir *d = r->d;
	struct jb_dir b;
	struct node *pd, *n;
	struct nkey k;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	if (sizeof(b) + b.nlen > blen)
		return -EBADMSG;
	seen_id(r, b.id);
	if (rkey(d, b.parent, (const char *)body + sizeof(b), b.nlen, &k, &pd) ||
	    name_find(d, &k) || id_find(d, b.id) || index_reserve(d))
		return -EEXIST;
	n = node_alloc(b.nlen);
	if (!n)
		return -ENOMEM;
	node_set_name(n, &k);
	n->kind = NODE_DIR;
	n->u.d = (struct dnode){ .id = b.id, .atime = b.atime, .mtime = b.mtime,
				 .ctime = b.ctime, .mode = b.mode, .uid = b.uid, .gid = b.gid };
	id_place_dir(d, n);
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
	ver_put_list(v, &l);
	return 0;
}

static int file_bind(struct dir *d, const struct jb_file *b, const struct extent *e,
		     struct nkey *k, struct node *pd)
{
	struct node *n = node_alloc(b->nlen);
	struct ver *v;

	if (!n)
		return -ENOMEM;
	node_set_name(n, k);
	n->kind = NODE_FILE;
	v = &n->u.v;
	*v = (struct ver){ .id = b->id, .size = b->size, .xxh3 = b->xxh3, .atime = b->atime,
			   .mtime = b->mtime, .ctime = b->ctime, .mode = b->mode,
			   .uid = b->uid, .gid = b->gid, .state = DIR_ST_PUBLISHED };
	if (file_ext(v, e, b->next)) {
		free(n);
		return -ENOMEM;
	}
	id_place_ver(d, v);
	rattach(d, pd, n);
	d->nnames++;
	d->nvers++;
	d->used += ver_reserved(v);
	lru_settle(d, n);
	return 0;
}

static int apply_file(struct restore *r, const uint8_t *body, uint32_t blen)
{
	struct dir *d = r->d;
	const struct extent *e;
	struct jb_file b;
	struct node *pd, *old;
	struct nkey k;
	uint64_t bytes = 0;
	uint32_t i;
	int rc;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	if (b.next > (blen - sizeof(b)) / sizeof(*e) ||
	    sizeof(b) + (uint64_t)b.next * sizeof(*e) + b.nlen > blen)
		return -EBADMSG;
	e = (const struct extent *)(body + sizeof(b));
	for (i = 0; i < b.next; i++)
		bytes += e[i].len;
	seen_id(r, b.id);
	rc = rkey(d, b.parent, (const char *)(e + b.next), b.nlen, &k, &pd);
	/* A symlink needs its target: only JR_SPECIAL carries one. */
	if (!rc && S_ISLNK(b.mode))
		rc = -EBADMSG;
	if (rc || b.size > bytes || id_find(d, b.id) || index_reserve(d))
		return rc ? rc : -EEXIST;
	old = name_find(d, &k);
	if (old && (old->kind == NODE_DIR || rdrop(d, old)))
		return -EISDIR;
	rc = claim_all(d, e, b.next);
	if (!rc) {
		rc = file_bind(d, &b, e, &k, pd);
		if (rc)
			for (i = 0; i < b.next; i++)
				alloc_put(d->o.alloc, e[i].off, e[i].len);
	}
	return rc;
}

static int apply_remove(struct restore *r, const void *body, uint32_t blen)
{
	struct jb_remove b;
	uintptr_t it;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	seen_id(r, b.id);
	it = id_find(r->d, b.id);
	if (!it)
		return -ENOENT;
	if (it & TAG)
		return rdrop(r->d, (struct node *)(it & ~(uintptr_t)TAG));
	if (((struct ver *)it)->state != DIR_ST_PUBLISHED)
		return -ENOENT;
	rdrop_ver(r->d, (struct ver *)it);
	return 0;
}

/* The version a non-directory name binds, or NULL. */
static struct ver *name_ver(struct dir *d, struct node *n)
{
	return n && n->kind != NODE_DIR ? node_ver(d, n) : NULL;
}

static int apply_unname(struct restore *r, const uint8_t *body, uint32_t blen)
{
	struct dir *d = r->d;
	struct jb_unname b;
	struct node *pd, *n;
	struct ver *v;
	struct nkey k;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	if (sizeof(b) + (uint64_t)b.nlen > blen)
		return -EBADMSG;
	seen_id(r, b.id);
	if (rkey(d, b.parent, (const char *)body + sizeof(b), b.nlen, &k, &pd))
		return -ENOENT;
	n = name_find(d, &k);
	v = name_ver(d, n);
	if (!v || v->id != b.id)
		return -ENOENT;
	return rdrop(d, n);
}

static int apply_link(struct restore *r, const uint8_t *body, uint32_t blen)
{
	struct dir *d = r->d;
	struct jb_link b;
	struct node *pd, *n;
	struct ver *v;
	struct nkey k;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	if (sizeof(b) + (uint64_t)b.nlen > blen)
		return -EBADMSG;
	seen_id(r, b.id);
	v = id_ver(d, b.id);
	if (!v || v->state != DIR_ST_PUBLISHED)
		return -ENOENT;
	if (rkey(d, b.parent, (const char *)body + sizeof(b), b.nlen, &k, &pd) ||
	    name_find(d, &k) || v->links == UINT16_MAX || index_reserve(d))
		return -EEXIST;
	n = node_alloc(b.nlen);
	if (!n)
		return -ENOMEM;
	node_set_name(n, &k);
	n->kind = NODE_LINK;
	n->u.l.target = b.id;
	rattach(d, pd, n);	/* the link index orders by cookie: hook after */
	link_hook(d, n);
	v->links++;
	v->ctime = b.ctime;
	d->nnames++;
	return 0;
}

/* mode, size and target of a recorded special file make sense together. */
static int special_ok(const struct jb_special *b, const char *target)
{
	uint32_t t = b->mode & S_IFMT;

	if (t == S_IFLNK)
		return b->tlen && b->tlen == b->size && b->tlen < PROTO_PATH_MAX &&
		       !memchr(target, '\0', b->tlen);
	return !b->tlen && !b->size &&
	       (t == S_IFIFO || t == S_IFSOCK || t == S_IFCHR || t == S_IFBLK);
}

static struct node *special_node(const struct jb_special *b, const char *target,
				 const struct nkey *k)
{
	struct node *n = node_alloc(b->nlen);
	struct ver *v;

	if (!n)
		return NULL;
	node_set_name(n, k);
	n->kind = NODE_FILE;
	v = &n->u.v;
	*v = (struct ver){ .id = b->id, .size = b->size, .atime = b->atime,
			   .mtime = b->mtime, .ctime = b->ctime, .mode = b->mode,
			   .uid = b->uid, .gid = b->gid, .state = DIR_ST_PUBLISHED };
	if (!b->tlen) {
		v->ext.rdev = b->rdev;
		return n;
	}
	v->ext.target = malloc(b->tlen + 1);
	if (!v->ext.target) {
		free(n);
		return NULL;
	}
	memcpy(v->ext.target, target, b->tlen);
	v->ext.target[b->tlen] = '\0';
	return n;
}

static int apply_special(struct restore *r, const uint8_t *body, uint32_t blen)
{
	struct dir *d = r->d;
	struct jb_special b;
	struct node *pd, *n;
	const char *target;
	struct nkey k;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	if (sizeof(b) + (uint64_t)b.tlen + b.nlen > blen)
		return -EBADMSG;
	target = (const char *)body + sizeof(b);
	seen_id(r, b.id);
	if (!special_ok(&b, target))
		return -EBADMSG;
	if (rkey(d, b.parent, target + b.tlen, b.nlen, &k, &pd) || name_find(d, &k) ||
	    id_find(d, b.id) || index_reserve(d))
		return -EEXIST;
	n = special_node(&b, target, &k);
	if (!n)
		return -ENOMEM;
	id_place_ver(d, &n->u.v);
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
		n = node_alloc(k->nlen);
		if (!n)
			return -ENOMEM;
	}
	if (index_reserve(d)) {
		if (n != src)
			free(n);
		return -ENOMEM;
	}
	rdetach_keep(d, src, node_detach);
	if (src->kind == NODE_LINK)
		link_unhook(d, src);
	if (n != src) {
		memcpy(n, src, offsetof(struct node, name));
		if (src->kind == NODE_DIR)
			htab_replace(&d->ids, (uintptr_t)src | TAG, (uintptr_t)n | TAG);
		else if (src->kind == NODE_FILE)
			ver_move(d, &src->u.v, &n->u.v);
		free(src);
	}
	node_set_name(n, k);
	rattach(d, todir, n);
	if (n->kind == NODE_LINK)
		link_hook(d, n);
	return 0;
}

static void rename_ctime(struct dir *d, uint64_t id, uint64_t ctime)
{
	uintptr_t it = id_find(d, id);

	if (it & TAG)
		((struct node *)(it & ~(uintptr_t)TAG))->u.d.ctime = ctime;
	else if (it)
		((struct ver *)it)->ctime = ctime;
}

static int apply_rename(struct restore *r, const uint8_t *body, uint32_t blen)
{
	struct dir *d = r->d;
	struct node *fd, *td, *src, *dst;
	struct nkey from, to;
	struct jb_rename b;
	uint64_t ctime = 0;
	const char *fn;
	int rc;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	if (sizeof(b) + (uint64_t)b.from_len + b.to_len > blen)
		return -EBADMSG;
	fn = (const char *)body + sizeof(b);
	seen_id(r, b.id);
	if (rkey(d, b.from_parent, fn, b.from_len, &from, &fd) ||
	    rkey(d, b.to_parent, fn + b.from_len, b.to_len, &to, &td))
		return -ENOENT;
	src = name_find(d, &from);
	if (src && (src->kind == NODE_DIR ? src->u.d.id : node_ver(d, src)->id) != b.id)
		src = NULL;
	dst = name_find(d, &to);
	/* Two names of one version: rename does nothing (never recorded). */
	if (dst && dst != src && rdrop(d, dst))
		return -ENOTEMPTY;
	if (!src)
		return 0;
	/* A journal older than the ctime after the names has padding only. */
	if (blen - sizeof(b) - b.from_len - b.to_len >= sizeof(ctime))
		memcpy(&ctime, fn + b.from_len + b.to_len, sizeof(ctime));
	rc = rmove(d, src, &to, td);
	if (!rc && ctime)
		rename_ctime(d, b.id, ctime);
	return rc;
}

static int apply_attr(struct restore *r, const void *body, uint32_t blen)
{
	uintptr_t it;
	struct jb_attr b;
	struct node *n;
	struct ver *v;

	if (blen < sizeof(b))
		return -EBADMSG;
	memcpy(&b, body, sizeof(b));
	it = id_find(r->d, b.id);
	if (!it)
		return -ENOENT;
	if (it & TAG) {
		n = (struct node *)(it & ~(uintptr_t)TAG);
		n->u.d.atime = b.atime;
		n->u.d.mtime = b.mtime;
		n->u.d.ctime = b.ctime;
		n->u.d.mode = b.mode;
		n->u.d.uid = b.uid;
		n->u.d.gid = b.gid;
		return 0;
	}
	v = (struct ver *)it;
	v->atime = b.atime;
	v->mtime = b.mtime;
	v->ctime = b.ctime;
	v->mode = b.mode;
	v->uid = b.uid;
	v->gid = b.gid;
	return 0;
}

static int apply(void *arg, uint32_t type, const void *body, uint32_t blen)
{
	struct restore *r = arg;
	struct jb_ids ids;
	int rc;

	switch (type) {
	case JR_DIR:
		rc = apply_dir(r, body, blen);
		break;
	case JR_FILE:
		rc = apply_file(r, body, blen);
		break;
	case JR_REMOVE:
		rc = apply_remove(r, body, blen);
		break;
	case JR_RENAME:
		rc = apply_rename(r, body, blen);
		break;
	case JR_ATTR:
		rc = apply_attr(r, body, blen);
		break;
	case JR_LINK:
		rc = apply_link(r, body, blen);
		break;
	case JR_UNNAME:
		rc = apply_unname(r, body, blen);
		break;
	case JR_SPECIAL:
		rc = apply_special(r, body, blen);
		break;
	case JR_IDS:
		rc = blen < sizeof(ids) ? -EBADMSG : 0;
		if (!rc) {
			memcpy(&ids, body, sizeof(ids));
			if (ids.next_id > r->max_id)
				r->max_id = ids.next_id - 1;
		}
		break;
	default:
		rc = -EBADMSG;
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc && r->st->skipped++ < 10)
		log_warnx("recovery: a journal record (type %u) did not apply: %s", type,
			  strerror(-rc));
	return 0;
}

/* ---- checksums ---- */

static uint64_t ver_hash(const struct ver *v, const uint8_t *base)
{
	struct extent_list tmp;
	const struct extent_list *l = ver_view(v, &tmp);
	XXH3_state_t *st;
	uint64_t left = v->size, h;
	uint32_t i;

	if (!v->size || (l->n && l->v[0].len >= v->size))
		return XXH3_64bits(l->n ? base + l->v[0].off : base, v->size);
	st = XXH3_createState();
	if (!st)
		return ~v->xxh3;	/* unverifiable reads as a mismatch */
	XXH3_64bits_reset(st);
	for (i = 0; i < l->n && left; i++) {
		uint64_t n = l->v[i].len < left ? l->v[i].len : left;

		XXH3_64bits_update(st, base + l->v[i].off, n);
		left -= n;
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

static void drop_bad(struct dir *d, struct ver *v, uint64_t got,
		     struct dir_restore_stats *st)
{
	struct node *n = ver_node(v);

	log_warnx("recovery: dropping '%.*s' (ino %" PRIu64 ", in directory %" PRIu64
		  ", %" PRIu64 " bytes): its bytes hash to %016" PRIx64 ", published as %016"
		  PRIx64, (int)n->nlen, n->name, v->id, n->parent, v->size, got, v->xxh3);
	st->bad_sum++;
	st->bad_sum_bytes += v->size;
	rdrop_ver(d, v);
}

static int verify_all(struct dir *d, const uint8_t *base, struct dir_restore_stats *st)
{
	struct ver **bad = NULL, **nb;
	uint64_t *got = NULL, i, nbad = 0, cap = 0, pos = 0;
	uintptr_t it;

	while ((it = htab_walk(&d->ids, &pos))) {
		struct ver *v = (struct ver *)it;
		uint64_t h;

		/* symlinks and special files have no bytes to check */
		if ((it & TAG) || v->state != DIR_ST_PUBLISHED || !ver_regular(v))
			continue;
		h = ver_hash(v, base);
		if (h == v->xxh3)
			continue;
		if (nbad == cap) {
			cap = cap ? cap * 2 : 16;
			nb = realloc(bad, cap * sizeof(*bad));
			uint64_t *ng = realloc(got, cap * sizeof(*got));

			if (nb)
				bad = nb;
			if (ng)
				got = ng;
			if (!nb || !ng) {
				free(bad);
				free(got);
				return -ENOMEM;
			}
		}
		bad[nbad] = v;
		got[nbad++] = h;
	}
	/* Dropping moves table slots: only after the walk. */
	for (i = 0; i < nbad; i++)
		drop_bad(d, bad[i], got[i], st);
	free(bad);
	free(got);
	return 0;
}

int dir_restore(struct dir *d, struct journal *j, const uint8_t *pool_base,
		struct journal_scan *sc, struct dir_restore_stats *st)
{
	struct restore r = { d, st, DIR_ROOT_ID };
	int rc;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&d->lock);
	rc = journal_scan(j, apply, &r, sc);
	if (!rc)
		rc = verify_all(d, pool_base, st);
	if (r.max_id + 1 > d->next_id)
		d->next_id = r.max_id + 1;
	d->id_mark = d->next_id;
	st->next_id = d->next_id;
	st->dirs = d->ndirs;
	st->files = d->nnames;
	st->bytes = d->used;
	pthread_mutex_unlock(&d->lock);
	return rc;
}
