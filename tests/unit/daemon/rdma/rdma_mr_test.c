/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/rdma_mr_test.c: the pool registered once per
 * device (daemon/rdma/rdma_mr.c), on the software verbs device linked
 * ahead of libibverbs, with a struct rdma_srv made by hand over a plain
 * buffer: a device with type 2 windows gets an MR over the whole pool that
 * only windows reach, the same device asked again gives the same entry, a
 * device without windows exposes the pool (whole_pool), a failed
 * registration leaves nothing behind, a full table refuses, and closing
 * frees every PD and MR (the devices close cleanly).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"
#include "rdma_priv.h"
#include "softverbs.h"

#define POOL_BYTES	(4U << 20)

struct fx {
	struct rdma_srv r;
	struct ibv_device **list;
};

static struct ibv_context *open_dev(struct fx *f)
{
	struct ibv_context *ctx;

	ctx = ibv_open_device(f->list[0]);
	assert_non_null(ctx);
	return ctx;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int n = 0;

	if (!f || softverbs_active() != 1)
		return -1;
	f->r.base = aligned_alloc(4096, POOL_BYTES);
	f->r.size = POOL_BYTES;
	f->list = ibv_get_device_list(&n);
	if (!f->r.base || !f->list || n < 1)
		return -1;
	softverbs_set_mw_support(1);
	softverbs_fault_set("");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	rdma_devs_close(&f->r);
	ibv_free_device_list(f->list);
	free(f->r.base);
	free(f);
	softverbs_set_mw_support(1);
	softverbs_fault_set("");
	return 0;
}

static void test_windows_device(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	struct rdma_dev *d = rdma_dev_get(&f->r, ctx), *again;

	assert_non_null(d);
	assert_int_equal(f->r.ndev, 1);
	assert_int_equal(d->windows, 1);
	assert_int_equal(f->r.whole_pool, 0);
	assert_ptr_equal(d->ctx, ctx);
	assert_non_null(d->pd);
	assert_non_null(d->mr);
	assert_int_equal(d->mr->length, POOL_BYTES);
	assert_ptr_equal(d->mr->pd, d->pd);
	/* Once per device. */
	again = rdma_dev_get(&f->r, ctx);
	assert_ptr_equal(again, d);
	assert_int_equal(f->r.ndev, 1);
	rdma_devs_close(&f->r);
	assert_int_equal(f->r.ndev, 0);
	/* Nothing of marud's is left on the device. */
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_no_windows(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx;
	struct rdma_dev *d;

	softverbs_set_mw_support(0);
	ctx = open_dev(f);
	d = rdma_dev_get(&f->r, ctx);
	assert_non_null(d);
	assert_int_equal(d->windows, 0);
	assert_int_equal(f->r.whole_pool, 1);
	rdma_devs_close(&f->r);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_register_fails(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);

	assert_int_equal(softverbs_fault_set("fail_reg=1"), 0);
	assert_null(rdma_dev_get(&f->r, ctx));
	assert_int_equal(f->r.ndev, 0);
	softverbs_fault_set("");
	/* The PD allocated for it was freed again. */
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_table_full(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	unsigned int i;

	for (i = 0; i < RDMA_MAX_DEV; i++)
		f->r.dev[i].ctx = (struct ibv_context *)(uintptr_t)(0x1000 + i);
	f->r.ndev = RDMA_MAX_DEV;
	assert_null(rdma_dev_get(&f->r, ctx));
	f->r.ndev = 0;
	assert_int_equal(ibv_close_device(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_windows_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_windows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_register_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_full, setup, teardown),
	};

	log_init("rdma_mr_test", 1, 0);
	return cmocka_run_group_tests_name("rdma_mr", tests, NULL, NULL);
}
