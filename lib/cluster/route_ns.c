// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route_ns.c: the namespace calls of a routed client
 * (route.h). A name goes to its owner (members.c's placement of its path);
 * a lookup that misses there asks where the name was placed before pools
 * joined or drained, and a directory is also looked for on the first pool
 * (one that joined later may lack it). Directories are made, changed and
 * removed on every pool of the membership; rmdir is refused while any
 * pool holds a name under it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client_priv.h"
#include "route_priv.h"

/* dir: the path of directory parent; path: of name in it */
int route_name_path(struct route *r, uint64_t parent, const char *name, char *dir,
		     char *path)
{
	int rc = route_dir_path(r, parent, dir, MARU_PATH_MAX);

	if (rc)
		return rc;
	if (!name || !name[0] || strchr(name, '/'))
		return -EINVAL;
	return route_join(dir, name, path, MARU_PATH_MAX);
}

/* maru_lookup at the pool in slot; a directory that pool lacks: -ENOENT */
static int lookup_at(struct route *r, int slot, uint64_t parent, const char *name,
		     struct maru_attr *a)
{
	struct maru_client *sub;
	uint64_t l;
	int rc = route_at(r, slot, parent, &sub, &l);

	if (!rc)
		rc = r->ops->lookup(sub, l, name, a);
	if (rc == -ESTALE) {	/* the pool restarted: walk to parent again */
		route_dir_local_set(r, parent, (unsigned int)slot, 0);
		rc = route_at(r, slot, parent, &sub, &l);
		if (!rc)
			rc = r->ops->lookup(sub, l, name, a);
	}
	route_pool_heard(r, slot, rc);
	return rc == -ENOTDIR ? -ENOENT : rc;
}

/*
 * A directory is on every pool: looked for on the first pool of the
 * membership not found away lately, unless that is o or p. 0 (in *slot),
 * or -ENOENT.
 */
static int find_dir(struct route *r, int o, int p, uint64_t parent, const char *name,
		    int *slot, struct maru_attr *a)
{
	unsigned int m[ROUTE_POOLS];
	int n = route_members(r, m, ROUTE_POOLS), i;

	for (i = 0; i < n && route_pool_away(r, m[i]); i++)
		;
	if (i == n || (int)m[i] == o || (int)m[i] == p)
		return -ENOENT;
	if (lookup_at(r, (int)m[i], parent, name, a) || a->state != MARU_STATE_DIR)
		return -ENOENT;
	*slot = (int)m[i];
	return 0;
}

/*
 * A file on a pool that joined or came back within ROUTE_SETTLE_S and does
 * not own it: a pool restarted warm holds the names it had, and placement
 * knows one previous owner only. Founders that never left are not asked.
 */
static int find_recent(struct route *r, int o, int p, uint64_t parent, const char *name,
		       int *slot, struct maru_attr *a)
{
	unsigned int m[ROUTE_POOLS], ask[ROUTE_POOLS];
	int n = route_members(r, m, ROUTE_POOLS), i, k = 0;
	int64_t now = (int64_t)time(NULL), first = INT64_MAX, t;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < n; i++)
		if (r->pool[m[i]].rec.since < first)
			first = r->pool[m[i]].rec.since;
	for (i = 0; i < n; i++) {
		const struct route_pool *rp = &r->pool[m[i]];

		t = rp->back_s ? rp->back_s : rp->rec.since;
		if ((int)m[i] != o && (int)m[i] != p && t > now - ROUTE_SETTLE_S &&
		    (rp->back_s || rp->rec.since > first + ROUTE_FORM_S))
			ask[k++] = m[i];
	}
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < k; i++)
		if (!route_pool_away(r, ask[i]) && !lookup_at(r, (int)ask[i], parent, name, a) &&
		    a->state != MARU_STATE_DIR) {
			*slot = (int)ask[i];
			atomic_fetch_add(&r->prev_hits, 1);
			return 0;
		}
	return -ENOENT;
}

