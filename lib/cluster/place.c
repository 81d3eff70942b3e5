// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/place.c: placement keys and weighted rendezvous hashing
 * (place.h). A pool's score for a hash h is weight / -ln(u), u a uniform
 * number in (0,1) drawn from h and the pool's seed: the largest of such
 * scores falls to each pool with probability weight / total weight, and
 * adding or removing a pool changes no other pool's scores.
 */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "hash.h"
#include "place.h"

uint64_t place_seed(const uint8_t uuid[16])
{
	return hash_xxh3(uuid, 16);
}

/* 32 hex digits, or a UUID's 36 with dashes */
static int uuid_text(const char *p, size_t n)
{
	size_t i;

	if (n != 32 && n != 36)
		return 0;
	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)p[i]) && !(n == 36 && p[i] == '-'))
			return 0;
	return 1;
}

/* the last occurrence of the n-byte needle in [s, s+len), or NULL */
static const char *last_of(const char *s, size_t len, const char *needle, size_t n)
{
	const char *p;

	if (len < n)
		return NULL;
	for (p = s + len - n; p >= s; p--)
		if (!memcmp(p, needle, n))
			return p;
	return NULL;
}

int place_key(const char *name, size_t len, size_t *klen)
{
	const char *t, *dot, *us;

	*klen = len;
	/* SGLang, newest: .<uuid hex>.tmp (32 hex, or 36 with dashes) */
	if (len > 5 && name[0] == '.' && !memcmp(name + len - 4, ".tmp", 4) &&
	    uuid_text(name + 1, len - 5))
		return PLACE_UNKNOWN;
	/* SGLang, older: <final>.tmp.<pid>.<tid>.<uuid> */
	t = last_of(name, len, ".tmp.", 5);
	if (t && t > name) {
		*klen = (size_t)(t - name);
		return PLACE_KEYED;
	}
	if (len > 4 && !memcmp(name + len - 4, ".tmp", 4)) {
		/* vLLM: <final>_<random>.tmp, the final having an extension */
		dot = last_of(name, len - 4, ".", 1);
		us = last_of(name, len - 4, "_", 1);
		if (dot && us && us > dot) {
			*klen = (size_t)(us - name);
			return PLACE_KEYED;
		}
		/* LMCache: <final>.tmp */
		*klen = len - 4;
	}
	return PLACE_KEYED;
}

uint64_t place_hash(uint64_t parent_hash, const char *name, size_t len)
{
	size_t klen;

	place_key(name, len, &klen);
	return hash_mix64(parent_hash ^ hash_xxh3(name, klen));
}

int place_owner(const struct place_pool *pools, unsigned int n, uint64_t h)
{
	double best = -1.0, u, score;
	unsigned int i;
	int owner = -1;

	for (i = 0; i < n; i++) {
		if (!pools[i].weight)
			continue;
		/* 53 uniform bits, never 0 or 1 */
		u = ((double)(hash_mix64(h ^ pools[i].seed) >> 11) + 0.5) / 9007199254740992.0;
		score = (double)pools[i].weight / -log(u);
		if (score > best) {
			best = score;
			owner = (int)i;
		}
	}
	return owner;
}
