/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/chunk.h: the self-checking chunk format of the
 * fault and soak tools. A chunk is a 32-byte header (magic, seed, total
 * length, XXH3 of the body) followed by a body derived from the seed, so
 * any reader can tell a whole version from a partial, torn or mixed one
 * without knowing what was written: a version is whole when its size is the
 * header's length and the body hashes to the header's sum. Header-only, so
 * every tool stays one source file in the meson dict.
 */
#ifndef MARU_CHUNK_H
#define MARU_CHUNK_H

#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#define CHUNK_MAGIC	0x314b48435552414dULL	/* "MARUCHK1" */
#define CHUNK_HDR	32u

struct chunk_hdr {
	uint64_t magic, seed, len, sum;
};
_Static_assert(sizeof(struct chunk_hdr) == CHUNK_HDR, "chunk header size");

/* Fill buf (len >= CHUNK_HDR bytes) with the chunk of that seed. */
static inline void chunk_make(uint8_t *buf, size_t len, uint64_t seed)
{
	struct chunk_hdr h = { CHUNK_MAGIC, seed, len, 0 };
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	size_t i;

	for (i = CHUNK_HDR; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	h.sum = XXH3_64bits(buf + CHUNK_HDR, len - CHUNK_HDR);
	memcpy(buf, &h, sizeof(h));
}

/*
 * 0 when buf[0..len) is one whole chunk (its seed in *seed), else a
 * negative code; why says what is wrong.
 */
static inline int chunk_check(const uint8_t *buf, size_t len, uint64_t *seed,
			      const char **why)
{
	struct chunk_hdr h;

	if (len < CHUNK_HDR) {
		*why = "shorter than a chunk header";
		return -1;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != CHUNK_MAGIC) {
		*why = "no chunk magic (torn or zero-filled head)";
		return -2;
	}
	if (h.len != len) {
		*why = "size differs from the header's length (partial version)";
		return -3;
	}
	if (XXH3_64bits(buf + CHUNK_HDR, len - CHUNK_HDR) != h.sum) {
		*why = "body checksum mismatch (partial or mixed version)";
		return -4;
	}
	*seed = h.seed;
	return 0;
}

#endif
