/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/common/hash.h: hash_xxh3(), the checksum of a version's bytes. */
#ifndef MARU_HASH_H
#define MARU_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_xxh3(const void *p, size_t len);

#endif
