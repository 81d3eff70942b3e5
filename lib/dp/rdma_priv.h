/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/rdma_priv.h: what the three files of the rdma data path share.
 * rdma_qp.c owns the client's QP and staging buffers (struct rdma_dp):
 * probe, connect, drop, wait for a completion; rdma_keys.c owns the remote
 * keys cached on a handle (struct rdma_keys), asked of marud through the
 * client's control call; rdma.c cuts transfers into WRs and holds the ops
 * table. Only these files of libmaru include the verbs headers.
 */
#ifndef MARU_DP_RDMA_PRIV_H
#define MARU_DP_RDMA_PRIV_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "datapath.h"

#define STAGE_BUF	(1u << 20)
#define STAGE_DEFAULT	(8u << 20)
#define RESOLVE_MS	2000

struct rdma_dp {
	pthread_mutex_t lock;		/* one transfer at a time; all below */
	struct rdma_cm_id *id;		/* NULL: not connected */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *stage;
	unsigned int nbuf;
	int ep;
	uint64_t qp_gen;		/* the QP's number: rkeys are bound to one */
	uint64_t generation;		/* marud's, when connected */
	uint64_t epoch;			/* session epoch, when connected */
};

struct rdma_keys {
	uint64_t qp_gen;
	int rw;
	int poisoned;			/* a write failed: never publish this */
	uint32_t n;
	struct proto_rkey *k;
};

/* ---- rdma_qp.c ---- */

int dp_rdma_probe(const struct session *s, const char **why);
int dp_rdma_open(struct maru_client *c, const struct session *s, const char **why);
void dp_rdma_close(struct maru_client *c);
/* The QP of this session, connected again if needed; d->lock held. */
int dp_rdma_qp_ready(struct maru_client *c, struct rdma_dp *d);
/* QP to ERR, every outstanding WR flushed, the QP dropped; d->lock held. */
void dp_rdma_qp_fail(struct maru_client *c, struct rdma_dp *d);
/* Wait (epoll on the completion channel) for one CQE; 0, -EIO, -ETIMEDOUT. */
int dp_rdma_cq_wait(struct rdma_dp *d, struct ibv_wc *wc, uint64_t deadline);

/* ---- rdma_keys.c ---- */

/* The rkeys of f for the current QP, asked for again when missing; d->lock held. */
int dp_rdma_keys_ready(struct maru_client *c, struct rdma_dp *d, struct maru_file *f,
		       int rw);
/* dp_rdma_ops.forget: the handle's keys are dead (closed, or published). */
void dp_rdma_forget(struct maru_file *f);

#endif
