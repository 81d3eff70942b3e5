/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/superblock.c: sealing and checking the pool superblock. marud seals it
 * after filling uuid and geometry; libmaru checks it on every mapping before
 * trusting any other byte of the pool. The checksum covers every field before
 * it, so a torn or foreign superblock is refused rather than half-believed.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <xxhash.h>

#include "superblock.h"

_Static_assert(sizeof(POOL_MAGIC) - 1 == sizeof(((struct pool_superblock *)0)->magic),
	       "magic fills its field");

static uint64_t sb_sum(const struct pool_superblock *sb)
{
	return XXH64(sb, offsetof(struct pool_superblock, checksum), 0);
}

void pool_sb_seal(struct pool_superblock *sb)
{
	memcpy(sb->magic, POOL_MAGIC, sizeof(sb->magic));
	sb->layout_version = POOL_LAYOUT_VERSION;
	sb->checksum = sb_sum(sb);
}

int pool_sb_check(const struct pool_superblock *sb)
{
	if (memcmp(sb->magic, POOL_MAGIC, sizeof(sb->magic)) != 0)
		return -EINVAL;
	if (sb->layout_version != POOL_LAYOUT_VERSION)
		return -EINVAL;
	if (sb->checksum != sb_sum(sb))
		return -EINVAL;
	return 0;
}
