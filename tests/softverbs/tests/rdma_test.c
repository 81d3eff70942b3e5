// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/rdma_test.c: one-sided RDMA between two processes
 * on libsoftverbs. Emulated: two RNICs (one per process: this test and a
 * forked responder), RC QPs connected through rdma_cm over 127.0.0.1, the
 * responder NIC's checks of rkey, access rights, bounds and type 2 memory
 * window binding, QP error flushing and completion channel fds. Real RDMA
 * hardware is not used; the wire is a unix socket between the two NICs.
 */
#include "svt.h"

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define RW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
		   IBV_ACCESS_REMOTE_WRITE)
#define SZ (1u << 20)

struct fx {
	struct svt_peer peer;
	struct svt_ep ep;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || svt_peer_start(&f->peer))
		return -1;
	if (svt_connect(&f->ep, f->peer.port, &f->peer))
		return -1;
	f->buf = calloc(1, SZ);
	f->mr = ibv_reg_mr(f->ep.pd, f->buf, SZ, RW_ACCESS);
	*state = f;
	return f->mr ? 0 : -1;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	int st;

	ibv_dereg_mr(f->mr);
	svt_ep_fini(&f->ep);
	st = svt_peer_stop(&f->peer);
	free(f->buf);
	free(f);
	return st;
}

static enum ibv_wc_status one_op(struct fx *f, enum ibv_wr_opcode op, size_t len,
				 uint64_t raddr, uint32_t rkey)
{
	struct ibv_wc wc;

	assert_int_equal(svt_post_rdma(f->ep.id->qp, op, 9, f->mr, 0, len, raddr,
				       rkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(f->ep.cq, 5000, &wc), 0);
	assert_int_equal(wc.wr_id, 9);
	return wc.status;
}

static void peer_reg(struct fx *f, uint64_t size, unsigned int access,
		     struct svt_reply *r)
{
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_REG, size, access, 0, r), 0);
	assert_int_equal(r->rc, 0);
}

/* WRITE 1 MiB then READ it back: byte-exact on both sides. */
static void test_write_read_roundtrip(void **state)
{
	struct fx *f = *state;
	struct svt_reply r, c;
	uint8_t *want = malloc(SZ);

	peer_reg(f, SZ, RW_ACCESS, &r);
	svt_fill(f->buf, SZ, 42);
	memcpy(want, f->buf, SZ);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, SZ, r.addr, r.rkey), IBV_WC_SUCCESS);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_CHECK, r.idx, 42, 0, &c), 0);
	assert_int_equal(c.rc, 0);
	memset(f->buf, 0, SZ);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, SZ, r.addr, r.rkey), IBV_WC_SUCCESS);
	assert_memory_equal(f->buf, want, SZ);
	/* and the peer's own bytes travel the other way too */
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_FILL, r.idx, 7, 0, &c), 0);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, SZ, r.addr, r.rkey), IBV_WC_SUCCESS);
	svt_fill(want, SZ, 7);
	assert_memory_equal(f->buf, want, SZ);
	free(want);
}

/* A read-only MR refuses a WRITE; the QP is then in ERR and flushes. */
static void test_write_to_read_only_mr(void **state)
{
	struct fx *f = *state;
	struct svt_reply r;
	struct ibv_wc wc;

	peer_reg(f, 4096, IBV_ACCESS_REMOTE_READ, &r);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, 4096, r.addr, r.rkey), IBV_WC_SUCCESS);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 4096, r.addr, r.rkey),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(f->ep.id->qp->state, IBV_QPS_ERR);
	assert_int_equal(svt_post_rdma(f->ep.id->qp, IBV_WR_RDMA_READ, 10, f->mr, 0,
				       16, r.addr, r.rkey, 0), 0);
	assert_int_equal(svt_wait_wc(f->ep.cq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 10);
}

static void test_forged_rkey(void **state)
{
	struct fx *f = *state;
	struct svt_reply r;

	peer_reg(f, 4096, RW_ACCESS, &r);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, 64, r.addr, r.rkey ^ 0x5a5a00),
			 IBV_WC_REM_ACCESS_ERR);
}

static void test_out_of_bounds(void **state)
{
	struct fx *f = *state;
	struct svt_reply r;

	peer_reg(f, 8192, RW_ACCESS, &r);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, 8192, r.addr, r.rkey), IBV_WC_SUCCESS);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, 64, r.addr + 8192 - 32, r.rkey),
			 IBV_WC_REM_ACCESS_ERR);
}

