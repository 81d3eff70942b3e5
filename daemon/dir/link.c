/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/link.c: the names that are not one plain file: hard links,
 * symbolic links and special files. A hard link is one more name bound to
 * a published version: the node that holds the version (struct ver inline)
 * is its primary name, every other name is a NODE_LINK node naming the
 * version by id, kept in d->links by (version id, cookie) so the names of
 * a version are found in O(log n). When the primary name goes, another
 * name is promoted to hold the version (dir_ver_move); when the version is
 * evicted, every name goes at once. Symlinks and special files (FIFOs,
 * sockets, devices) are published versions with no extents: no pool
 * memory, never on the LRU; a symlink keeps its target on the heap.
 * Called with d->lock held, except the dir_* calls which take it.
 *
 * The index of link nodes (d->links) and dropping every extra name at an
 * eviction are links.c's; which version a name binds is node.c's.
 *
 * It also owns the set-group-ID rule every new entry follows
 * (dir_inherit_group: mkdir, create, symlink, mknod).
 *
 * Mutation points (for the journal): dir_link (name bound to a version),
 * dir_symlink and dir_mknod (new entry), dir_link_drop_name (one name of a
 * shared version removed: unlink, replace or rename over it),
 * dir_link_drop_all (eviction removes every name).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "dir_priv.h"
#include "persist.h"
#include "log.h"

/* The version lost a name: subscribers re-read its nlink and ctime. */
static void ver_lost_name(struct dir *d, struct node *primary)
{
	struct ver *v = &primary->u.v;

	v->links--;
	v->ctime = now_ns();
	dir_ev_node(d, DEV_SETATTR, v->id, primary);
}

void dir_link_drop_name(struct dir *d, struct node *n)
{
	struct node *l;
	struct ver *v;

	if (n->kind == NODE_LINK) {
		dir_link_unhook(d, n);
		dir_node_detach(d, n);
		ver_lost_name(d, dir_node_primary(d, n));
	} else {
		/* n holds the version: another name takes it over. */
		v = &n->u.v;
		l = dir_link_first(d, v->id);
		if (!l)
			log_fatalx("dir: shared version without a link node");
		dir_link_unhook(d, l);
		dir_lru_del(d, v);
		dir_node_detach(d, n);
		dir_ver_move(d, v, &l->u.v);
		l->kind = NODE_FILE;
		ver_lost_name(d, l);
		dir_lru_settle(d, l);
		/* Its bytes now count where the name that holds it lives. */
		dir_quota_follow(d, l);
	}
	d->nnames--;
	free(n);
}

void dir_inherit_group(const struct node *pd, uint32_t *gid, uint32_t *mode)
{
	if (!pd || pd->kind != NODE_DIR || !(pd->u.d.mode & S_ISGID))
		return;
	*gid = pd->u.d.gid;
	if (mode)
		*mode |= S_ISGID;
}

/* ---- hard links ---- */

static int link_locked(struct dir *d, struct dir_session *s, uint64_t ino,
		       uint64_t parent, const char *name, size_t nlen,
		       struct dir_attr *out)
{
	struct node *pd, *n;
	struct nkey k;
	struct ver *v;
	int rc;

	v = dir_id_ver(d, ino);
	if (!v)
		return dir_id_dir(d, ino) ? -EPERM : -ENOENT;
	/* Pending: not bound anywhere yet; orphaned: its name is gone. */
	if (v->state != DIR_ST_PUBLISHED)
		return -ENOENT;
	rc = dir_name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	if (dir_name_find(d, &k) || dir_pend_find(d, s, &k))
		return -EEXIST;
	if (v->links == UINT16_MAX)
		return -EMLINK;
	if ((rc = dir_record_room(d, JR_LINK, nlen, 0)) != 0)
		return rc;
	if (dir_index_reserve(d))
		return -ENOMEM;
	n = dir_node_alloc(nlen);
	if (!n)
		return -ENOMEM;
	dir_node_set_name(n, &k);
	n->kind = NODE_LINK;
	n->cookie = d->next_cookie++;
	n->u.l.target = v->id;
	dir_node_attach(d, pd, n);
	dir_link_hook(d, n);
	v->links++;
	v->ctime = now_ns();
	d->nnames++;
	dir_ev_node(d, DEV_LINK, v->id, n);
	dir_ver_attr(v, parent, out);
	return 0;
}

