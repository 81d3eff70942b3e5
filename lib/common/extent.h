/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/extent.h: the one offset-to-extent walk. A file's bytes lie in
 * an array of pool extents laid end to end; file byte x is in the extent
 * where the running sum of lengths passes x. marud's allocator, libmaru's
 * shm data path and its zero-copy mapper all walk that way through here.
 * struct proto_extent and struct marufs_extent have this same layout.
 */
#ifndef MARU_EXTENT_H
#define MARU_EXTENT_H

#include <stdint.h>

struct extent {
	uint64_t off;	/* from the start of the pool mapping */
	uint64_t len;
};

/* One contiguous piece of a file range: pool bytes [pool_off, +len). */
struct extent_piece {
	uint64_t pool_off;
	uint64_t len;
	uint64_t file_off;	/* file offset of the piece's first byte */
	uint32_t idx;		/* the extent it lies in */
};

/* Cursor over the pieces of file bytes [off, off+left). */
struct extent_iter {
	const struct extent *v;
	uint32_t n, i;
	uint64_t base;		/* file offset of v[i] */
	uint64_t off, left;
};

void extent_iter_init(struct extent_iter *it, const struct extent *v, uint32_t n,
		      uint64_t off, uint64_t len);
/* 1 with the next piece in *p; 0 at the end (it->left: bytes not covered). */
int extent_iter_next(struct extent_iter *it, struct extent_piece *p);
/*
 * File byte off: its pool offset in *pool_off, and the contiguous bytes
 * from there to the end of its extent (0 if off is past the extents).
 */
uint64_t extent_at(const struct extent *v, uint32_t n, uint64_t off, uint64_t *pool_off);

#endif
