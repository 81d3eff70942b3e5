// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/preload_test.c: libsoftverbs by LD_PRELOAD, or
 * linked ahead of the real libraries (link_test, built from this file).
 * This program is linked against the real libibverbs and librdmacm, as
 * libmaru and marud are; meson runs it with LD_PRELOAD=libsoftverbs.so or
 * links libsoftverbs first, so every
 * ibv_* and rdma_* call, and the inline verbs that dispatch through the
 * context's ops, must land in the emulated device. Emulated: the device
 * list, an RC connection made within this process, RDMA WRITE and READ
 * and a type 2 memory window. No real RDMA hardware is used.
 */
#include "svt.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_preloaded(void **state)
{
	int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "softverbs_active");
	struct ibv_device **l;
	int n = 0;

	if (!active)
		fail_msg("libsoftverbs is not preloaded: LD_PRELOAD=%s",
			 getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "(unset)");
	assert_int_equal(active(), 1);
	l = ibv_get_device_list(&n);
	assert_non_null(l);
	assert_int_equal(n, 1);
	assert_string_equal(ibv_get_device_name(l[0]), "softverbs0");
	ibv_free_device_list(l);
}

static void test_write_read_mw(void **state)
{
	struct svt_loop lp;
	static uint8_t cbuf[8192], dst[4096];
	uint8_t *src = cbuf, *back = cbuf + 4096;
	struct ibv_mr *ms, *md;
	struct ibv_mw *mw;
	struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	assert_int_equal(svt_loop_open(&lp), 0);
	ms = ibv_reg_mr(lp.cli.pd, cbuf, sizeof(cbuf), IBV_ACCESS_LOCAL_WRITE);
	md = ibv_reg_mr(lp.sid->qp->pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_MW_BIND);
	assert_non_null(ms);
	assert_non_null(md);
	mw = ibv_alloc_mw(lp.sid->qp->pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = md,
		.addr = (uintptr_t)dst, .length = sizeof(dst),
		.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE };
	assert_int_equal(ibv_post_send(lp.sid->qp, &wr, &bad), 0);
	assert_int_equal(svt_wait_wc(lp.scq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	svt_fill(src, 4096, 3);
	assert_int_equal(svt_post_rdma(lp.cli.id->qp, IBV_WR_RDMA_WRITE, 2, ms, 0,
				       4096, (uintptr_t)dst, wr.bind_mw.rkey,
				       IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(lp.cli.cq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(src, dst, 4096);
	assert_int_equal(svt_post_rdma(lp.cli.id->qp, IBV_WR_RDMA_READ, 3, ms,
				       4096, 4096,
				       (uintptr_t)dst, wr.bind_mw.rkey,
				       IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(lp.cli.cq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(back, src, 4096);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(ms);
	ibv_dereg_mr(md);
	svt_loop_close(&lp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preloaded),
		cmocka_unit_test(test_write_read_mw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
