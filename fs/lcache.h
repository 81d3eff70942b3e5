/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/lcache.h: leases of small files closed lately, for the next open of
 * their inode (lcache.c).
 */
#ifndef MARUFS_LCACHE_H
#define MARUFS_LCACHE_H

#include <stdint.h>

#include <maru/libmaru.h>

struct lcache;

/* A small file: kept here, and stored in the kernel's cache at its publish
 * when it was written around that cache (pending.c). */
#define LCACHE_FILE_MAX	(64u * 1024)

int lcache_new(struct lcache **out);
/* Closes what is still cached: before the client goes. */
void lcache_free(struct lcache *lc);
/* The byte budget, a share of a pool of pool_size bytes. */
void lcache_set_budget(struct lcache *lc, uint64_t pool_size);
/* Keep lease f of version ino (the kernel holds that inode), taken in pool
 * epoch epoch; f is the cache's now (closed at once when it does not fit). */
void lcache_put(struct lcache *lc, uint64_t ino, uint64_t epoch, struct maru_file *f);
/* The lease kept for ino, now the caller's; NULL when none (of this epoch). */
struct maru_file *lcache_take(struct lcache *lc, uint64_t ino, uint64_t epoch);
/* The kernel forgot ino, or its version went: close what is kept for it. */
void lcache_drop(struct lcache *lc, uint64_t ino);
/* Close the leases kept longer than their time. */
void lcache_expire(struct lcache *lc);
void lcache_drop_all(struct lcache *lc);
unsigned int lcache_count(struct lcache *lc);

#endif
