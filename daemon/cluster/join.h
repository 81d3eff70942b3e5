/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/cluster/join.h: what server.c calls to put its pool in a cluster
 * (member.h does the work): the record is made from marud's config (the
 * cluster keys, the listen URIs) and its pool (UUID, data capacity).
 */
#ifndef MARUD_JOIN_H
#define MARUD_JOIN_H

#include <stdint.h>

#include "conf.h"
#include "member.h"

/*
 * Start the membership of this pool (cfg->cluster_etcd set). Returns 0,
 * or -errno with a log line saying why (no address clients can reach, an
 * unreadable etcd password file...): marud then does not start.
 */
int cluster_join(const struct config *cfg, const uint8_t uuid[16], uint64_t capacity,
		 uint64_t generation, struct member **out);

#endif
