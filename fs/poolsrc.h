/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/poolsrc.h: the pool file as a reply's source (poolsrc.c).
 */
#ifndef MARUFS_POOLSRC_H
#define MARUFS_POOLSRC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mount.h"

/* The process's read-only pool descriptor for marud generation gen, or -1
 * (not shm with coherent memory, or not the pool the session maps). */
int poolsrc_fd(struct mfs *m, uint64_t gen);
/* The superblock at fd says pool pi->uuid, generation gen. */
int poolsrc_is(int fd, const struct maru_pool_info *pi, uint64_t gen);
/* Up to max bufs of fd at the pool offsets of file bytes [off, off+len) of
 * a version with extents ext[0..n): 0, or -EAGAIN (more pieces than max, or
 * the extents end first). */
int poolsrc_bufs(struct fuse_bufvec *bv, size_t max, int fd, const struct maru_extent *ext,
		 ssize_t n, uint64_t off, uint64_t len);

#endif
