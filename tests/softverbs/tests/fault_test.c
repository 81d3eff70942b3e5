// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/fault_test.c: the fault knobs of libsoftverbs, set
 * with softverbs_fault_set() in this (requester) process while a forked
 * responder process runs its own emulated NIC. Emulated: a cut link
 * (drop_conn_after, softverbs_drop_conn), late and lost completions
 * (delay_cqe_ms, lose_cqe), a failing registration (fail_reg), a QP that
 * goes to ERR with a fatal async event (err_qp_after, softverbs_qp_error)
 * and a device without memory windows. No real RDMA hardware is used.
 */
#include "svt.h"
#include "softverbs.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#define RW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
		   IBV_ACCESS_REMOTE_WRITE)
#define SZ 65536

struct fx {
	struct svt_peer peer;
	struct svt_ep ep;
	uint8_t buf[SZ];
	struct ibv_mr *mr;
	struct svt_reply r;	/* the peer's MR */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	softverbs_fault_set(NULL);
	if (!f || svt_peer_start(&f->peer) || svt_connect(&f->ep, f->peer.port, &f->peer))
		return -1;
	f->mr = ibv_reg_mr(f->ep.pd, f->buf, SZ, RW_ACCESS);
	if (!f->mr || svt_peer_cmd(&f->peer, SVT_REG, SZ, RW_ACCESS, 0, &f->r) || f->r.rc)
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	int st;

	softverbs_fault_set(NULL);
	ibv_dereg_mr(f->mr);
	svt_ep_fini(&f->ep);
	st = svt_peer_stop(&f->peer);
	free(f);
	return st;
}

static void post_write(struct fx *f, uint64_t wr_id)
{
	assert_int_equal(svt_post_rdma(f->ep.id->qp, IBV_WR_RDMA_WRITE, wr_id, f->mr,
				       0, SZ, f->r.addr, f->r.rkey, IBV_SEND_SIGNALED), 0);
}

static enum ibv_wc_status wait_status(struct fx *f, uint64_t wr_id)
{
	struct ibv_wc wc;

	assert_int_equal(svt_wait_wc(f->ep.cq, 5000, &wc), 0);
	assert_int_equal(wc.wr_id, wr_id);
	return wc.status;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_drop_conn_after(void **state)
{
	struct fx *f = *state;
	struct svt_reply r;

	softverbs_fault_set("drop_conn_after=2");
	post_write(f, 1);
	post_write(f, 2);
	post_write(f, 3);
	assert_int_equal(wait_status(f, 1), IBV_WC_SUCCESS);
	assert_int_equal(wait_status(f, 2), IBV_WC_SUCCESS);
	assert_int_equal(wait_status(f, 3), IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(svt_expect(f->ep.ch, RDMA_CM_EVENT_DISCONNECTED), 0);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_EVENT, RDMA_CM_EVENT_DISCONNECTED,
				      0, 0, &r), 0);
	assert_int_equal(r.rc, 0);
	post_write(f, 4);		/* QP is in ERR now: flushed */
	assert_int_equal(wait_status(f, 4), IBV_WC_WR_FLUSH_ERR);
}

static void test_drop_conn_api(void **state)
{
	struct fx *f = *state;
	struct svt_reply r;

	assert_int_equal(softverbs_drop_conn(f->ep.id), 0);
	assert_int_equal(svt_expect(f->ep.ch, RDMA_CM_EVENT_DISCONNECTED), 0);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_EVENT, RDMA_CM_EVENT_DISCONNECTED,
				      0, 0, &r), 0);
	assert_int_equal(r.rc, 0);
	post_write(f, 1);		/* the QP is still RTS, but no one answers */
	assert_int_equal(wait_status(f, 1), IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(softverbs_drop_conn(f->ep.id), -ENOTCONN);
}

