// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/env_test.c: the environment knobs of libsoftverbs,
 * which meson sets for this test: SOFTVERBS_FAULT="fail_reg=1" and
 * SOFTVERBS_MW=0. Emulated: a device whose first memory registration fails
 * and which has no memory windows, so a caller's fallback path can be run.
 * No real RDMA hardware is used.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_env_knobs(void **state)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_device_attr a;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	char buf[64];

	assert_string_equal(getenv("SOFTVERBS_FAULT"), "fail_reg=1");
	assert_non_null(l);
	ctx = ibv_open_device(l[0]);
	assert_non_null(ctx);
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	assert_null(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, ENOMEM);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(ibv_query_device(ctx, &a), 0);
	assert_false(a.device_cap_flags & (IBV_DEVICE_MEM_WINDOW |
					   IBV_DEVICE_MEM_WINDOW_TYPE_2B));
	assert_null(ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);	/* the MR still uses it */
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	ibv_free_device_list(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_env_knobs) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
