/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/rdma_peer.h: marud's rdma side for the unit tests of
 * lib/dp/rdma*.c, in the test's own process on the software verbs device
 * (tests/softverbs): an rdma_cm listener on 127.0.0.1 whose thread accepts
 * every QP (recording the private data each connect carried) and one
 * registered "pool" buffer, readable and writable from the wire, whose
 * addresses and rkey the test hands out as RKEY answers; plus a client and
 * a handle built by hand around it, whose control call answers RKEY and
 * whose session facts the test sets.
 */
#ifndef RDMA_PEER_H
#define RDMA_PEER_H

#include <pthread.h>
#include <stdint.h>

#include "dp/rdma_priv.h"

#define PEER_POOL	(1u << 20)
#define PEER_NEXT	3

struct rdma_peer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;
	uint16_t port;
	uint8_t *pool;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	pthread_t thread;
	pthread_mutex_t mu;		/* below */
	int stop;
	int connects;			/* QPs accepted so far */
	struct proto_rdma_cm last;	/* the private data of the last one */
	struct rdma_cm_id *ids[16];
	struct ibv_cq *cqs[16];
	int nids;
};

/* Listen on 127.0.0.1 (a free port) with a pool of PEER_POOL patterned bytes. */
void peer_start(struct rdma_peer *p);
void peer_stop(struct rdma_peer *p);
int peer_connects(struct rdma_peer *p);

/* The pattern the pool starts with. */
static inline uint8_t peer_pattern(uint64_t off)
{
	return (uint8_t)(off * 5 + 1);
}

/* A client of the peer (data path rdma, opened) and one pending handle. */
struct rdma_fx {
	struct rdma_peer p;
	struct maru_client c;
	struct maru_file f;
	struct proto_extent ext[PEER_NEXT];
	struct dp_facts facts;		/* what c->env.facts answers */
	int rkey_calls;
	uint32_t rkey_xor;		/* != 0: answer wrong rkeys */
};

/* Start the peer, make the client and open the path: 0 or open's -errno. */
int rdma_fx_setup(struct rdma_fx *x);
void rdma_fx_teardown(struct rdma_fx *x);
/* The pool offset of file byte k of the handle. */
uint64_t rdma_fx_where(uint64_t k);

#endif
