/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/alloc.h: extent allocator over the data area of one pool. It hands
 * out byte ranges of the pool as lists of extents; it never touches pool
 * memory. Not thread-safe: the directory (daemon/dir/) serialises every
 * call.
 *
 * Contract:
 *  - every extent is a multiple of `block` long and starts at a multiple of
 *    `block` (relative to the pool mapping);
 *  - no false ENOSPC: alloc_get() succeeds whenever free bytes >= the rounded
 *    request, whatever the fragmentation (it then returns several extents);
 *  - requests of at least `align` bytes take align-aligned extents first, so
 *    large chunks can be mapped zero-copy (2 MiB for devdax); small requests
 *    take small free ranges first and never consume `align` each;
 *  - free ranges coalesce; cost per call is O(extents touched * log n);
 *  - alloc_grow() (daemon/alloc_grow.c) keeps a growing list mappable as
 *    one range at `align`: its extents join on align boundaries.
 */
#ifndef MARUD_ALLOC_H
#define MARUD_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "extent.h"	/* struct extent, the walk alloc_extent_list_at() uses */

/* A growable extent list owned by the caller. */
struct extent_list {
	struct extent *v;
	uint32_t n, cap;
};

struct alloc;

/*
 * Manage [base, base+size). base, size and align are multiples of block;
 * block is a power of two >= 4096; align a power of two >= block.
 */
int alloc_new(uint64_t base, uint64_t size, uint64_t block, uint64_t align,
	      struct alloc **out);
void alloc_destroy(struct alloc *a);

/*
 * Append extents covering round_up(len, block) bytes to *list. Adjacent
 * extents are merged with the list's last one when contiguous. On -ENOSPC
 * (or -ENOMEM) nothing is allocated and *list is unchanged.
 */
int alloc_get(struct alloc *a, uint64_t len, struct extent_list *list);
/*
 * alloc_get() for a list that grows piece by piece (a pending version),
 * keeping it mappable where the pool maps only whole `align` granules
 * (device-DAX): every extent but the first starts on an align boundary and
 * every extent but the last ends on one. To keep that true at the next
 * call the list is padded to end on a boundary: it may get up to
 * align - block bytes more than asked (alloc_trim() gives them back). A
 * first piece under align is placed to end on a boundary instead (no pad).
 * When the free space has no room of that shape (the bytes after the list
 * are another's and no free align granule is left) it falls back to
 * alloc_get(): never a false -ENOSPC; alloc_unshaped() counts the calls
 * that left a join off a boundary (logged at the 1st, 2nd, 4th, ...). With
 * align == block it is alloc_get().
 */
int alloc_grow(struct alloc *a, uint64_t len, struct extent_list *list);
/* Give back every extent of list (the list itself is left to the caller). */
void alloc_put_list(struct alloc *a, const struct extent_list *list);
void alloc_put(struct alloc *a, uint64_t off, uint64_t len);
/*
 * Shrink list so it covers exactly round_up(keep, block) bytes, freeing the
 * tail. Returns the bytes freed.
 */
uint64_t alloc_trim(struct alloc *a, struct extent_list *list, uint64_t keep);
/*
 * Recovery: mark [off, off+len) used (block-aligned, entirely free), as if
 * handed out by alloc_get(). -EINVAL if any byte of it is not free.
 */
int alloc_claim(struct alloc *a, uint64_t off, uint64_t len);

uint64_t alloc_free_bytes(const struct alloc *a);
uint64_t alloc_capacity(const struct alloc *a);
uint64_t alloc_block(const struct alloc *a);
/* Number of free ranges (fragmentation), and the largest. */
uint64_t alloc_free_ranges(const struct alloc *a);
uint64_t alloc_largest_free(const struct alloc *a);
/* alloc_grow() calls that left a list joined off a boundary (not mappable). */
uint64_t alloc_unshaped(const struct alloc *a);

/*
 * Byte `off` of the file an extent list holds: its pool offset in *pool_off,
 * and the contiguous bytes from there to the end of that extent (0 if off is
 * past the list).
 */
uint64_t alloc_extent_list_at(const struct extent_list *l, uint64_t off, uint64_t *pool_off);
/* Sum of extent lengths. */
uint64_t alloc_extent_list_bytes(const struct extent_list *l);
void alloc_extent_list_free(struct extent_list *l);

#endif
