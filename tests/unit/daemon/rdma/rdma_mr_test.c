/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/rdma_mr_test.c: what each device enforces and the
 * pool registered with it (daemon/rdma/rdma_mr.c, selftest.c), on the
 * software verbs device linked ahead of libibverbs (emulated: the NIC is
 * a thread of this process; the self-test's loopback QPs connect through
 * it on 127.0.0.1), with a struct rdma_srv made by hand over a plain
 * buffer. Windows that enforce rights and bounds give windows mode with an
 * MR over the whole pool that only windows reach; windows that check only
 * their MR's range (softverbs modelling rdma_rxe) give one MR per extent
 * and no pool MR; no windows at all: MRs too; rdma-rights = trust-pool
 * exposes the pool; the same device asked again gives the same entry; a
 * failed registration leaves nothing behind; a slow registration holds no
 * lock; a full table refuses; an extent MR covers just its extent; a
 * wildcard listener has the device behind a local address tested; closing
 * frees every PD and MR (the devices close cleanly).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <time.h>

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
	pthread_mutex_init(&f->r.lock, NULL);
	f->r.base = aligned_alloc(4096, POOL_BYTES);
	f->r.size = POOL_BYTES;
	f->list = ibv_get_device_list(&n);
	if (!f->r.base || !f->list || n < 1)
		return -1;
	softverbs_set_mw_support(1);
	softverbs_set_mw_bounds(1);
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
	pthread_mutex_destroy(&f->r.lock);
	free(f);
	softverbs_set_mw_support(1);
	softverbs_set_mw_bounds(1);
	softverbs_fault_set("");
	return 0;
}

static const struct sockaddr *lo(void)
{
	static struct sockaddr_in in = { .sin_family = AF_INET };

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return (const struct sockaddr *)&in;
}

