/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * maru/cluster.h: a cluster's membership and placement, and the routed
 * client's pools, part of libmaru's public API (included by
 * <maru/libmaru.h>; see libmaru(3), marufs-cluster(7)).
 */
#ifndef MARU_CLUSTER_H
#define MARU_CLUSTER_H

#include <maru/libmaru.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A cluster of pools (marufs-cluster(7)), since MARU_0.3: the membership
 * every marud --cluster keeps in etcd, read again every refresh_ms, and
 * the pool that owns a name by weighted rendezvous hashing (weight x
 * capacity of each active pool; a draining pool owns no new names). Every
 * client that reads the same membership finds the same owner without
 * asking anyone. etcd unreachable: the last membership read holds.
 */
struct maru_cluster;

struct maru_cluster_opts {
	size_t opts_size;		/* set by maru_cluster_opts_init() */
	const char *uri;		/* maru+etcd://HOST:PORT[,HOST:PORT...]/NAME */
	const char *etcd_ca;		/* https to etcd, checked against this CA */
	const char *etcd_cert, *etcd_key;	/* etcd client certificate */
	const char *etcd_user, *etcd_password;	/* etcd authentication */
	unsigned int refresh_ms;	/* default 1000 */
	unsigned int timeout_ms;	/* one etcd call, per member; default 2000 */
	/*
	 * How long after a pool joined a name is also looked for where it
	 * was placed before the join; default 600 s. After that, a name
	 * published before the join and placed elsewhere now is a miss (a
	 * cache entry lost), until written again. Pools that joined within
	 * 30 s of the cluster's first formed it: they are never new.
	 */
	unsigned int settle_s;
};

struct maru_cluster_pool {
	size_t pool_size;		/* set by libmaru: the bytes it filled */
	char uuid[40];			/* the pool's UUID */
	char uri[272];			/* maru://HOST:PORT: its first tcp address */
	uint64_t capacity;		/* data bytes */
	uint32_t weight;
	int draining;			/* takes no new names */
	char zone[64];
	int64_t since;			/* joined at, seconds since the epoch */
};

void maru_cluster_opts_init(struct maru_cluster_opts *opts, size_t size);
/*
 * Read the membership once (-EHOSTUNREACH/-EAGAIN: etcd cannot be read,
 * -EINVAL: a malformed URI), then keep it fresh in a thread of its own.
 */
int maru_cluster_open(const struct maru_cluster_opts *opts, struct maru_cluster **out);
void maru_cluster_close(struct maru_cluster *c);
/* The pools, in UUID order: how many there are (at most max are copied). */
int maru_cluster_pools(struct maru_cluster *c, struct maru_cluster_pool *out, size_t max);
/*
 * The owner of path (a path in the namespace, "/" separated): where a new
 * name goes and where a lookup asks first. previous (may be NULL): where
 * the name was placed before the pools that joined less than settle_s ago
 * came and before the draining pools drained: a lookup that misses at the
 * owner asks there. Every client computes both from the membership in
 * etcd alone (each pool's record says when it joined). -ENOENT: no
 * active pool.
 */
int maru_cluster_owner(struct maru_cluster *c, const char *path, struct maru_cluster_pool *owner,
		       struct maru_cluster_pool *previous);

/*
 * The cluster mount (since MARU_0.3): maru_client_new() with opts.uri a
 * maru+etcd://HOST:PORT[,HOST:PORT...]/NAME gives a routed client (etcd's
 * TLS and user in a query: ?etcd_ca=&etcd_cert=&etcd_key=&etcd_user=&
 * etcd_password_file=, see libmaru(3)). It opens the cluster's membership and an ordinary client per pool (same
 * options, uri the pool's record; each chooses its own data path), and
 * every call above goes where maru_cluster_owner() says: a name to its
 * owner (a lookup or open that misses there asks the previous owner);
 * mkdir, rmdir and setattr of a directory to every pool (rmdir is
 * -ENOTEMPTY while any pool holds a name under it); readdir merges the
 * pools; statfs sums them; maru_stats_text() labels each pool's samples
 * pool="UUID". Ids: a file's is its pool's with the pool's slot + 1 in the
 * top 8 bits, a directory's the client's own (MARU_ROOT_ID the root). A
 * rename between names of one owner is that pool's atomic rename; else
 * the version's bytes are copied to a new version under the new name on
 * the new owner, published, then the old name is unlinked (never a
 * partial file, never neither name). A directory rename is -EXDEV (mv(1)
 * copies then), a hard link to another pool's version -EXDEV.
 * maru_events_open() merges the pools' streams (ids as above, one merged
 * sequence; an ack of merged seq M acks each pool's events up to M); the
 * lease cache is each pool's client's, found by the tagged id. Not through
 * a routed client (yet): hints, maru_ns_usage() (-ENODATA).
 *
 * maru_client_pool_at(): pool i (0, 1, ... in the order the client first
 * saw them) of a routed client: its record, its pool facts when its client
 * is connected (info->info_size 0 when not), and *state 0 active, 1
 * draining, 2 gone (no longer in the membership). Any out pointer may be
 * NULL. -ENOENT past the last pool, or when c is not a routed client.
 */
int maru_client_pool_at(struct maru_client *c, unsigned int i,
			struct maru_cluster_pool *member, struct maru_pool_info *info, int *state);

#ifdef __cplusplus
}
#endif
#endif /* MARU_CLUSTER_H */
