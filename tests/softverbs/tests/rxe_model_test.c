// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/rxe_model_test.c: the switches by which the
 * software verbs device models Linux's rdma_rxe where providers differ,
 * both ends of an RC connection in this one process (emulated NIC, no
 * RNIC). A READ straddling a read-only type 2 window's end is refused by
 * default (the window's own bounds, as the IB spec asks) and goes through
 * with softverbs_set_mw_bounds(0) (rxe: only the MR's range), while a READ
 * past the MR and a WRITE through the read-only window stay refused; a QP
 * destroy waits destroy_bound_qp_ms per type 2 window still bound to it
 * (rxe's wait for the QP's references) and not once the window is gone;
 * reg_mr_us_per_mib slows a registration in proportion to its length.
 */
#include "svt.h"
#include "softverbs.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#define PAGE 4096u

static uint8_t tbuf[3 * PAGE], cbuf[PAGE];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct rig {
	struct svt_loop l;
	struct ibv_mr *tmr, *cmr;
	struct ibv_mw *mw;
	uint32_t rkey;
};

/* A loop with a read-only type 2 window over the middle page of a 3-page MR. */
static void rig_open(struct rig *g)
{
	struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	memset(g, 0, sizeof(*g));
	assert_int_equal(svt_loop_open(&g->l), 0);
	g->tmr = ibv_reg_mr(g->l.sid->qp->pd, tbuf, sizeof(tbuf),
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	g->cmr = ibv_reg_mr(g->l.cli.pd, cbuf, sizeof(cbuf), IBV_ACCESS_LOCAL_WRITE);
	g->mw = ibv_alloc_mw(g->l.sid->qp->pd, IBV_MW_TYPE_2);
	assert_non_null(g->tmr);
	assert_non_null(g->cmr);
	assert_non_null(g->mw);
	wr.bind_mw.mw = g->mw;
	wr.bind_mw.rkey = ibv_inc_rkey(g->mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = g->tmr,
		.addr = (uintptr_t)tbuf + PAGE, .length = PAGE,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ };
	assert_int_equal(ibv_post_send(g->l.sid->qp, &wr, &bad), 0);
	assert_int_equal(svt_wait_wc(g->l.scq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	g->rkey = wr.bind_mw.rkey;
}

static void rig_close(struct rig *g)
{
	if (g->mw)
		assert_int_equal(ibv_dealloc_mw(g->mw), 0);
	svt_loop_close(&g->l);
	ibv_dereg_mr(g->tmr);
	ibv_dereg_mr(g->cmr);
}

/* One READ or WRITE of len bytes at offset off of the window's page. */
static enum ibv_wc_status op(struct rig *g, enum ibv_wr_opcode o, int64_t off, size_t len)
{
	struct ibv_wc wc;

	assert_int_equal(svt_post_rdma(g->l.cli.id->qp, o, 2, g->cmr, 0, len,
				       (uintptr_t)tbuf + PAGE + (uint64_t)off, g->rkey,
				       IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(g->l.cli.cq, 5000, &wc), 0);
	return wc.status;
}

static int teardown(void **state)
{
	softverbs_set_mw_bounds(1);
	softverbs_fault_set("");
	return 0;
}

static void test_window_bounds_spec(void **state)
{
	struct rig g;

	rig_open(&g);
	assert_int_equal(op(&g, IBV_WR_RDMA_READ, 0, 64), IBV_WC_SUCCESS);
	assert_int_equal(op(&g, IBV_WR_RDMA_READ, PAGE - 64, 128), IBV_WC_REM_ACCESS_ERR);
	rig_close(&g);
}

static void test_window_bounds_rxe(void **state)
{
	struct rig g;

	softverbs_set_mw_bounds(0);
	rig_open(&g);
	/* past the window's end and before its start, inside its MR: allowed */
	assert_int_equal(op(&g, IBV_WR_RDMA_READ, PAGE - 64, 128), IBV_WC_SUCCESS);
	assert_int_equal(op(&g, IBV_WR_RDMA_READ, -(int64_t)PAGE, 64), IBV_WC_SUCCESS);
	/* past the MR: refused */
	assert_int_equal(op(&g, IBV_WR_RDMA_READ, 2 * PAGE - 64, 128), IBV_WC_REM_ACCESS_ERR);
	rig_close(&g);
	/* the window's rights still hold */
	rig_open(&g);
	assert_int_equal(op(&g, IBV_WR_RDMA_WRITE, 0, 64), IBV_WC_REM_ACCESS_ERR);
	rig_close(&g);
}

static void test_destroy_waits_for_bound_windows(void **state)
{
	struct rig g;
	uint64_t t0;

	assert_int_equal(softverbs_fault_set("destroy_bound_qp_ms=300"), 0);
	rig_open(&g);
	t0 = now_ms();
	rdma_destroy_qp(g.l.sid);	/* the window still bound to it */
	assert_true(now_ms() - t0 >= 300);
	assert_int_equal(ibv_dealloc_mw(g.mw), 0);
	g.mw = NULL;
	rig_close(&g);

	rig_open(&g);
	assert_int_equal(ibv_dealloc_mw(g.mw), 0);	/* windows first */
	g.mw = NULL;
	t0 = now_ms();
	rdma_destroy_qp(g.l.sid);
	assert_true(now_ms() - t0 < 300);
	rig_close(&g);
}

static void test_registration_time(void **state)
{
	size_t len = 1u << 20;
	uint8_t *buf = malloc(len);
	struct ibv_context *ctx;
	struct ibv_device **list;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint64_t t0;
	int n;

	assert_non_null(buf);
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	ctx = ibv_open_device(list[0]);
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	assert_int_equal(softverbs_fault_set("reg_mr_us_per_mib=200000"), 0);
	t0 = now_ms();
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);	/* 1 MiB: 200 ms */
	assert_non_null(mr);
	assert_true(now_ms() - t0 >= 200);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	t0 = now_ms();
	mr = ibv_reg_mr(pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE);	/* 4 KiB: under 1 ms */
	assert_non_null(mr);
	assert_true(now_ms() - t0 < 100);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	ibv_free_device_list(list);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_window_bounds_spec, teardown),
		cmocka_unit_test_teardown(test_window_bounds_rxe, teardown),
		cmocka_unit_test_teardown(test_destroy_waits_for_bound_windows, teardown),
		cmocka_unit_test_teardown(test_registration_time, teardown),
	};

	return cmocka_run_group_tests_name("rxe_model", tests, NULL, NULL);
}
