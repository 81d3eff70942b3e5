// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route_hint.c: hints and a directory's usage through a
 * routed client (route.h). A hint's ranges name versions by their tagged
 * ids (route_priv.h): each range goes, with its pool's own id, to the pool
 * that holds the version, so the hint reaches that pool's region
 * extension; a hint without ranges (read-end, promote) goes to every pool
 * of the cluster. The actions a routed client offers are those any pool
 * takes; a pool that does not take one is left out (hints are advice).
 * A directory's usage is the sum over the pools, each of which counts and
 * enforces its own quota (marufs-cluster(7)); its quota the sum of theirs,
 * none when a pool has none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"
#include "route_priv.h"

uint32_t route_hint_actions(struct maru_client *c)
{
	struct route *r = c->route;
	unsigned int s[ROUTE_POOLS];
	struct maru_client *sub;
	int n = route_members(r, s, ROUTE_POOLS), i;
	uint32_t any = 0;

	for (i = 0; i < n; i++)
		if (!route_sub(r, s[i], &sub))
			any |= r->ops->hint_actions(sub);
	return any;
}

/* Send to one pool; a pool that does not take the action counts as done. */
static int hint_one(struct route *r, unsigned int slot, int action, const char *request,
		    const struct maru_hint_range *v, size_t n, int *sent)
{
	struct maru_client *sub;
	int rc = route_sub(r, slot, &sub);

	if (rc)
		return rc;
	if (!(r->ops->hint_actions(sub) & (1u << action)))
		return 0;
	rc = r->ops->hint(sub, action, request, v, n);
	if (!rc)
		(*sent)++;
	return rc;
}

/* Ranges without any: to every pool, the first error kept. */
static int hint_all(struct route *r, int action, const char *request, int *sent)
{
	unsigned int s[ROUTE_POOLS];
	int n = route_members(r, s, ROUTE_POOLS), i, rc, first = 0;

	for (i = 0; i < n; i++) {
		rc = hint_one(r, s[i], action, request, NULL, 0, sent);
		if (rc && !first)
			first = rc;
	}
	return first;
}

int route_hint(struct maru_client *c, int action, const char *request,
	       const struct maru_hint_range *v, size_t n)
{
	struct route *r = c->route;
	struct maru_hint_range *mine;
	uint64_t done[(ROUTE_POOLS + 63) / 64] = { 0 };
	size_t i, j, k;
	int slot, rc = 0, sent = 0;

	if (!n)
		rc = hint_all(r, action, request, &sent);
	for (i = 0; i < n; i++)
		if (route_slot_of(v[i].ino) < 0)
			return -EISDIR;	/* a directory has no bytes to hint */
	mine = n ? malloc(n * sizeof(*mine)) : NULL;
	if (n && !mine)
		return -ENOMEM;
	/* pool by pool, in the order their first range comes */
	for (i = 0; i < n && !rc; i++) {
		slot = route_slot_of(v[i].ino);
		if (done[slot / 64] & (1ULL << (slot % 64)))
			continue;
		done[slot / 64] |= 1ULL << (slot % 64);
		for (j = i, k = 0; j < n; j++) {
			if (route_slot_of(v[j].ino) != slot)
				continue;
			mine[k] = v[j];
			mine[k++].ino = v[j].ino & ROUTE_LOCAL_MASK;
		}
		rc = hint_one(r, (unsigned int)slot, action, request, mine, k, &sent);
	}
	free(mine);
	return rc ? rc : sent ? 0 : -EOPNOTSUPP;
}

int route_ns_usage(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out)
{
	struct route *r = c->route;
	unsigned int s[ROUTE_POOLS];
	struct maru_client *sub;
	struct maru_ns_usage one, sum = { .usage_size = sizeof(sum) };
	uint64_t local;
	int n = route_members(r, s, ROUTE_POOLS), i, ok = 0, unbounded = 0, rc = -ENOENT;

	if (route_slot_of(dir) >= 0)
		return -ENOTDIR;
	for (i = 0; i < n; i++) {
		rc = route_at(r, (int)s[i], dir, &sub, &local);
		if (!rc)
			rc = r->ops->ns_usage(sub, local, &one);
		if (rc)
			continue;
		if (!ok++)
			memcpy(sum.tenant, one.tenant, sizeof(sum.tenant));
		/* a pool with no quota for the tenant: none in all */
		unbounded |= one.quota == 0;
		sum.quota += one.quota;
		sum.used += one.used;
		sum.pending += one.pending;
		sum.evictable += one.evictable;
		sum.evictions += one.evictions;
		sum.evicted_bytes += one.evicted_bytes;
		sum.enospc += one.enospc;
	}
	if (!ok)
		return rc == -ENOTDIR ? -ENOENT : rc;
	if (unbounded)
		sum.quota = 0;
	memcpy(out, &sum, sizeof(sum));
	return 0;
}