int dir_link(struct dir *d, struct dir_session *s, uint64_t ino, uint64_t parent,
	     const char *name, size_t nlen, struct dir_attr *out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = link_locked(d, s, ino, parent, name, nlen, out);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* ---- symlinks and special files ---- */

struct special {
	uint32_t mode, uid, gid, type;
	uint64_t size, rdev;
	char *target;		/* consumed on success */
};

static int special_locked(struct dir *d, struct dir_session *s, uint64_t parent,
			  const char *name, size_t nlen, struct special *sp,
			  struct dir_attr *out)
{
	struct node *pd, *n;
	struct nkey k;
	uint64_t t = now_ns();
	int rc;

	rc = dir_name_key(d, parent, name, nlen, &k, &pd);
	if (rc)
		return rc;
	if (dir_name_find(d, &k) || dir_pend_find(d, s, &k))
		return -EEXIST;
	if ((rc = dir_record_room(d, JR_SPECIAL, nlen + (sp->target ? sp->size : 0), 0)) != 0)
		return rc;
	if (dir_index_reserve(d))
		return -ENOMEM;
	n = dir_node_alloc(nlen);
	if (!n)
		return -ENOMEM;
	dir_inherit_group(pd, &sp->gid, NULL);
	dir_node_set_name(n, &k);
	n->kind = NODE_FILE;
	n->cookie = d->next_cookie++;
	n->u.v.id = d->next_id++;
	n->u.v.state = DIR_ST_PUBLISHED;
	n->u.v.mode = sp->mode;
	n->u.v.uid = sp->uid;
	n->u.v.gid = sp->gid;
	n->u.v.size = sp->size;
	n->u.v.atime = n->u.v.mtime = n->u.v.ctime = t;
	if (sp->target)
		n->u.v.ext.target = sp->target;
	else
		n->u.v.ext.rdev = sp->rdev;
	sp->target = NULL;
	dir_id_place_ver(d, &n->u.v);
	dir_node_attach(d, pd, n);
	d->nnames++;
	d->nvers++;
	dir_ev_node(d, sp->type, n->u.v.id, n);
	dir_ver_attr(&n->u.v, parent, out);
	return 0;
}

static int special_new(struct dir *d, struct dir_session *s, uint64_t parent,
		       const char *name, size_t nlen, struct special *sp,
		       struct dir_attr *out)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = special_locked(d, s, parent, name, nlen, sp, out);
	pthread_mutex_unlock(&d->lock);
	free(sp->target);
	return rc;
}

int dir_symlink(struct dir *d, struct dir_session *s, uint64_t parent,
		const char *name, size_t nlen, const char *target, size_t tlen,
		uint32_t uid, uint32_t gid, struct dir_attr *out)
{
	struct special sp = { S_IFLNK | 0777, uid, gid, DEV_SYMLINK, tlen, 0, NULL };

	if (!target || tlen == 0 || memchr(target, '\0', tlen))
		return -EINVAL;
	if (tlen >= PROTO_PATH_MAX)
		return -ENAMETOOLONG;
	sp.target = malloc(tlen + 1);
	if (!sp.target)
		return -ENOMEM;
	memcpy(sp.target, target, tlen);
	sp.target[tlen] = '\0';
	return special_new(d, s, parent, name, nlen, &sp, out);
}

int dir_mknod(struct dir *d, struct dir_session *s, uint64_t parent,
	      const char *name, size_t nlen, uint32_t mode, uint32_t rdev,
	      uint32_t uid, uint32_t gid, struct dir_attr *out)
{
	struct special sp = { mode & (S_IFMT | 07777), uid, gid, DEV_MKNOD, 0, 0, NULL };

	if (!S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) && !S_ISBLK(mode))
		return -EINVAL;
	if (S_ISCHR(mode) || S_ISBLK(mode))
		sp.rdev = rdev;
	return special_new(d, s, parent, name, nlen, &sp, out);
}

int dir_readlink(struct dir *d, uint64_t ino, char *buf, size_t cap)
{
	struct ver *v;
	int rc;

	pthread_mutex_lock(&d->lock);
	v = dir_id_ver(d, ino);
	if (!v)
		rc = dir_id_dir(d, ino) ? -EINVAL : -ENOENT;
	else if (!S_ISLNK(v->mode) || v->state == DIR_ST_PENDING)
		rc = -EINVAL;
	else if (v->size > cap)
		rc = -ERANGE;
	else {
		memcpy(buf, v->ext.target, v->size);
		rc = (int)v->size;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}
