/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/record.c: the directory's side of warm restart, over
 * daemon/persist/persist.h. It describes nodes as struct persist_item for
 * persist/ to record, and hands persist/ the table it reaches the
 * directory through (dir_persist_owner, in replay.c: the lock, the walk below,
 * and replay.c's calls), so calls go from dir/ to persist/ only.
 *
 * Writing: every change that subscribers see as an event is also what the
 * journal must hold, so the one hook is in dir_ev_push() (event.c), called
 * under d->lock at the moment of the change: PUBLISH/REPLACE record the
 * bound version in full (persist/ flushes its data first on dax), UNLINK,
 * EVICT and RMDIR its id, RENAME both names, MKDIR the directory, SETATTR
 * the attributes, SYMLINK and MKNOD the new entry whole (target, rdev),
 * LINK the new name and the version it binds. A name of a version with
 * other names (hard links) is not the version: its UNLINK records that one
 * name (JR_UNNAME; replay promotes another name when the primary goes), an
 * EVICT records the version once, for its primary name, and replay drops
 * every name with it; publishing or renaming over a shared name needs
 * nothing more, since replay drops only the name a JR_FILE or JR_RENAME
 * lands on. TTL pins are JR_PIN records written by pinver.c; a checkpoint
 * lists every pin after the names. Pending versions, leases and sessions are never recorded: they
 * do not survive a restart. Changes that grow the state ask
 * dir_record_room() first (persist_room: checkpoint early or -ENOSPC).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dir_priv.h"
#include "log.h"
#include "persist.h"

/* ---- nodes as items ---- */

static void it_attr(struct persist_item *it, uint64_t id, uint64_t a, uint64_t m,
		      uint64_t c, uint32_t mode, uint32_t uid, uint32_t gid)
{
	it->id = id;
	it->atime = a;
	it->mtime = m;
	it->ctime = c;
	it->mode = mode;
	it->uid = uid;
	it->gid = gid;
}

static void item_ver(struct persist_item *it, const struct ver *v)
{
	it_attr(it, v->id, v->atime, v->mtime, v->ctime, v->mode, v->uid, v->gid);
}

/* A bound node as the record that recreates it (JR_DIR, FILE, SPECIAL, LINK). */
static void item_of(const struct dir *d, const struct node *n, struct persist_item *it,
		    struct extent_list *tmp)
{
	const struct ver *v = &n->u.v;
	const struct extent_list *l;

	*it = (struct persist_item){ .at = { n->parent, n->name, n->nlen } };
	if (n->kind == NODE_DIR) {
		it->type = JR_DIR;
		it_attr(it, n->u.d.id, n->u.d.atime, n->u.d.mtime, n->u.d.ctime,
			  n->u.d.mode, n->u.d.uid, n->u.d.gid);
	} else if (n->kind == NODE_LINK) {
		v = dir_node_ver(d, (struct node *)n);
		it->type = JR_LINK;
		it->id = n->u.l.target;
		it->ctime = v ? v->ctime : 0;
	} else if (ver_regular(v)) {
		l = ver_view(v, tmp);
		it->type = JR_FILE;
		item_ver(it, v);
		it->size = v->size;
		it->xxh3 = v->xxh3;
		it->ext = l->v;
		it->next = l->n;
	} else {
		it->type = JR_SPECIAL;
		item_ver(it, v);
		it->size = v->size;
		it->tlen = S_ISLNK(v->mode) ? (uint32_t)v->size : 0;
		/* only a symlink has a target (ext is rdev otherwise) */
		if (it->tlen)
			it->target = v->ext.target;
		else
			it->rdev = v->ext.rdev;
	}
}

/* A directory's or version's attributes (JR_ATTR); -ENOENT if it is 0. */
static int it_attr_of(uintptr_t it, struct persist_item *out)
{
	const struct node *n = (const struct node *)(it & ~(uintptr_t)TAG);

	if (!it)
		return -ENOENT;
	*out = (struct persist_item){ .type = JR_ATTR };
	if (it & TAG)
		it_attr(out, n->u.d.id, n->u.d.atime, n->u.d.mtime, n->u.d.ctime,
			  n->u.d.mode, n->u.d.uid, n->u.d.gid);
	else
		item_ver(out, (const struct ver *)it);
	return 0;
}

/* ---- recording changes ---- */

static void record_file(struct dir *d, uint64_t ino, const char *op)
{
	struct ver *v = dir_id_ver(d, ino);
	struct persist_item it;
	struct extent_list tmp;

	if (!v || v->state != DIR_ST_PUBLISHED)
		return;
	item_of(d, ver_node(v), &it, &tmp);
	persist_write_file(d->p, &it, op);
}

/* The node an event names (still bound when the event is pushed). */
static struct node *ev_target(const struct dir *d, const struct evname *a)
{
	struct nkey k;

	if (!a)
		return NULL;
	dir_nkey_set(&k, a->parent, a->name, a->nlen);
	return dir_name_find(d, &k);
}

/*
 * UNLINK, EVICT and RMDIR come before the change. A name of a version
 * with other names is one JR_UNNAME; an eviction drops every name,
 * recorded once, at the primary name's event (replay drops the links).
 */
static void record_drop(struct dir *d, uint32_t type, uint64_t ino,
			const struct evname *a, const char *op)
{
	struct node *n = ev_target(d, a);
	struct persist_item it = { .type = JR_REMOVE, .why = type, .id = ino };

	if (type == DEV_EVICT && n && n->kind == NODE_LINK)
		return;
	if (type == DEV_UNLINK && n && n->kind != NODE_DIR && dir_node_shared(d, n)) {
		it.type = JR_UNNAME;
		it.at = (struct persist_name){ a->parent, a->name, (uint32_t)a->nlen };
	}
	persist_write(d->p, &it, op, 1);
}

/* SYMLINK, MKNOD, LINK: after the change, from the new node. */
static void record_new_name(struct dir *d, uint32_t type, const struct evname *a)
{
	struct node *n = ev_target(d, a);
	const char *op = type == DEV_LINK ? "link" : type == DEV_SYMLINK ? "symlink" : "mknod";
	struct persist_item it;
	struct extent_list tmp;

	if (n && ((type == DEV_LINK && n->kind == NODE_LINK) ||
		  (type != DEV_LINK && n->kind == NODE_FILE && !ver_regular(&n->u.v)))) {
		item_of(d, n, &it, &tmp);
		persist_write(d->p, &it, op, 0);
	} else {
		log_warnx("journal: %s not recorded: no such name", op);
	}
}

static void record_rename(struct dir *d, uint64_t ino, const struct evname *a,
			  const struct evname *b)
{
	struct persist_item it = { 0 };

	/* the moved item's ctime follows the names (a rename changes it) */
	it_attr_of(dir_id_find(d, ino), &it);
	it.type = JR_RENAME;
	it.id = ino;
	it.at = (struct persist_name){ a->parent, a->name, (uint32_t)a->nlen };
	it.to = (struct persist_name){ b->parent, b->name, (uint32_t)b->nlen };
	persist_write(d->p, &it, "rename", 0);
}

static void record_other(struct dir *d, uint32_t type, uint64_t ino,
			 const struct evname *a, const struct evname *b)
{
	struct persist_item it;
	struct extent_list tmp;
	struct node *n;

	switch (type) {
	case DEV_MKDIR:
		n = dir_id_dir(d, ino);
		if (n) {
			item_of(d, n, &it, &tmp);
			persist_write(d->p, &it, "mkdir", 0);
		}
		break;
	case DEV_RENAME:
		if (a && b)
			record_rename(d, ino, a, b);
		break;
	case DEV_SETATTR:
		if (!it_attr_of(dir_id_find(d, ino), &it))
			persist_write(d->p, &it, "setattr", 0);
		break;
	case DEV_SYMLINK:
	case DEV_LINK:
	case DEV_MKNOD:
		record_new_name(d, type, a);
		break;
	}
}

void dir_record_event(struct dir *d, uint32_t type, uint64_t ino,
		      const struct evname *a, const struct evname *b)
{
	if (!d->p)
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
		record_drop(d, type, ino, NULL, "rmdir");
		break;
	default:
		record_other(d, type, ino, a, b);
	}
}

