// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route_link.c: symlinks, hard links, special files and the
 * batch existence check of a routed client (route.h). A new name goes to
 * its owner; a hard link only where its version is (-EXDEV when the new
 * name's owner is another pool: a version is in one pool's memory).
 */
#include <errno.h>
#include <stdlib.h>

#include "client_priv.h"
#include "route_priv.h"

int route_symlink(struct maru_client *c, uint64_t parent, const char *name,
		  const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	struct maru_client *sub;
	struct maru_attr a;
	uint64_t l;
	int rc, slot;

	rc = route_name_path(r, parent, name, dir, path);
	if (!rc)
		rc = route_new_at(r, parent, path, &slot, &sub, &l);
	if (!rc)
		rc = r->ops->symlink(sub, l, name, target, uid, gid, &a);
	if (!rc && out) {
		route_fix_attr(r, (unsigned int)slot, parent, path, &a);
		*out = a;
	}
	return rc;
}

int route_mknod(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	struct maru_client *sub;
	struct maru_attr a;
	uint64_t l;
	int rc, slot;

	rc = route_name_path(r, parent, name, dir, path);
	if (!rc)
		rc = route_new_at(r, parent, path, &slot, &sub, &l);
	if (!rc)
		rc = r->ops->mknod(sub, l, name, mode, rdev, uid, gid, &a);
	if (!rc && out) {
		route_fix_attr(r, (unsigned int)slot, parent, path, &a);
		*out = a;
	}
	return rc;
}

int route_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size)
{
	struct route *r = c->route;
	struct maru_client *sub;
	int slot = route_slot_of(ino), rc;

	if (slot < 0)
		return -EINVAL;
	rc = route_sub(r, (unsigned int)slot, &sub);
	return rc ? rc : r->ops->readlink(sub, ino & ROUTE_LOCAL_MASK, buf, size);
}

int route_link(struct maru_client *c, uint64_t ino, uint64_t np, const char *nn,
	       struct maru_attr *out)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	struct maru_client *sub;
	struct maru_attr a;
	int slot = route_slot_of(ino), o, rc;
	uint64_t l;

	if (slot < 0)
		return -EPERM;
	rc = route_name_path(r, np, nn, dir, path);
	if (!rc)
		rc = route_new_at(r, np, path, &o, &sub, &l);
	if (!rc && o != slot)
		rc = -EXDEV;
	if (!rc)
		rc = r->ops->link(sub, ino & ROUTE_LOCAL_MASK, l, nn, &a);
	if (!rc && out) {
		route_fix_attr(r, (unsigned int)slot, np, path, &a);
		*out = a;
	}
	return rc;
}

int route_exists(struct maru_client *c, uint64_t parent, const char *const *names,
		 size_t n, uint8_t *out)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		rc = route_lookup(c, parent, names[i], NULL);
		if (rc && rc != -ENOENT)
			return rc;
		out[i] = rc == 0;
	}
	return 0;
}
