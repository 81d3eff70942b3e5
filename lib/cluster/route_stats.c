// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route_stats.c: the numbers of a routed client (route.h):
 * statfs sums the pools (capacity, free, names...; directories are on
 * every pool, counted once), and the Prometheus text is each pool's text
 * with a pool="UUID" label on every sample (one HELP and TYPE per family,
 * from the first pool), then the router's own counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"
#include "route_priv.h"

int route_statfs(struct maru_client *c, struct maru_statfs *out)
{
	struct route *r = c->route;
	unsigned int s[ROUTE_POOLS];
	struct maru_client *sub;
	struct maru_statfs one, sum = { .statfs_size = sizeof(sum) };
	int n = route_members(r, s, ROUTE_POOLS), i, ok = 0, rc = -ENOENT;

	for (i = 0; i < n; i++) {
		rc = route_sub(r, s[i], &sub);
		if (!rc)
			rc = r->ops->statfs(sub, &one);
		if (rc)
			continue;
		sum.capacity += one.capacity;
		sum.free += one.free;
		sum.evictable += one.evictable;
		sum.used += one.used;
		sum.pending += one.pending;
		sum.orphaned += one.orphaned;
		sum.names += one.names;
		if (!ok++)
			sum.dirs = one.dirs;
		if (one.block > sum.block)
			sum.block = one.block;
	}
	if (!ok)
		return rc;
	memcpy(out, &sum, sizeof(sum));
	return 0;
}

/* Text being built; err set once it could not grow. */
struct tbuf {
	char *b;
	size_t len, cap;
	int err;
};

static void put(struct tbuf *t, const char *s, size_t n)
{
	char *nb;

	if (t->err)
		return;
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		nb = realloc(t->b, t->cap);
		if (!nb) {
			t->err = -ENOMEM;
			return;
		}
		t->b = nb;
	}
	memcpy(t->b + t->len, s, n);
	t->len += n;
	t->b[t->len] = '\0';
}

/* One pool's text, each sample labelled with the pool. */
static void put_labelled(struct tbuf *t, const char *text, const char *uuid, int comments)
{
	char lab[80];
	const char *p = text, *e, *sp, *br;
	int ln = snprintf(lab, sizeof(lab), "pool=\"%s\"", uuid);

	for (; *p; p = e) {
		e = strchr(p, '\n');
		e = e ? e + 1 : p + strlen(p);
		if (*p == '#' || *p == '\n') {
			if (comments)
				put(t, p, (size_t)(e - p));
			continue;
		}
		sp = memchr(p, ' ', (size_t)(e - p));
		br = memchr(p, '{', (size_t)(e - p));
		if (br && (!sp || br < sp)) {
			put(t, p, (size_t)(br + 1 - p));
			put(t, lab, (size_t)ln);
			put(t, br[1] == '}' ? "" : ",", br[1] == '}' ? 0 : 1);
			put(t, br + 1, (size_t)(e - br - 1));
		} else if (sp) {
			put(t, p, (size_t)(sp - p));
			put(t, "{", 1);
			put(t, lab, (size_t)ln);
			put(t, "}", 1);
			put(t, sp, (size_t)(e - sp));
		}
	}
}

static void put_own(struct tbuf *t, struct route *r)
{
	char line[512];
	int n;

	n = snprintf(line, sizeof(line),
		     "# HELP maru_cluster_renames_total Renames through the cluster client, "
		     "by kind (local: one pool; moved: the version moved between pools).\n"
		     "# TYPE maru_cluster_renames_total counter\n"
		     "maru_cluster_renames_total{kind=\"local\"} %llu\n"
		     "maru_cluster_renames_total{kind=\"moved\"} %llu\n"
		     "# HELP maru_cluster_rename_moved_bytes_total Bytes copied between pools "
		     "by renames.\n"
		     "# TYPE maru_cluster_rename_moved_bytes_total counter\n"
		     "maru_cluster_rename_moved_bytes_total %llu\n",
		     (unsigned long long)atomic_load(&r->renames_local),
		     (unsigned long long)atomic_load(&r->renames_moved),
		     (unsigned long long)atomic_load(&r->bytes_moved));
	put(t, line, (size_t)n);
	n = snprintf(line, sizeof(line),
		     "# HELP maru_cluster_previous_hits_total Names found where they were "
		     "placed before pools joined or drained.\n"
		     "# TYPE maru_cluster_previous_hits_total counter\n"
		     "maru_cluster_previous_hits_total %llu\n",
		     (unsigned long long)atomic_load(&r->prev_hits));
	put(t, line, (size_t)n);
}

ssize_t route_stats_text(struct maru_client *c, char *buf, size_t len)
{
	struct route *r = c->route;
	unsigned int s[ROUTE_POOLS];
	struct tbuf t = { 0 };
	struct maru_client *sub;
	char *one;
	ssize_t n, k;
	int np = route_members(r, s, ROUTE_POOLS), i, first = 1;

	for (i = 0; i < np; i++) {
		if (route_sub(r, s[i], &sub))
			continue;
		n = r->ops->stats_text(sub, NULL, 0);
		if (n < 0 || !(one = malloc((size_t)n + 1)))
			continue;
		k = r->ops->stats_text(sub, one, (size_t)n + 1);
		if (k >= 0)
			put_labelled(&t, one, r->pool[s[i]].rec.uuid, first);
		first = first && k < 0;
		free(one);
	}
	put_own(&t, r);
	if (t.err) {
		free(t.b);
		return t.err;
	}
	if (len) {
		k = (ssize_t)(t.len < len - 1 ? t.len : len - 1);
		memcpy(buf, t.b, (size_t)k);
		buf[k] = '\0';
	}
	n = (ssize_t)t.len;
	free(t.b);
	return n;
}
