/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/superblock.h: the on-pool layout shared by marud (which writes it) and
 * libmaru (which maps the pool and checks it before touching any byte). The
 * superblock sits at offset 0; marud's metadata area (the directory journal
 * of daemon/persist/, what lets a restarted marud recover the directory) is
 * [meta_off, meta_off + meta_len) and ends at or before data_off; chunk data
 * starts at data_off, a multiple of the pool alignment. Layout 2 added the
 * metadata area; a layout-1 pool is not reused (it gets a fresh superblock).
 */
#ifndef MARU_POOL_FORMAT_H
#define MARU_POOL_FORMAT_H

#include <stdint.h>

#define POOL_MAGIC		"MARUPOOL"
#define POOL_LAYOUT_VERSION	2
#define POOL_SB_SIZE		4096

struct pool_superblock {
	char magic[8];
	uint32_t layout_version;
	uint32_t flags;
	uint8_t uuid[16];
	uint64_t size;		/* whole mapping in bytes */
	uint64_t align;
	uint64_t data_off;
	uint64_t meta_off;	/* metadata area (journal), after the superblock */
	uint64_t meta_len;
	uint64_t generation;	/* of the marud that last opened it */
	uint64_t checksum;	/* xxh64 of the bytes above, seed 0 */
};
_Static_assert(sizeof(struct pool_superblock) == 88, "superblock size");

/* Write magic..generation and the checksum. */
void pool_sb_seal(struct pool_superblock *sb);
/* 0 if magic, version and checksum hold; -EINVAL otherwise. */
int pool_sb_check(const struct pool_superblock *sb);

#endif