/*
 * Where parent/name is: its slot and attributes (the pool's ids). At its
 * owner, else where it was placed before, else on a pool lately back
 * (find_recent); a directory the owner lacks, or
 * whose owner is out of reach, on another pool (find_dir), and first there
 * while the owner is found away: one pool lost must not hide the tree.
 */
int route_find(struct route *r, uint64_t parent, const char *name, const char *path,
	       int *slot, struct maru_attr *a)
{
	int o, p, rc;

	rc = route_owner(r, path, &o, &p);
	if (rc)
		return rc;
	/* its owner found away: a directory first on another pool */
	if (route_pool_away(r, o) && !find_dir(r, o, p, parent, name, slot, a))
		return 0;
	*slot = o;
	rc = lookup_at(r, o, parent, name, a);
	if (rc == -ENOENT && p != o) {
		*slot = p;
		rc = lookup_at(r, p, parent, name, a);
		if (!rc)
			atomic_fetch_add(&r->prev_hits, 1);
	}
	if (rc == -ENOENT && !find_recent(r, o, p, parent, name, slot, a))
		return 0;
	if ((rc == -ENOENT || route_unreachable(rc)) && !find_dir(r, o, p, parent, name, slot, a))
		return 0;
	return rc;
}

int route_lookup(struct maru_client *c, uint64_t parent, const char *name,
		 struct maru_attr *out)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	struct maru_attr a;
	int rc, slot;

	rc = route_name_path(r, parent, name, dir, path);
	if (!rc)
		rc = route_find(r, parent, name, path, &slot, &a);
	if (rc)
		return rc;
	route_fix_attr(r, (unsigned int)slot, parent, path, &a);
	if (out)
		*out = a;
	return 0;
}

/* the router id of the directory holding path ("" for the root's parent) */
static uint64_t parent_of(struct route *r, const char *path)
{
	char d[MARU_PATH_MAX];
	char *s;

	if (!path[0])
		return 0;
	snprintf(d, sizeof(d), "%s", path);
	s = strrchr(d, '/');
	if (s)
		*s = '\0';
	else
		d[0] = '\0';
	return route_dir_intern(r, d);
}

/*
 * A publish on pool sub left *dir, that pool's directory: what it did to
 * the directory as route_getattr() shows it, the first member's. On that
 * pool: its attributes, with the router's ids. On another: nothing, said
 * by dir->ino (the router's id) with attr_size 0. Not known (the first
 * member's id of it not learnt yet): all 0, as from an old marud.
 */
void route_publish_dir(struct maru_client *c, struct maru_client *sub, struct maru_attr *dir)
{
	struct route *r = c->route;
	unsigned int m[ROUTE_POOLS];
	char path[MARU_PATH_MAX];
	int n = route_members(r, m, ROUTE_POOLS), slot = route_slot_of_client(r, sub);
	uint64_t id = slot >= 0 ? route_dir_of_local(r, (unsigned int)slot, dir->ino) : 0;

	if (!id || n < 1 || !route_dir_local_get(r, id, m[0]) ||
	    route_dir_path(r, id, path, sizeof(path))) {
		memset(dir, 0, sizeof(*dir));
		return;
	}
	if ((int)m[0] != slot) {
		memset(dir, 0, sizeof(*dir));
		dir->ino = id;
		return;
	}
	dir->ino = id;
	dir->parent = parent_of(r, path);
}

int route_getattr(struct maru_client *c, uint64_t ino, struct maru_attr *out)
{
	struct route *r = c->route;
	unsigned int m[ROUTE_POOLS];
	char path[MARU_PATH_MAX];
	struct maru_client *sub;
	int slot = route_slot_of(ino), n, i, rc;
	uint64_t l;

	if (slot >= 0) {
		rc = route_sub(r, (unsigned int)slot, &sub);
		if (!rc)
			rc = r->ops->getattr(sub, ino & ROUTE_LOCAL_MASK, out);
		if (!rc)
			route_fix_attr(r, (unsigned int)slot, 0, NULL, out);
		return rc;
	}
	rc = route_dir_path(r, ino, path, sizeof(path));
	if (rc)
		return rc;
	n = route_members(r, m, ROUTE_POOLS);
	for (i = 0, rc = -ENOENT; i < n && rc; i++) {
		rc = route_dir_on(r, ino, m[i], 0, &l);
		if (!rc)
			rc = route_sub(r, m[i], &sub);
		if (!rc)
			rc = r->ops->getattr(sub, l, out);
		if (rc == -ESTALE)
			route_dir_local_set(r, ino, m[i], 0);
	}
	if (!rc) {
		out->ino = ino;
		out->parent = parent_of(r, path);
	}
	return rc;
}

