/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/pool/shm.c: the shm: backend, marud's default and what the tests
 * use. pool.c has already turned shm:NAME into /dev/shm/NAME (checking the
 * name); opening, sizing (default min(RAM/4, free /dev/shm / 2), rounded
 * down to 2 MiB, at least 64 MiB), claiming with flock and mapping a tmpfs
 * file is exactly the file: backend's work, so it is borrowed from
 * pool_file_ops (closing is pool.c's, the same for all). Only persist
 * differs.
 */
#include "config.h"

#include "pool.h"

static int shm_open_pool(struct pool *p, uint64_t size)
{
	return pool_file_ops.open(p, size);
}

/*
 * tmpfs pages are the memory every mapper shares: a store is visible to all
 * of them at once and there is no backing store to write back to.
 */
static int shm_persist(struct pool *p, uint64_t off, uint64_t len)
{
	return 0;
}

const struct pool_backend_ops pool_shm_ops = {
	.scheme = "shm",
	.kind = POOL_SHM,
	.open = shm_open_pool,
	.persist = shm_persist,
};
