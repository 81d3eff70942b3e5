/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/rewrite.h: where a new version of a name comes from (rewrite.c), for
 * pendslot.c: the pending a write-open or create gets and the one a
 * copy-on-write switches to. (The version a truncate of a file nobody here
 * writes publishes is pending.h's pend_truncate_ino().)
 */
#ifndef MARUFS_REWRITE_H
#define MARUFS_REWRITE_H

#include <stdint.h>
#include <sys/types.h>

#include "mount.h"

struct pending;

/*
 * The pending a writer of inode ino must use (ref taken). Returns 1 when the
 * caller must truncate it once attached (O_TRUNC on a pending that has
 * bytes); *moved: the kernel's inode is not the version served (direct_io).
 */
int rewrite_for_open(struct mfs *m, uint64_t ino, int trunc, struct pending **out,
		     int *moved);
/* The same for a create of (parent, name) by the request's caller. */
int rewrite_for_create(struct mfs *m, uint64_t parent, const char *name, mode_t mode,
		       uid_t uid, gid_t gid, int flags, struct pending **out);
/*
 * A writer on old (published or abandoned since) writes again: the name's
 * live pending, a new rewrite of what is published, or a private detached
 * copy when the name moved on (ref taken). tag makes the copy's name unique.
 */
int rewrite_for_cow(struct mfs *m, struct pending *old, uint64_t tag, struct pending **out);

#endif
