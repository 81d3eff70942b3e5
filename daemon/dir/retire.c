// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/dir/retire.c: the directory's one call out when pool bytes are
 * freed (dir_opts.retire), made before the allocator may hand them out
 * again, so that whatever sits in front of the memory (a region
 * extension's cache) can forget their old contents. Called with d->lock
 * held; the callback must answer from local state.
 */
#include <errno.h>

#include "dir_priv.h"

void dir_retire(struct dir *d, uint64_t off, uint64_t len)
{
	if (d->o.retire && len)
		d->o.retire(d->o.retire_arg, off, len);
}

void dir_retire_list(struct dir *d, const struct extent_list *l)
{
	uint32_t i;

	for (i = 0; d->o.retire && l && i < l->n; i++)
		dir_retire(d, l->v[i].off, l->v[i].len);
}

/* The bytes of l past round_up(keep) that a trim to keep will free. */
void dir_retire_tail(struct dir *d, const struct extent_list *l, uint64_t keep)
{
	uint64_t at = 0;
	uint32_t i;

	for (i = 0; d->o.retire && i < l->n; i++) {
		uint64_t len = l->v[i].len;

		if (at + len > keep) {
			uint64_t skip = keep > at ? keep - at : 0;

			dir_retire(d, l->v[i].off + skip, len - skip);
		}
		at += len;
	}
}
