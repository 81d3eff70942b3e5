/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/lease_cache.h: the client's cache of leases of small published files
 * (lease_cache.c, opts.lease_cache, maru_lease_cache_*()).
 */
#ifndef MARU_LEASE_CACHE_H
#define MARU_LEASE_CACHE_H

struct maru_client;

/* The cache opts.lease_cache asks for (none when 0): 0 or -ENOMEM. */
int lease_cache_new(struct maru_client *c);
/* Close what is still kept, free the cache: before the client's files go. */
void lease_cache_free(struct maru_client *c);

#endif
