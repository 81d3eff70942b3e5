/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/fixture.h: a real marud server with an rdma://
 * listener on the software verbs device (tests/softverbs: an emulated NIC
 * in this process, no RNIC), a control connection through the server's
 * fuzzing seam, and an rdma client endpoint (tests/softverbs/tests/svt.h)
 * with a registered buffer: what the tests of daemon/rdma/ share.
 */
#ifndef TESTS_RDMA_FIXTURE_H
#define TESTS_RDMA_FIXTURE_H

#include <stdint.h>

#include "rdma_priv.h"
#include "server_harness.h"
#include "server_priv.h"
#include "svt.h"

#define RFX_BUF		(1U << 20)

struct rfx {
	struct th t;
	struct tconn tc;
	struct treply *r;
	struct proto_hello_rep hello;
	uint8_t token[16];
	uint16_t port;
	struct svt_ep ep;
	int ep_up;
	uint8_t *buf;		/* client memory, registered as mr */
	struct ibv_mr *mr;
	uint64_t reqid;		/* the next request's: replies are cached by it */
};

/* A server listening on rdma://127.0.0.1:<a new port>, started; a control connection. */
struct rfx *rfx_new(void);
/* The same with rdma-rights = cfg_rights (RDMA_CFG_*). */
struct rfx *rfx_new_rights(int cfg_rights);
void rfx_free(struct rfx *f);
struct rdma_srv *rfx_rdma(struct rfx *f);
/* HELLO with HELLO_F_RDMA on the control connection: f->hello, f->token. */
void rfx_hello(struct rfx *f);
/* Connect the client QP with pd as private data: 0 established, -ECONNREFUSED, -errno. */
int rfx_connect_pd(struct rfx *f, const void *pd, uint8_t len);
/* The same with the session's token and generation (what a client sends). */
int rfx_connect(struct rfx *f);
/* CREATE name with size_hint bytes reserved: its ino; the extents in ext (at most 8). */
uint64_t rfx_create(struct rfx *f, const char *name, uint64_t size_hint,
		    struct proto_extent *ext, uint32_t *next);
/* RKEY: the status; keys (at most 8) and the reply's flags when 0. */
int rfx_rkey(struct rfx *f, uint64_t ino, uint32_t flags, struct proto_rkey *keys,
	     uint32_t *nkeys, uint32_t *rflags);
/* A request with an ino (ABANDON, RELEASE): the status. */
int rfx_ino_op(struct rfx *f, uint16_t op, uint64_t ino);
/* One RDMA READ or WRITE of len bytes at buf+loff: the completion's status. */
int rfx_rdma_op(struct rfx *f, enum ibv_wr_opcode op, size_t loff, size_t len,
		uint64_t raddr, uint32_t rkey);
/* Wait up to 5 s for *v to be want; 1 when it was. */
int rfx_wait_eq(atomic_int_fast64_t *v, long long want);
int rfx_wait_u64(atomic_uint_fast64_t *v, unsigned long long want);

#endif