int dir_record_room(struct dir *d, uint32_t type, size_t nlen, uint32_t next)
{
	int rc = persist_room(d->p, type, nlen, next, d->nnames, d->ndirs);

	if (rc == -ENOSPC)
		d->st.enospc++;
	return rc;
}

void dir_record_ids(struct dir *d)
{
	persist_ids(d->p, d->next_id);
}

/* ---- the table persist/ reaches the directory through ---- */

static int walk_links(struct dir *d, persist_emit_fn emit, void *arg)
{
	struct persist_item it;
	struct extent_list tmp;
	struct rb_node *r;
	int rc = 0;

	for (r = rb_first(&d->links); r && !rc; r = rb_next(r)) {
		item_of(d, container_of(r, struct node, u.l.rb), &it, &tmp);
		rc = emit(arg, &it);
	}
	return rc;
}

struct pin_emit {
	persist_emit_fn emit;
	void *arg;
};

static int emit_pin(void *arg, const struct ttlpin *p)
{
	struct pin_emit *e = arg;
	struct persist_item it = { .type = JR_PIN, .id = p->id, .until = p->until_ns,
				   .tenant = p->tenant };

	return e->emit(e->arg, &it);
}

/* Every pin, with its deadline: a checkpoint keeps them (pinver.c). */
static int walk_pins(struct dir *d, persist_emit_fn emit, void *arg)
{
	struct pin_emit e = { emit, arg };

	return ttlpin_walk(&d->pins, emit_pin, &e);
}

/* Push c on the stack of directories still to walk. */
static int walk_push(const struct node ***stack, size_t *top, size_t *cap,
		     const struct node *c)
{
	const struct node **ns;

	if (*top == *cap) {
		ns = realloc(*stack, *cap * 2 * sizeof(**stack));
		if (!ns)
			return -ENOMEM;
		*stack = ns;
		*cap *= 2;
	}
	(*stack)[(*top)++] = c;
	return 0;
}

/* Every directory before its children, depth first (explicit stack); links wait. */
static int walk_tree(struct dir *d, persist_emit_fn emit, void *arg)
{
	const struct node **stack;
	size_t top = 0, cap = 64;
	struct persist_item it;
	struct extent_list tmp;
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

			if (c->kind == NODE_LINK)
				continue;
			item_of(d, c, &it, &tmp);
			rc = emit(arg, &it);
			if (!rc && c->kind == NODE_DIR)
				rc = walk_push(&stack, &top, &cap, c);
		}
	}
	free(stack);
	return rc;
}

int dir_record_walk(void *dir, persist_emit_fn emit, void *arg)
{
	struct dir *d = dir;
	struct persist_item root;
	int rc;

	it_attr_of((uintptr_t)d->root | TAG, &root);
	rc = emit(arg, &root);
	if (!rc)
		rc = walk_tree(d, emit, arg);
	if (!rc)
		rc = walk_links(d, emit, arg);
	if (!rc)
		rc = walk_pins(d, emit, arg);
	return rc;
}

uint64_t dir_record_id_next(void *dir)
{
	return ((struct dir *)dir)->next_id;
}

void dir_set_persist(struct dir *d, struct persist *p)
{
	pthread_mutex_lock(&d->lock);
	d->p = p;
	pthread_mutex_unlock(&d->lock);
}
