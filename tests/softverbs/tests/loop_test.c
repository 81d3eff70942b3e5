// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/loop_test.c: both ends of an RC connection in this
 * one process, sharing one emulated NIC (how a unit test of marud's rdma
 * listener with an in-process client would run). Emulated: bulk RDMA
 * WRITEs in both directions at once (the wire must not deadlock when both
 * sides' socket buffers fill), remote invalidation of a type 2 window by
 * SEND_WITH_INV, the refusal to rebind a bound type 2 window, and
 * WRITE_WITH_IMM consuming a receive, and a SEND waiting for a receive
 * when the responder's QP fails. No real RDMA
 * hardware is used.
 */
#include "svt.h"
#include "softverbs.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define BULK (4u << 20)
#define NWR 8

static void drain(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc;

	for (int i = 0; i < n; i++) {
		assert_int_equal(svt_wait_wc(cq, 20000, &wc), 0);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
}

static void test_bidirectional_bulk(void **state)
{
	struct svt_loop l;
	uint8_t *a = malloc(2 * BULK), *b = malloc(2 * BULK);
	struct ibv_mr *ma, *mb;
	uint32_t chunk = BULK / NWR;

	assert_int_equal(svt_loop_open(&l), 0);
	ma = ibv_reg_mr(l.cli.pd, a, 2 * BULK, RW);
	mb = ibv_reg_mr(l.sid->qp->pd, b, 2 * BULK, RW);
	assert_non_null(ma);
	assert_non_null(mb);
	svt_fill(a, BULK, 1);
	svt_fill(b, BULK, 2);
	/* each side writes its first half into the other's second half */
	for (uint32_t i = 0; i < NWR; i++) {
		assert_int_equal(svt_post_rdma(l.cli.id->qp, IBV_WR_RDMA_WRITE, i, ma,
					       i * chunk, chunk,
					       (uintptr_t)b + BULK + i * chunk, mb->rkey,
					       IBV_SEND_SIGNALED), 0);
		assert_int_equal(svt_post_rdma(l.sid->qp, IBV_WR_RDMA_WRITE, i, mb,
					       i * chunk, chunk,
					       (uintptr_t)a + BULK + i * chunk, ma->rkey,
					       IBV_SEND_SIGNALED), 0);
	}
	drain(l.cli.cq, NWR);
	drain(l.scq, NWR);
	assert_memory_equal(a, b + BULK, BULK);
	assert_memory_equal(b, a + BULK, BULK);
	ibv_dereg_mr(ma);
	ibv_dereg_mr(mb);
	svt_loop_close(&l);
	free(a);
	free(b);
}

static struct ibv_wc recv_one(struct svt_loop *l, struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64,
			       .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 50, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;

	assert_int_equal(ibv_post_recv(l->sid->qp, &rwr, &bad), 0);
	assert_int_equal(svt_wait_wc(l->scq, 5000, &wc), 0);
	assert_int_equal(wc.wr_id, 50);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	return wc;
}

static uint32_t bind_window(struct svt_loop *l, struct ibv_mr *mr, struct ibv_mw *mw,
			    enum ibv_wc_status *st)
{
	struct ibv_send_wr wr = { .wr_id = 40, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr,
		.addr = (uintptr_t)mr->addr + 64, .length = 64,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	assert_int_equal(ibv_post_send(l->sid->qp, &wr, &bad), 0);
	assert_int_equal(svt_wait_wc(l->scq, 5000, &wc), 0);
	*st = wc.status;
	return wr.bind_mw.rkey;
}

/* A bound type 2 window must be invalidated before it is bound again. */
static void test_rebind_bound_mw(void **state)
{
	struct svt_loop l;
	static uint8_t sbuf[128];
	struct ibv_mr *ms;
	struct ibv_mw *mw;
	enum ibv_wc_status st;

	assert_int_equal(svt_loop_open(&l), 0);
	ms = ibv_reg_mr(l.sid->qp->pd, sbuf, sizeof(sbuf), RW | IBV_ACCESS_MW_BIND);
	mw = ibv_alloc_mw(l.sid->qp->pd, IBV_MW_TYPE_2);
	assert_non_null(ms);
	assert_non_null(mw);
	bind_window(&l, ms, mw, &st);
	assert_int_equal(st, IBV_WC_SUCCESS);
	bind_window(&l, ms, mw, &st);
	assert_int_equal(st, IBV_WC_MW_BIND_ERR);
	assert_int_equal(l.sid->qp->state, IBV_QPS_ERR);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	svt_loop_close(&l);
}

static enum ibv_wc_status write_via(struct svt_loop *l, struct ibv_mr *mc,
				    uint64_t raddr, uint32_t rkey)
{
	struct ibv_wc wc;

	assert_int_equal(svt_post_rdma(l->cli.id->qp, IBV_WR_RDMA_WRITE, 61, mc, 0, 64,
				       raddr, rkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(l->cli.cq, 5000, &wc), 0);
	return wc.status;
}

/* The peer's SEND_WITH_INV invalidates the window it was given. */
static void test_send_with_inv(void **state)
{
	struct svt_loop l;
	static uint8_t sbuf[128], cbuf[128];
	struct ibv_mr *ms, *mc;
	struct ibv_mw *mw;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 60, .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	enum ibv_wc_status st;

	assert_int_equal(svt_loop_open(&l), 0);
	ms = ibv_reg_mr(l.sid->qp->pd, sbuf, sizeof(sbuf), RW | IBV_ACCESS_MW_BIND);
	mc = ibv_reg_mr(l.cli.pd, cbuf, sizeof(cbuf), RW);
	mw = ibv_alloc_mw(l.sid->qp->pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	wr.invalidate_rkey = bind_window(&l, ms, mw, &st);
	assert_int_equal(st, IBV_WC_SUCCESS);
	assert_int_equal(write_via(&l, mc, (uintptr_t)sbuf + 64, wr.invalidate_rkey),
			 IBV_WC_SUCCESS);
	sge = (struct ibv_sge){ .addr = (uintptr_t)cbuf, .length = 8, .lkey = mc->lkey };
	assert_int_equal(ibv_post_send(l.cli.id->qp, &wr, &bad), 0);
	wc = recv_one(&l, ms);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, wr.invalidate_rkey);
	assert_int_equal(svt_wait_wc(l.cli.cq, 5000, &wc), 0);
	assert_int_equal(wc.wr_id, 60);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(write_via(&l, mc, (uintptr_t)sbuf + 64, wr.invalidate_rkey),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(mc), 0);
	svt_loop_close(&l);
}

static void test_write_with_imm(void **state)
{
	struct svt_loop l;
	static uint8_t sbuf[128], cbuf[128];
	struct ibv_mr *ms, *mc;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 70, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	assert_int_equal(svt_loop_open(&l), 0);
	ms = ibv_reg_mr(l.sid->qp->pd, sbuf, sizeof(sbuf), RW);
	mc = ibv_reg_mr(l.cli.pd, cbuf, sizeof(cbuf), RW);
	assert_non_null(ms);
	assert_non_null(mc);
	memcpy(cbuf, "immediate", 10);
	sge = (struct ibv_sge){ .addr = (uintptr_t)cbuf, .length = 10, .lkey = mc->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.imm_data = htobe32(0xabcd);
	wr.wr.rdma.remote_addr = (uintptr_t)sbuf + 100;
	wr.wr.rdma.rkey = ms->rkey;
	assert_int_equal(ibv_post_send(l.cli.id->qp, &wr, &bad), 0);
	wc = recv_one(&l, ms);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xabcd);
	assert_string_equal((char *)sbuf + 100, "immediate");
	assert_int_equal(svt_wait_wc(l.cli.cq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	ibv_dereg_mr(ms);
	ibv_dereg_mr(mc);
	svt_loop_close(&l);
}

/* A SEND waiting for a receive dies with the responder's QP. */
static void test_waiting_send_responder_err(void **state)
{
	struct svt_loop l;
	static uint8_t cbuf[64];
	struct ibv_mr *mc;
	struct ibv_wc wc;

	assert_int_equal(svt_loop_open(&l), 0);
	mc = ibv_reg_mr(l.cli.pd, cbuf, sizeof(cbuf), 0);
	assert_non_null(mc);
	assert_int_equal(svt_post_rdma(l.cli.id->qp, IBV_WR_SEND, 80, mc, 0, 8, 0, 0,
				       IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(l.cli.cq, 50, &wc), -ETIMEDOUT);
	assert_int_equal(softverbs_qp_error(l.sid->qp), 0);
	assert_int_equal(svt_wait_wc(l.cli.cq, 5000, &wc), 0);
	assert_int_equal(wc.wr_id, 80);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	ibv_dereg_mr(mc);
	svt_loop_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bidirectional_bulk),
		cmocka_unit_test(test_rebind_bound_mw),
		cmocka_unit_test(test_send_with_inv),
		cmocka_unit_test(test_write_with_imm),
		cmocka_unit_test(test_waiting_send_responder_err),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