static void test_before_start(void **state)
{
	struct fx *f = *state;
	struct svt_reply r;

	peer_reg(f, 8192, RW_ACCESS, &r);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 64, r.addr - 1, r.rkey),
			 IBV_WC_REM_ACCESS_ERR);
}

static void test_rkey_after_dereg(void **state)
{
	struct fx *f = *state;
	struct svt_reply r, d;

	peer_reg(f, 4096, RW_ACCESS, &r);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 64, r.addr, r.rkey), IBV_WC_SUCCESS);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_DEREG, r.idx, 0, 0, &d), 0);
	assert_int_equal(d.rc, 0);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 64, r.addr, r.rkey),
			 IBV_WC_REM_ACCESS_ERR);
}

/* A type 2 window works on its QP until invalidated; the MR's own rkey
 * was never handed out, so the window is the only way in. */
static void test_mw_invalidate(void **state)
{
	struct fx *f = *state;
	struct svt_reply r, w, d;

	peer_reg(f, 4096, RW_ACCESS | IBV_ACCESS_MW_BIND, &r);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_MW_BIND, r.idx, 0,
				      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
				      &w), 0);
	assert_int_equal(w.rc, 0);
	assert_int_not_equal(w.rkey, r.rkey);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 4096, w.addr, w.rkey), IBV_WC_SUCCESS);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_DEREG, r.idx, 0, 0, &d), 0);
	assert_int_equal(d.rc, -EBUSY);		/* a bound window pins its MR */
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_MW_INV, w.idx, 0, 0, &d), 0);
	assert_int_equal(d.rc, 0);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 64, w.addr, w.rkey),
			 IBV_WC_REM_ACCESS_ERR);
}

/* A read-only window refuses a WRITE even though the MR allows it. */
static void test_mw_rights(void **state)
{
	struct fx *f = *state;
	struct svt_reply r, w;

	peer_reg(f, 4096, RW_ACCESS | IBV_ACCESS_MW_BIND, &r);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_MW_BIND, r.idx, 0,
				      IBV_ACCESS_REMOTE_READ, &w), 0);
	assert_int_equal(w.rc, 0);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, 4096, w.addr, w.rkey), IBV_WC_SUCCESS);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 16, w.addr, w.rkey),
			 IBV_WC_REM_ACCESS_ERR);
}

