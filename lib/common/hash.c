/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/hash.c: the content checksum of versions (xxh3-64), in one place
 * so marud, libmaru and the tools agree on it.
 */
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "hash.h"

uint64_t hash_xxh3(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}
