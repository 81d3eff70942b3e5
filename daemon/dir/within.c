// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/dir/within.c: is an id inside a subtree? The question a scoped
 * session (daemon/tenant.h) asks of every id it names, and the one that
 * finds the tenant whose root holds a file. It walks directory parents up
 * to the namespace root: O(depth), under the dir lock.
 */
#include <errno.h>
#include <pthread.h>

#include "dir_priv.h"

/* A version's directory, or 0 for one with no name (orphaned, unattached). */
static int id_parent(const struct dir *d, uint64_t id, uint64_t *dirid)
{
	uintptr_t it = dir_id_find(d, id);

	if (!it)
		return -ENOENT;
	if (it & TAG) {
		*dirid = id;
		return 0;
	}
	*dirid = dir_ver_parent((struct ver *)it);
	return *dirid ? 0 : 1;
}

int dir_within_locked(const struct dir *d, uint64_t id, uint64_t root)
{
	struct node *n;
	uint64_t at;
	unsigned int depth = 0;
	int rc;

	if (root == DIR_ROOT_ID || id == root)
		return dir_id_find(d, id) ? DIR_WITHIN_YES : -ENOENT;
	rc = id_parent(d, id, &at);
	if (rc)
		return rc < 0 ? rc : DIR_WITHIN_UNNAMED;
	/* Directories form a tree rooted at DIR_ROOT_ID; depth bounds a bug. */
	while (at != root && at != DIR_ROOT_ID && at && depth++ < 1u << 20) {
		if (dir_get_dir(d, at, &n))
			return DIR_WITHIN_NO;
		at = n->parent;
	}
	return at == root ? DIR_WITHIN_YES : DIR_WITHIN_NO;
}

int dir_within(struct dir *d, uint64_t id, uint64_t root)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = dir_within_locked(d, id, root);
	pthread_mutex_unlock(&d->lock);
	return rc;
}
