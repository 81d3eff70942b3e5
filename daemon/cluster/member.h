/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/cluster/member.h: marud's pool as a member of a cluster (marud
 * --cluster etcd://HOST:PORT[,HOST:PORT...]/NAME). A thread of its own
 * keeps one record in etcd under
 *
 *	/marufs/NAME/pools/UUID
 *
 * bound to an etcd lease it keeps alive, so a marud that dies leaves the
 * cluster when the lease's TTL runs out, and one that stops (SIGTERM)
 * leaves at once by revoking it. The record is one JSON object:
 *
 *	{"uuid":"...","name":"...","tcp":["tcp://10.0.0.1:7450"],"rdma":[],
 *	 "capacity":1073741824,"weight":1,"zone":"","state":"active",
 *	 "generation":"a5969dda4c565002","since":1764671000}
 *
 * since is when this marud joined (kept across renewals and
 * re-registrations): clients look a name up where it was placed before a
 * pool joined for a while after the join (maru_cluster_owner()).
 *
 * state is "active" or "draining" (no new names are placed on a draining
 * pool; it serves its own until it leaves). marud writes it when its own
 * setting changes (--drain at start, drain = yes or no and SIGHUP); in
 * between, what an operator writes into the record in etcd holds: marud
 * reads the record back at every renewal and takes its state up (and puts
 * it back under its lease when a write without --ignore-lease took it
 * off). A marud that starts again while its old record still lives keeps
 * that record's "draining".
 *
 * etcd unreachable or without quorum: marud serves on, keeps trying every
 * second and says so in its log once per change; when its lease expired
 * meanwhile it registers again. No consensus runs here: etcd holds the
 * membership, clients watch it.
 */
#ifndef MARUD_MEMBER_H
#define MARUD_MEMBER_H

#include <stdint.h>

#include "etcd.h"

#define MEMBER_MAX_URIS	8

struct member_info {
	char cluster[64];		/* NAME */
	char uuid[40];			/* the pool's UUID, text */
	char tcp[MEMBER_MAX_URIS][256];	/* where clients reach it */
	unsigned int ntcp;
	char rdma[MEMBER_MAX_URIS][256];
	unsigned int nrdma;
	uint64_t capacity;		/* data bytes of the pool */
	unsigned int weight;		/* placement weight, default 1 */
	char zone[64];
	uint64_t generation;
	int draining;
	unsigned int ttl_s;		/* etcd lease TTL */
	int64_t since;			/* joined at (epoch s); 0: member_start's time */
};

struct member;

/*
 * Start the membership thread (it registers in the background: a marud
 * whose etcd is down starts and serves, and logs why it could not join).
 */
int member_start(const struct etcd_opts *eo, const struct member_info *mi,
		 struct member **out);
/* drain (1) or activate (0) from now on; the record follows within 1 s */
void member_set_draining(struct member *m, int draining);
/* Leave: revoke the lease (the record goes with it), end the thread. */
void member_stop(struct member *m);

/* the record's key and JSON text (for tests and the -n summary) */
int member_key(const struct member_info *mi, char *buf, size_t len);
char *member_record(const struct member_info *mi, int draining);

#endif