/* setattr of a directory on every pool; out from the first that did */
static int setattr_dir(struct route *r, uint64_t ino, const struct maru_setattr *sa,
		       struct maru_attr *out)
{
	unsigned int m[ROUTE_POOLS];
	struct maru_client *sub;
	struct maru_attr a;
	int n = route_members(r, m, ROUTE_POOLS), i, rc, ok = 0, err = -ENOENT;
	uint64_t l;

	for (i = 0; i < n; i++) {
		rc = route_dir_on(r, ino, m[i], 0, &l);
		if (!rc)
			rc = route_sub(r, m[i], &sub);
		if (!rc)
			rc = r->ops->setattr(sub, l, sa, &a);
		if (rc) {
			err = rc;
			continue;
		}
		if (!ok++ && out) {
			*out = a;
			out->ino = ino;
		}
	}
	return ok ? 0 : err;
}

int route_setattr(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
		  struct maru_attr *out)
{
	struct route *r = c->route;
	struct maru_client *sub;
	int slot = route_slot_of(ino), rc;

	if (slot < 0)
		return setattr_dir(r, ino, sa, out);
	rc = route_sub(r, (unsigned int)slot, &sub);
	if (!rc)
		rc = r->ops->setattr(sub, ino & ROUTE_LOCAL_MASK, sa, out);
	if (!rc && out)
		route_fix_attr(r, (unsigned int)slot, 0, NULL, out);
	return rc;
}

int route_mkdir(struct maru_client *c, uint64_t parent, const char *name,
		uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	unsigned int m[ROUTE_POOLS];
	struct maru_client *sub;
	struct maru_attr a, first;
	int n, i, rc, ok = 0, err = -ENOENT;
	uint64_t l, id;

	rc = route_name_path(r, parent, name, dir, path);
	if (rc)
		return rc;
	if (route_lookup(c, parent, name, NULL) == 0)
		return -EEXIST;
	n = route_members(r, m, ROUTE_POOLS);
	id = route_dir_intern(r, path);
	if (!id)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		rc = route_dir_on(r, parent, m[i], 1, &l);
		if (!rc)
			rc = route_sub(r, m[i], &sub);
		if (!rc)
			rc = r->ops->mkdir(sub, l, name, mode, uid, gid, &a);
		if (rc) {
			err = err == -EEXIST ? err : rc;
			continue;
		}
		route_dir_local_set(r, id, m[i], a.ino);
		if (!ok++)
			first = a;
	}
	if (!ok)
		return err;
	if (out) {
		*out = first;
		out->ino = id;
		out->parent = parent;
	}
	return 0;
}

static int stop_at_first(void *arg, const struct maru_dirent *de)
{
	(void)de;
	*(int *)arg = 1;
	return 1;
}

/* 1 when some pool holds a name in directory id, 0 when none, or -errno */
static int dir_used(struct route *r, uint64_t id, const unsigned int *m, int n)
{
	struct maru_client *sub;
	int i, rc, any = 0;
	uint64_t l;

	for (i = 0; i < n && !any; i++) {
		rc = route_dir_on(r, id, m[i], 0, &l);
		if (rc == -ENOENT)
			continue;
		if (!rc)
			rc = route_sub(r, m[i], &sub);
		if (!rc)
			rc = r->ops->readdir(sub, l, 0, stop_at_first, &any);
		if (rc)
			return rc;
	}
	return any;
}

