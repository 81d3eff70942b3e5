/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/hash.h: hash_xxh3(), the checksum of a version's bytes, and a
 * streaming form of it (struct hash_stream) for a writer that hashes the
 * bytes while it copies them, so nobody has to read them again; and
 * hash_mix64(), the finalizer that turns ids into table hashes.
 */
#ifndef MARU_HASH_H
#define MARU_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_xxh3(const void *p, size_t len);

/*
 * A 64-bit finalizer (every input bit reaches every output bit): ids,
 * inode numbers and parent ids are mixed with it before they index a
 * table. Inline: it is on every lookup of marud's directory.
 */
static inline uint64_t hash_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

struct hash_stream;

/* A fresh stream (NULL if out of memory); its digest equals hash_xxh3(). */
struct hash_stream *hash_stream_new(void);
void hash_stream_update(struct hash_stream *h, const void *p, size_t len);
uint64_t hash_stream_digest(const struct hash_stream *h);
void hash_stream_free(struct hash_stream *h);

#endif