static void test_windows_device(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	struct rdma_dev *d = rdma_dev_get(&f->r, ctx, lo()), *again;

	assert_non_null(d);
	assert_int_equal(f->r.ndev, 1);
	assert_int_equal(d->rights, RIGHTS_WINDOWS);
	assert_int_equal(f->r.rights, RIGHTS_WINDOWS);
	assert_int_equal(d->windows, 1);
	/* every probe of the self-test was refused */
	assert_int_equal(f->r.ntested, 1);
	assert_int_equal(f->r.tested[0].chk.win_rights, 1);
	assert_int_equal(f->r.tested[0].chk.win_bounds, 1);
	assert_int_equal(f->r.tested[0].chk.mr_rights, 1);
	assert_int_equal(f->r.tested[0].chk.mr_bounds, 1);
	assert_ptr_equal(d->ctx, ctx);
	assert_non_null(d->pd);
	assert_non_null(d->mr);
	assert_int_equal(d->mr->length, POOL_BYTES);
	assert_ptr_equal(d->mr->pd, d->pd);
	/* Once per device. */
	again = rdma_dev_get(&f->r, ctx, lo());
	assert_ptr_equal(again, d);
	assert_int_equal(f->r.ndev, 1);
	assert_int_equal(f->r.ntested, 1);
	rdma_devs_close(&f->r);
	assert_int_equal(f->r.ndev, 0);
	/* Nothing of marud's is left on the device. */
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* softverbs modelling rdma_rxe: a window's rkey is checked against its MR's range only */
static void test_rxe_window_bounds(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	struct rdma_dev *d;

	softverbs_set_mw_bounds(0);
	d = rdma_dev_get(&f->r, ctx, lo());
	assert_non_null(d);
	assert_int_equal(f->r.tested[0].chk.win_rights, 1);	/* rights hold */
	assert_int_equal(f->r.tested[0].chk.win_bounds, 0);	/* bounds do not */
	assert_int_equal(d->rights, RIGHTS_MR);
	assert_int_equal(f->r.rights, RIGHTS_MR);
	assert_int_equal(d->windows, 0);
	assert_null(d->mr);	/* no pool MR at all: nothing reaches the pool but extents */
	assert_int_equal(rdma_rights_flags(d->rights), RDMA_F_EXTENT_MR);
	rdma_devs_close(&f->r);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_no_windows(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx;
	struct rdma_dev *d;

	softverbs_set_mw_support(0);
	ctx = open_dev(f);
	d = rdma_dev_get(&f->r, ctx, lo());
	assert_non_null(d);
	assert_int_equal(f->r.tested[0].chk.win_rights, -1);	/* not tested */
	assert_int_equal(d->rights, RIGHTS_MR);
	assert_int_equal(d->windows, 0);
	assert_null(d->mr);
	rdma_devs_close(&f->r);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_trust_pool(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	struct rdma_dev *d;

	f->r.cfg_rights = RDMA_CFG_TRUST_POOL;
	d = rdma_dev_get(&f->r, ctx, lo());
	assert_non_null(d);
	assert_int_equal(d->rights, RIGHTS_POOL);
	assert_non_null(d->mr);
	assert_true(d->mr->rkey != 0);
	assert_int_equal(rdma_rights_flags(d->rights), RDMA_F_WHOLE_POOL);
	rdma_devs_close(&f->r);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* A device that was never tested (no address): only an MR per extent is trusted. */
static void test_untested(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	struct rdma_dev *d = rdma_dev_get(&f->r, ctx, NULL);

	assert_non_null(d);
	assert_int_equal(d->rights, RIGHTS_MR);
	assert_null(d->mr);
	rdma_devs_close(&f->r);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void preset(struct fx *f, enum rdma_rights m)
{
	snprintf(f->r.tested[0].name, sizeof(f->r.tested[0].name), "softverbs0");
	f->r.tested[0].rights = m;
	f->r.ntested = 1;
}

static void test_register_fails(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);

	preset(f, RIGHTS_WINDOWS);
	assert_int_equal(softverbs_fault_set("fail_reg=1"), 0);
	assert_null(rdma_dev_get(&f->r, ctx, NULL));
	assert_int_equal(f->r.ndev, 0);
	softverbs_fault_set("");
	/* The PD allocated for it was freed again. */
	assert_int_equal(ibv_close_device(ctx), 0);
}

struct slow {
	struct fx *f;
	struct ibv_context *ctx;
	struct rdma_dev *d;
};

static void *slow_get(void *arg)
{
	struct slow *s = arg;

	s->d = rdma_dev_get(&s->f->r, s->ctx, NULL);
	return NULL;
}

/* A pool registration that takes 400 ms (softverbs reg_mr_us_per_mib) holds no rdma lock. */
static void test_slow_register_no_lock(void **state)
{
	struct fx *f = *state;
	struct slow s = { .f = f, .ctx = open_dev(f) };
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	pthread_t t;

	preset(f, RIGHTS_WINDOWS);
	assert_int_equal(softverbs_fault_set("reg_mr_us_per_mib=100000"), 0);
	assert_int_equal(pthread_create(&t, NULL, slow_get, &s), 0);
	nanosleep(&ts, NULL);
	/* mid-registration: a request would get the lock at once */
	assert_int_equal(pthread_mutex_trylock(&f->r.lock), 0);
	pthread_mutex_unlock(&f->r.lock);
	assert_null(s.d);
	pthread_join(t, NULL);
	assert_non_null(s.d);
	assert_non_null(s.d->mr);
	assert_true(atomic_load(&f->r.st.pool_reg_us) >= 400 * 1000);
	softverbs_fault_set("");
	rdma_devs_close(&f->r);
	assert_int_equal(ibv_close_device(s.ctx), 0);
}

static void test_extent_mr(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;

	assert_non_null(pd);
	mr = rdma_extent_mr(&f->r, pd, 65536, 8192, 0);
	assert_non_null(mr);
	assert_int_equal(mr->length, 8192);
	assert_ptr_equal(mr->addr, f->r.base + 65536);
	assert_int_equal(atomic_load(&f->r.st.mr_regs), 1);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* beyond the pool: refused before the device sees it */
	assert_null(rdma_extent_mr(&f->r, pd, POOL_BYTES - 4096, 8192, 1));
	mr = rdma_extent_mr(&f->r, pd, POOL_BYTES - 4096, 4096, 1);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* A wildcard listener: the devices behind the host's addresses are tested at start. */
static void test_wildcard_listener(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct rdma_event_channel *ch = rdma_create_event_channel();

	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &f->r.lid[0], NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(f->r.lid[0], (struct sockaddr *)&any), 0);
	f->r.nlid = 1;
	rdma_devs_test(&f->r);
	assert_int_equal(f->r.ntested, 1);
	assert_string_equal(f->r.tested[0].name, "softverbs0");
	assert_int_equal(f->r.tested[0].rights, RIGHTS_WINDOWS);
	assert_int_equal(f->r.rights, RIGHTS_WINDOWS);
	rdma_destroy_id(f->r.lid[0]);
	f->r.nlid = 0;
	rdma_destroy_event_channel(ch);
}

static void test_table_full(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx = open_dev(f);
	unsigned int i;

	for (i = 0; i < RDMA_MAX_DEV; i++)
		f->r.dev[i].ctx = (struct ibv_context *)(uintptr_t)(0x1000 + i);
	f->r.ndev = RDMA_MAX_DEV;
	assert_null(rdma_dev_get(&f->r, ctx, NULL));
	f->r.ndev = 0;
	assert_int_equal(ibv_close_device(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_windows_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rxe_window_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_windows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trust_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untested, setup, teardown),
		cmocka_unit_test_setup_teardown(test_register_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_register_no_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extent_mr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wildcard_listener, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_full, setup, teardown),
	};

	log_init("rdma_mr_test", 1, 0);
	return cmocka_run_group_tests_name("rdma_mr", tests, NULL, NULL);
}