static void warn_remake(struct route *r, unsigned int slot, const char *name, int rc)
{
	char uuid[sizeof(r->pool[0].rec.uuid)];

	pthread_mutex_lock(&r->lock);
	memcpy(uuid, r->pool[slot].rec.uuid, sizeof(uuid));
	pthread_mutex_unlock(&r->lock);
	clog_warn(r->self, rc, "rmdir of %s met a name made meanwhile; making the "
		  "directory again on pool %s failed", name, uuid);
}

/*
 * rmdir met a name that came under the directory on one pool after the
 * check: make it again on the pools it was removed from, so that it stays
 * whole (its id there is new).
 */
static void rmdir_undo(struct route *r, uint64_t parent, const char *name,
		       const struct maru_attr *a, const unsigned int *gone, int n)
{
	struct maru_client *sub;
	struct maru_attr na;
	uint64_t l;
	int i, rc;

	for (i = 0; i < n; i++) {
		rc = route_at(r, (int)gone[i], parent, &sub, &l);
		if (!rc)
			rc = r->ops->mkdir(sub, l, name, a->mode & 07777, a->uid, a->gid, &na);
		if (!rc)
			route_dir_local_set(r, a->ino, gone[i], na.ino);
		else if (rc != -EEXIST)
			warn_remake(r, gone[i], name, rc);
	}
}

int route_rmdir(struct maru_client *c, uint64_t parent, const char *name)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	unsigned int m[ROUTE_POOLS], gone[ROUTE_POOLS];
	struct maru_client *sub;
	struct maru_attr a;
	int n, i, rc, ok = 0, err = 0;
	uint64_t l;

	rc = route_name_path(r, parent, name, dir, path);
	if (!rc)
		rc = route_lookup(c, parent, name, &a);
	if (rc)
		return rc;
	if (a.state != MARU_STATE_DIR)
		return -ENOTDIR;
	n = route_members(r, m, ROUTE_POOLS);
	rc = dir_used(r, a.ino, m, n);
	if (rc)
		return rc < 0 ? rc : -ENOTEMPTY;
	for (i = 0; i < n && err != -ENOTEMPTY; i++) {
		rc = route_dir_on(r, parent, m[i], 0, &l);
		if (!rc)
			rc = route_sub(r, m[i], &sub);
		if (!rc)
			rc = r->ops->rmdir(sub, l, name);
		if (!rc)
			gone[ok++] = m[i];
		else if (rc != -ENOENT && (!err || rc == -ENOTEMPTY))
			err = rc;
	}
	if (err == -ENOTEMPTY) {
		/* a name came under it on a pool after the check: it stays */
		rmdir_undo(r, parent, name, &a, gone, ok);
		return err;
	}
	route_dir_drop(r, path);
	return err ? err : ok ? 0 : -ENOENT;
}

/* unlink at the pool in slot; a directory that pool lacks: -ENOENT */
static int unlink_at(struct route *r, int slot, uint64_t parent, const char *name)
{
	struct maru_client *sub;
	uint64_t l;
	int rc = route_at(r, slot, parent, &sub, &l);

	if (!rc)
		rc = r->ops->unlink(sub, l, name);
	return rc == -ENOTDIR ? -ENOENT : rc;
}

/* At the owner, else where the name was placed before: one round trip. */
int route_unlink(struct maru_client *c, uint64_t parent, const char *name)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	int rc, o, p;

	rc = route_name_path(r, parent, name, dir, path);
	if (!rc)
		rc = route_owner(r, path, &o, &p);
	if (!rc)
		rc = unlink_at(r, o, parent, name);
	if (rc == -ENOENT && p != o)
		rc = unlink_at(r, p, parent, name);
	return rc;
}

/* Where a new name path goes: its owner's slot, client, and directory there. */
int route_new_at(struct route *r, uint64_t parent, const char *path, int *slot,
		 struct maru_client **sub, uint64_t *local)
{
	int o, p, rc = route_owner(r, path, &o, &p);

	if (!rc)
		rc = route_dir_on(r, parent, (unsigned int)o, 1, local);
	if (!rc)
		rc = route_sub(r, (unsigned int)o, sub);
	*slot = o;
	return rc;
}
