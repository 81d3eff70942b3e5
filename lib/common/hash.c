/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/hash.c: the content checksum of versions (xxh3-64), in one place
 * so marud, libmaru and the tools agree on it; the streaming form is a
 * libxxhash XXH3 state.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <xxhash.h>

#include "hash.h"

uint64_t hash_xxh3(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

struct hash_stream {
	XXH3_state_t *st;
};

struct hash_stream *hash_stream_new(void)
{
	struct hash_stream *h = malloc(sizeof(*h));

	if (!h)
		return NULL;
	h->st = XXH3_createState();
	if (!h->st) {
		free(h);
		return NULL;
	}
	XXH3_64bits_reset(h->st);
	return h;
}

void hash_stream_update(struct hash_stream *h, const void *p, size_t len)
{
	XXH3_64bits_update(h->st, p, len);
}

uint64_t hash_stream_digest(const struct hash_stream *h)
{
	return XXH3_64bits_digest(h->st);
}

void hash_stream_free(struct hash_stream *h)
{
	if (!h)
		return;
	XXH3_freeState(h->st);
	free(h);
}
