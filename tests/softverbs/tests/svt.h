/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/softverbs/tests/svt.h: helpers shared by the softverbs tests — a
 * responder peer in a forked child process (its own emulated NIC) driven by
 * commands over a socketpair, a requester endpoint for the parent, and
 * bounded waits for CM events and completions. No real RDMA hardware is
 * used: everything runs on libsoftverbs.
 */
#ifndef SVT_H
#define SVT_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <sys/types.h>

enum svt_op {
	SVT_ACCEPT = 1,	/* a: 0 accept, 1 reject; answers when established */
	SVT_REG,	/* a: size, b: access; answers addr, rkey, idx */
	SVT_DEREG,	/* a: mr idx */
	SVT_CHECK,	/* a: mr idx, b: seed; rc 0 if the buffer holds seed */
	SVT_FILL,	/* a: mr idx, b: seed */
	SVT_MW_BIND,	/* a: mr idx, b: conn idx, c: access; answers rkey, idx */
	SVT_MW_INV,	/* a: mw idx, b: conn idx */
	SVT_EVENT,	/* a: rdma_cm event type; waits for it on the conn */
	SVT_EXIT,
};

struct svt_cmd {
	int32_t op;
	uint32_t c;
	uint64_t a, b;
};

struct svt_reply {
	int32_t rc;
	uint32_t rkey;
	uint64_t addr;
	uint64_t idx;
	uint8_t pdata[32];
};

struct svt_peer {
	pid_t pid;
	int sock;
	uint16_t port;
};

struct svt_ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
};

void svt_fill(uint8_t *p, size_t len, uint64_t seed);
int svt_peer_start(struct svt_peer *p);
int svt_peer_send(struct svt_peer *p, int op, uint64_t a, uint64_t b, uint32_t c);
int svt_peer_recv(struct svt_peer *p, struct svt_reply *r);
int svt_peer_cmd(struct svt_peer *p, int op, uint64_t a, uint64_t b, uint32_t c,
		 struct svt_reply *r);
int svt_peer_stop(struct svt_peer *p);

int svt_get_event(struct rdma_event_channel *ch, int timeout_ms,
		  struct rdma_cm_event **ev);
int svt_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type);
int svt_ep_init(struct svt_ep *e, const char *ip, uint16_t port);
int svt_ep_connect(struct svt_ep *e, const void *pdata, uint8_t len,
		   struct rdma_cm_event **ev);
int svt_connect(struct svt_ep *e, uint16_t port, struct svt_peer *peer);
void svt_ep_fini(struct svt_ep *e);
int svt_wait_wc(struct ibv_cq *cq, int timeout_ms, struct ibv_wc *wc);
int svt_post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		  struct ibv_mr *mr, size_t off, size_t len, uint64_t raddr,
		  uint32_t rkey, unsigned int flags);

/* Both ends in this one process (one emulated NIC), listener included. */
struct svt_loop {
	struct svt_ep cli;
	struct rdma_event_channel *sch;
	struct rdma_cm_id *lid, *sid;
	struct ibv_cq *scq;
};

int svt_loop_open(struct svt_loop *l);
void svt_loop_close(struct svt_loop *l);

#endif
