/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/lcache.h: the lease cache is libmaru's (opts.lease_cache,
 * maru_lease_cache_*(), libmaru(3)); marufs turns it on for its client and
 * keeps there the leases of small files closed lately whose inode the
 * kernel still holds. These names remain only for the open-file code
 * (handle.c, pending.c, ns.c, ops.c) until it calls libmaru directly; the
 * cache is m->lc, the mount's client while the cache is on, else NULL (then
 * put closes and take finds nothing, as before). The epoch arguments are
 * not needed any more: libmaru never hands out a lease of a session or
 * generation that ended.
 */
#ifndef MARUFS_LCACHE_H
#define MARUFS_LCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <maru/libmaru.h>

/* A small file: kept in the cache, and stored in the kernel's cache at its
 * publish when it was written around that cache (pending.c). */
#define LCACHE_FILE_MAX	MARU_LEASE_CACHE_FILE_MAX

static inline void lcache_put(struct maru_client *lc, uint64_t ino, uint64_t epoch,
			      struct maru_file *f)
{
	(void)ino;
	(void)epoch;
	if (lc)
		maru_lease_cache_put(f);
	else
		maru_file_close(f);
}

static inline struct maru_file *lcache_take(struct maru_client *lc, uint64_t ino,
					    uint64_t epoch)
{
	struct maru_file *f = NULL;

	(void)epoch;
	return lc && maru_lease_cache_take(lc, ino, &f) == 0 ? f : NULL;
}

static inline void lcache_drop(struct maru_client *lc, uint64_t ino)
{
	maru_lease_cache_drop(lc, ino);
}

static inline void lcache_expire(struct maru_client *lc)
{
	maru_lease_cache_expire(lc);
}

#endif
