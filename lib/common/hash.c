/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/hash.c: the content checksum of versions (xxh3-64), in one place
 * so marud, libmaru and the tools agree on it; the streaming form is a
 * libxxhash XXH3 state. Where libxxhash has its x86 dispatcher, the
 * *_dispatch entry points run the widest vector code this CPU has (the
 * plain ones are built for baseline SSE2); the digests are the same.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <xxhash.h>

#include "config.h"
#include "hash.h"

#if HAVE_XXH_DISPATCH
#include <xxh_x86dispatch.h>
#define xxh3_oneshot	XXH3_64bits_dispatch
#define xxh3_update	XXH3_64bits_update_dispatch
#else
#define xxh3_oneshot	XXH3_64bits
#define xxh3_update	XXH3_64bits_update
#endif

uint64_t hash_xxh3(const void *p, size_t len)
{
	return xxh3_oneshot(p, len);
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
	xxh3_update(h->st, p, len);
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
