/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/pool_fixture.h: one small pool (a sealed /dev/shm
 * file with patterned bytes), one file laid out over three extents, and a
 * shm-path client and handle built by hand around them, shared by the tests
 * that drive the common extent walk and cache flush through their callers.
 */
#ifndef TEST_POOL_FIXTURE_H
#define TEST_POOL_FIXTURE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_priv.h"
#include "dp/datapath.h"
#include "extent.h"
#include "pool_locate.h"
#include "superblock.h"

#define FX_POOL		(1u << 20)
#define FX_GEN		7u
#define FX_NEXT		3
/* page-aligned so maru_map can stitch them; the file ends inside the last */
static const struct extent fx_ext[FX_NEXT] = {
	{ 8192, 4096 }, { 65536, 8192 }, { 20480, 8192 },
};
#define FX_SIZE		(4096u + 8192u + 5000u)

struct fx {
	char path[64];
	int fd;
	uint8_t *base;
	struct pool_map map;
	struct maru_client c;
	struct maru_file f;
	struct proto_extent ext[FX_NEXT];
};

static inline uint8_t fx_pattern(uint64_t pool_off)
{
	return (uint8_t)(pool_off * 7 + 3);
}

/* The pool offset of file byte k, the slow way. */
static inline uint64_t fx_where(uint64_t k)
{
	for (int i = 0; i < FX_NEXT; i++) {
		if (k < fx_ext[i].len)
			return fx_ext[i].off + k;
		k -= fx_ext[i].len;
	}
	return UINT64_MAX;
}

static inline void fx_setup(struct fx *x, enum maru_coherence coh)
{
	struct pool_superblock *sb;

	memset(x, 0, sizeof(*x));
	snprintf(x->path, sizeof(x->path), "/dev/shm/maru-fx-%ld", (long)getpid());
	x->fd = open(x->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (x->fd < 0 || ftruncate(x->fd, FX_POOL))
		abort();
	x->base = mmap(NULL, FX_POOL, PROT_READ | PROT_WRITE, MAP_SHARED, x->fd, 0);
	if (x->base == MAP_FAILED)
		abort();
	for (uint64_t i = POOL_SB_SIZE; i < FX_POOL; i++)
		x->base[i] = fx_pattern(i);
	sb = (struct pool_superblock *)x->base;
	memcpy(sb->magic, POOL_MAGIC, sizeof(sb->magic));
	sb->layout_version = POOL_LAYOUT_VERSION;
	memset(sb->uuid, 0x5a, sizeof(sb->uuid));
	sb->size = FX_POOL;
	sb->align = 4096;
	sb->data_off = POOL_SB_SIZE;
	sb->generation = FX_GEN;
	pool_sb_seal(sb);
	x->map.base = x->base;
	x->map.size = FX_POOL;
	x->c.map = &x->map;
	x->c.dp = &dp_shm_ops;
	x->c.opts.coherence = coh;
	pthread_rwlock_init(&x->c.dp_lock, NULL);
	memcpy(x->ext, fx_ext, sizeof(x->ext));
	x->f.c = &x->c;
	x->f.ext = x->ext;
	x->f.next = FX_NEXT;
	x->f.size = FX_SIZE;
	x->f.reserved = 4096 + 8192 + 8192;
	x->f.generation = FX_GEN;
	x->f.pending = 1;
	x->f.dirty_lo = UINT64_MAX;
	pthread_rwlock_init(&x->f.lock, NULL);
}

static inline void fx_teardown(struct fx *x)
{
	pthread_rwlock_destroy(&x->f.lock);
	pthread_rwlock_destroy(&x->c.dp_lock);
	munmap(x->base, FX_POOL);
	close(x->fd);
	unlink(x->path);
}

#endif
