// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/dir/hint.c: what the hint handlers ask of the directory: the
 * extents of a version a session may read (a lease it holds, its own
 * pending version, or any published one) or, for write hints, only of its
 * own pending version. It never grants or changes a lease.
 */
#include <errno.h>

#include "dir_priv.h"

/* -ENOENT unknown, -EPERM not s's to read (or write); one lock hold. */
int dir_hint_extents(struct dir *d, struct dir_session *s, uint64_t ino, int want_write,
		     struct extent_list *out, struct dir_attr *attr)
{
	struct ver *v;
	int mine, ok, rc = 0;

	pthread_mutex_lock(&d->lock);
	v = dir_id_ver(d, ino);
	if (!v) {
		rc = -ENOENT;
		goto out;
	}
	mine = v->state == DIR_ST_PENDING && ver_pend(v)->owner == s;
	ok = want_write ? mine
			: mine || v->state == DIR_ST_PUBLISHED || dir_lease_find(s, ino);
	if (!ok)
		rc = -EPERM;
	else if (dir_ver_extents_copy(v, out))
		rc = -ENOMEM;
	else
		dir_ver_attr(v, dir_ver_parent(v), attr);
out:
	pthread_mutex_unlock(&d->lock);
	return rc;
}