static void test_delay_cqe(void **state)
{
	struct fx *f = *state;
	struct pollfd pfd = { .fd = f->ep.cc->fd, .events = POLLIN };
	struct ibv_wc wc;
	struct svt_reply c;
	uint64_t t0;

	softverbs_fault_set("delay_cqe_ms=300");
	svt_fill(f->buf, SZ, 11);
	assert_int_equal(ibv_req_notify_cq(f->ep.cq, 0), 0);
	t0 = now_ms();
	post_write(f, 1);
	usleep(100000);
	/* the write itself has landed; only its completion is late */
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_CHECK, f->r.idx, 11, 0, &c), 0);
	assert_int_equal(c.rc, 0);
	assert_int_equal(ibv_poll_cq(f->ep.cq, 1, &wc), 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_true(now_ms() - t0 >= 300);
	assert_int_equal(ibv_poll_cq(f->ep.cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static void test_lose_cqe(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct svt_reply c;

	softverbs_fault_set("lose_cqe=1");
	svt_fill(f->buf, SZ, 23);
	post_write(f, 1);
	assert_int_equal(svt_post_rdma(f->ep.id->qp, IBV_WR_RDMA_READ, 2, f->mr, SZ - 8,
				       8, f->r.addr, f->r.rkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(wait_status(f, 2), IBV_WC_SUCCESS);	/* 1 never shows */
	usleep(50000);
	assert_int_equal(ibv_poll_cq(f->ep.cq, 1, &wc), 0);
	assert_int_equal(svt_peer_cmd(&f->peer, SVT_CHECK, f->r.idx, 23, 0, &c), 0);
	assert_int_equal(c.rc, 0);				/* but it happened */
}

static void test_fail_reg(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *a, *b, *c;

	softverbs_fault_set("fail_reg=2");
	a = ibv_reg_mr(f->ep.pd, f->buf, 64, 0);
	b = ibv_reg_mr(f->ep.pd, f->buf, 64, 0);
	assert_null(b);
	assert_int_equal(errno, ENOMEM);
	c = ibv_reg_mr(f->ep.pd, f->buf, 64, 0);
	assert_non_null(a);
	assert_non_null(c);
	ibv_dereg_mr(a);
	ibv_dereg_mr(c);
}

static void expect_qp_fatal(struct fx *f)
{
	struct ibv_context *ctx = f->ep.id->verbs;
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ae;

	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_async_event(ctx, &ae), 0);
	assert_int_equal(ae.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(ae.element.qp, f->ep.id->qp);
	ibv_ack_async_event(&ae);
}

static void test_err_qp_after(void **state)
{
	struct fx *f = *state;

	softverbs_fault_set("err_qp_after=1");
	post_write(f, 1);
	assert_int_equal(wait_status(f, 1), IBV_WC_SUCCESS);
	post_write(f, 2);
	assert_int_equal(wait_status(f, 2), IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(f->ep.id->qp->state, IBV_QPS_ERR);
	expect_qp_fatal(f);
}

static void test_qp_error_api(void **state)
{
	struct fx *f = *state;
	struct ibv_sge sge = { .addr = (uintptr_t)f->buf, .length = 8,
			       .lkey = f->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(f->ep.id->qp, &rwr, &bad), 0);
	assert_int_equal(softverbs_qp_error(f->ep.id->qp), 0);
	assert_int_equal(wait_status(f, 7), IBV_WC_WR_FLUSH_ERR);
	expect_qp_fatal(f);
}

static void test_mw_off(void **state)
{
	struct fx *f = *state;
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_device_attr a;
	struct ibv_pd *pd;

	assert_non_null(l);
	softverbs_set_mw_support(0);
	ctx = ibv_open_device(l[0]);
	assert_non_null(ctx);
	assert_int_equal(ibv_query_device(ctx, &a), 0);
	assert_false(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_int_equal(a.max_mw, 0);
	pd = ibv_alloc_pd(ctx);
	assert_null(ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	assert_int_equal(errno, EOPNOTSUPP);
	softverbs_set_mw_support(1);
	assert_non_null(f);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(l);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_drop_conn_after), T(test_drop_conn_api), T(test_delay_cqe),
		T(test_lose_cqe), T(test_fail_reg), T(test_err_qp_after),
		T(test_qp_error_api), T(test_mw_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