/* A type 2 window bound to one QP is refused on another QP of the peer. */
static void test_mw_other_qp(void **state)
{
	struct fx *f = *state;
	struct svt_ep e2;
	struct svt_reply r, w;
	struct ibv_mr *mr2;
	struct ibv_wc wc;
	uint8_t b[64];

	assert_int_equal(svt_connect(&e2, f->peer.port, &f->peer), 0);
	mr2 = ibv_reg_mr(e2.pd, b, sizeof(b), RW_ACCESS);
	assert_non_null(mr2);
	peer_reg(f, 4096, RW_ACCESS | IBV_ACCESS_MW_BIND, &r);
	/* bound to the peer's QP of connection 0, i.e. f->ep */
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_MW_BIND, r.idx, 0,
				      IBV_ACCESS_REMOTE_READ, &w), 0);
	assert_int_equal(w.rc, 0);
	assert_int_equal(svt_post_rdma(e2.id->qp, IBV_WR_RDMA_READ, 5, mr2, 0, 64,
				       w.addr, w.rkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(e2.cq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_op(f, IBV_WR_RDMA_READ, 64, w.addr, w.rkey), IBV_WC_SUCCESS);
	ibv_dereg_mr(mr2);
	svt_ep_fini(&e2);
}

/* Moving a QP to ERR flushes every outstanding send and receive. */
static void test_err_flushes(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *qp = f->ep.id->qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_sge sge = { .addr = (uintptr_t)f->buf, .length = 64,
			       .lkey = f->mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND }, *sbad;
	struct ibv_wc wc;
	int sends = 0, recvs = 0;

	for (int i = 0; i < 3; i++) {
		rwr.wr_id = 100 + (uint64_t)i;
		assert_int_equal(ibv_post_recv(qp, &rwr, &rbad), 0);
		/* the peer posts no receive: these SENDs stay outstanding */
		swr.wr_id = 200 + (uint64_t)i;
		assert_int_equal(ibv_post_send(qp, &swr, &sbad), 0);
	}
	assert_int_equal(ibv_poll_cq(f->ep.cq, 1, &wc), 0);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	while (svt_wait_wc(f->ep.cq, 200, &wc) == 0) {
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		if (wc.wr_id >= 200)
			assert_int_equal(wc.wr_id, 200 + (uint64_t)sends++);
		else
			assert_int_equal(wc.wr_id, 100 + (uint64_t)recvs++);
	}
	assert_int_equal(sends, 3);
	assert_int_equal(recvs, 3);
	assert_int_equal(qp->state, IBV_QPS_ERR);
}

/* An illegal transition is refused; RTS -> RTS with no change is fine. */
static void test_state_machine(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_modify_qp(f->ep.id->qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(f->ep.id->qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(ibv_query_qp(f->ep.id->qp, &q, IBV_QP_STATE, &ia), 0);
	assert_int_equal(q.qp_state, IBV_QPS_RTS);
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(ibv_modify_qp(f->ep.id->qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(svt_post_rdma(f->ep.id->qp, IBV_WR_RDMA_WRITE, 1, f->mr, 0,
				       8, 0, 0, 0), EINVAL);
}

/* The completion channel fd becomes readable when a CQE arrives. */
static void test_comp_channel_fd(void **state)
{
	struct fx *f = *state;
	struct pollfd pfd = { .fd = f->ep.cc->fd, .events = POLLIN };
	struct svt_reply r;
	struct ibv_cq *cq;
	void *ctx;
	struct ibv_wc wc;

	peer_reg(f, 4096, RW_ACCESS, &r);
	assert_int_equal(ibv_req_notify_cq(f->ep.cq, 0), 0);
	assert_int_equal(poll(&pfd, 1, 50), 0);
	assert_int_equal(svt_post_rdma(f->ep.id->qp, IBV_WR_RDMA_WRITE, 3, f->mr, 0,
				       128, r.addr, r.rkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_cq_event(f->ep.cc, &cq, &ctx), 0);
	assert_ptr_equal(cq, f->ep.cq);
	assert_ptr_equal(ctx, &f->ep);
	ibv_ack_cq_events(cq, 1);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	/* not re-armed: the next completion stays silent */
	assert_int_equal(svt_post_rdma(f->ep.id->qp, IBV_WR_RDMA_WRITE, 4, f->mr, 0,
				       128, r.addr, r.rkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(cq, 5000, &wc), 0);
	assert_int_equal(poll(&pfd, 1, 50), 0);
}

/* Unsignaled WRs make no CQE; a local key error is a local protection error. */
static void test_unsignaled_and_lkey(void **state)
{
	struct fx *f = *state;
	struct svt_reply r;
	struct ibv_wc wc;

	peer_reg(f, 4096, RW_ACCESS, &r);
	assert_int_equal(svt_post_rdma(f->ep.id->qp, IBV_WR_RDMA_WRITE, 1, f->mr, 0,
				       64, r.addr, r.rkey, 0), 0);
	assert_int_equal(one_op(f, IBV_WR_RDMA_WRITE, 64, r.addr, r.rkey), IBV_WC_SUCCESS);
	assert_int_equal(ibv_poll_cq(f->ep.cq, 1, &wc), 0);
	{
		struct ibv_sge sge = { .addr = (uintptr_t)f->buf, .length = 64,
				       .lkey = f->mr->lkey ^ 0x1000 };
		struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.rdma.remote_addr = r.addr;
		wr.wr.rdma.rkey = r.rkey;
		assert_int_equal(ibv_post_send(f->ep.id->qp, &wr, &bad), 0);
		assert_int_equal(svt_wait_wc(f->ep.cq, 5000, &wc), 0);
		assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	}
}

static void test_device_caps(void **state)
{
	struct fx *f = *state;
	struct ibv_device_attr_ex a;
	struct ibv_port_attr p;

	assert_int_equal(ibv_query_device_ex(f->ep.id->verbs, NULL, &a), 0);
	assert_true(a.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_int_equal(ibv_query_port(f->ep.id->verbs, 1, &p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
	assert_string_equal(ibv_get_device_name(f->ep.id->verbs->device), "softverbs0");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_write_read_roundtrip), T(test_write_to_read_only_mr),
		T(test_forged_rkey), T(test_out_of_bounds), T(test_before_start),
		T(test_rkey_after_dereg), T(test_mw_invalidate), T(test_mw_rights),
		T(test_mw_other_qp), T(test_err_flushes), T(test_state_machine),
		T(test_comp_channel_fd), T(test_unsignaled_and_lkey),
		T(test_device_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
