/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/cluster/place.h: which pool of a cluster owns a name, found by every
 * client alike without asking anyone: weighted rendezvous hashing (each
 * pool scores the name; the highest score owns it) over the active pools,
 * of the name's placement key.
 *
 * The placement key is the part of a name that an engine's temporary name
 * and its final name share, so that write-temp-then-rename keeps both
 * names on one pool and the rename stays one pool's atomic rename:
 *
 *	vLLM	<final>_<random>.tmp		-> <final>
 *	SGLang	<final>.tmp.<pid>.<tid>.<uuid>	-> <final>
 *	LMCache	<final>.tmp			-> <final>
 *
 * SGLang's newest temporary name, .<32 hex>.tmp, says nothing about the
 * final one: place_key() reports it (PLACE_UNKNOWN) and the caller decides
 * (see marufs-cluster(7)). The key is hashed with the parent directory's
 * path so names in different directories spread independently.
 *
 * Rendezvous hashing moves the least when the pools change: a joining pool
 * takes only names it now scores highest for (about weight/total of them),
 * taken from every other pool alike; a leaving pool's names spread over the
 * rest; no name moves between two pools that stay.
 */
#ifndef MARU_PLACE_H
#define MARU_PLACE_H

#include <stddef.h>
#include <stdint.h>

enum { PLACE_KEYED = 0, PLACE_UNKNOWN = 1 };

struct place_pool {
	uint64_t seed;		/* from the pool's UUID: place_seed() */
	double weight;		/* 0: takes no new names (draining) */
};

/* a pool's seed from its 16-byte UUID */
uint64_t place_seed(const uint8_t uuid[16]);
/*
 * The placement key of name (len bytes): *klen bytes from its start.
 * Returns PLACE_KEYED, or PLACE_UNKNOWN for a temporary name that does not
 * contain its final name (*klen is then the whole name).
 */
int place_key(const char *name, size_t len, size_t *klen);
/* the hash placement scores: the parent's path hash mixed with the key */
uint64_t place_hash(uint64_t parent_hash, const char *name, size_t len);
/*
 * The owner of hash h among n pools: the index of the highest weighted
 * score, -1 when no pool has a weight.
 */
int place_owner(const struct place_pool *pools, unsigned int n, uint64_t h);

#endif
