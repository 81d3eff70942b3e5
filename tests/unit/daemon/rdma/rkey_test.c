/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/rkey_test.c: rights per lease (daemon/rdma/rkey.c)
 * on a real server over the software verbs device, checked with real
 * one-sided transfers from the client QP: RKEY binds one type 2 window per
 * extent of the session's pending version, exactly over the extent (a
 * WRITE lands in the pool, a READ brings it back, one byte past the extent
 * is a remote access error); asking again answers the same windows;
 * ABANDON invalidates them (the old rkey fails); read-only rights get
 * windows of their own that refuse a WRITE; RKEY without a QP or for a
 * version not held is refused (and counted). Every case runs twice: on
 * softverbs as the IB spec asks (windows), and on softverbs modelling
 * rdma_rxe's window check (SOFTVERBS_MW_BOUNDS=0), where marud's
 * self-test sees windows do not bound and hands out one MR per extent
 * instead, on the QP's own PD: the same outcomes must hold. There, too, a
 * slow extent registration (softverbs reg_mr_us_per_mib) runs without the
 * rdma lock, and a QP fenced meanwhile gets none of the MRs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "fixture.h"
#include "pool.h"
#include "log.h"
#include "softverbs.h"

static uint32_t want_flags;

static int setup(void **state)
{
	if (softverbs_active() != 1)
		return -1;
	softverbs_set_mw_bounds(1);
	want_flags = RDMA_F_WINDOWS;
	*state = rfx_new();
	return 0;
}

/* softverbs modelling rdma_rxe: marud must choose one MR per extent */
static int setup_rxe(void **state)
{
	if (softverbs_active() != 1)
		return -1;
	softverbs_set_mw_bounds(0);
	want_flags = RDMA_F_EXTENT_MR;
	*state = rfx_new();
	assert_int_equal(rfx_rdma(*state)->rights, RIGHTS_MR);
	return 0;
}

static int teardown(void **state)
{
	rfx_free(*state);
	softverbs_set_mw_bounds(1);
	return 0;
}

/* HELLO, QP, a pending version of 64 KiB: its ino; its extents and rkeys. */
static uint64_t ready(struct rfx *f, struct proto_extent *ext, struct proto_rkey *keys,
		      uint32_t *n)
{
	uint32_t next, nk, fl;
	uint64_t ino;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	ino = rfx_create(f, "v", 64 << 10, ext, &next);
	assert_true(next >= 1);
	assert_int_equal(rfx_rkey(f, ino, RKEY_F_WRITE, keys, &nk, &fl), 0);
	assert_int_equal(fl, want_flags);
	assert_int_equal(nk, next);
	*n = nk;
	return ino;
}

static void test_window_per_extent(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_extent ext[8];
	struct proto_rkey k[8];
	uint32_t n, i;
	uint8_t *pool = f->t.srv->pool->base;

	ready(f, ext, k, &n);
	for (i = 0; i < n; i++) {
		assert_int_equal(k[i].off, ext[i].off);
		assert_int_equal(k[i].len, ext[i].len);
		assert_int_equal(k[i].addr, ext[i].off);	/* iova = pool offset */
	}
	assert_int_equal(atomic_load(&r->st.windows), n);
	assert_int_equal(atomic_load(&r->st.binds), n);

	/* A WRITE through the window lands in the pool; a READ brings it back. */
	memset(f->buf, 0xc3, 4096);
	assert_int_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 4096, k[0].addr, k[0].rkey),
			 IBV_WC_SUCCESS);
	assert_int_equal(pool[k[0].off], 0xc3);
	assert_int_equal(pool[k[0].off + 4095], 0xc3);
	pool[k[0].off + 10] = 0x7e;
	assert_int_equal(rfx_rdma_op(f, IBV_WR_RDMA_READ, 8192, 4096, k[0].addr, k[0].rkey),
			 IBV_WC_SUCCESS);
	assert_int_equal(f->buf[8192 + 10], 0x7e);
	assert_int_equal(f->buf[8192 + 11], 0xc3);
}

/* The window covers the extent exactly: one byte past it is refused by the NIC. */
static void test_window_exact(void **state)
{
	struct rfx *f = *state;
	struct proto_extent ext[8];
	struct proto_rkey k[8];
	uint32_t n;

	ready(f, ext, k, &n);
	assert_int_not_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 2,
					 k[0].addr + k[0].len - 1, k[0].rkey), IBV_WC_SUCCESS);
}

static void test_same_windows_again(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_extent ext[8];
	struct proto_rkey k[8], k2[8];
	uint32_t n, n2, fl;
	uint64_t ino = ready(f, ext, k, &n);

	assert_int_equal(rfx_rkey(f, ino, RKEY_F_WRITE, k2, &n2, &fl), 0);
	assert_int_equal(n2, n);
	assert_memory_equal(k2, k, n * sizeof(k[0]));
	assert_int_equal(atomic_load(&r->st.binds), n);
}

/* ABANDON ends the right: the windows are gone before it returns. */
static void test_revoked_on_abandon(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_extent ext[8];
	struct proto_rkey k[8];
	uint32_t n;
	uint64_t ino = ready(f, ext, k, &n);

	assert_int_equal(rfx_ino_op(f, OP_ABANDON, ino), 0);
	assert_int_equal(atomic_load(&r->st.windows), 0);
	assert_int_equal(atomic_load(&r->st.revokes), n);
	assert_int_not_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 64, k[0].addr, k[0].rkey),
			     IBV_WC_SUCCESS);
}

static void test_refused(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_extent ext[8];
	struct proto_rkey k[8];
	uint32_t next, nk, fl;
	uint64_t ino;

	rfx_hello(f);
	ino = rfx_create(f, "v", 8192, ext, &next);
	/* No QP yet. */
	assert_int_equal(rfx_rkey(f, ino, RKEY_F_WRITE, k, &nk, &fl), -ENOTCONN);
	assert_int_equal(rfx_connect(f), 0);
	/* A version nobody holds. */
	assert_int_equal(rfx_rkey(f, ino + 1000, RKEY_F_WRITE, k, &nk, &fl), -EPERM);
	assert_int_equal(atomic_load(&r->st.refused_rkey), 1);
	assert_int_equal(atomic_load(&r->st.windows), 0);
}

/* Read-only rights: the window lets a READ through and refuses a WRITE. */
static void test_read_only(void **state)
{
	struct rfx *f = *state;
	struct proto_extent ext[8];
	struct proto_rkey k[8], kw[8];
	uint32_t n, nk, fl;
	uint64_t ino = ready(f, ext, kw, &n);
	uint8_t *pool = f->t.srv->pool->base;

	assert_int_equal(rfx_rkey(f, ino, 0, k, &nk, &fl), 0);
	assert_int_equal(nk, n);
	assert_int_not_equal(k[0].rkey, kw[0].rkey);	/* a window of its own */
	pool[k[0].off] = 0x42;
	assert_int_equal(rfx_rdma_op(f, IBV_WR_RDMA_READ, 0, 16, k[0].addr, k[0].rkey),
			 IBV_WC_SUCCESS);
	assert_int_equal(f->buf[0], 0x42);
	assert_int_not_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 16, k[0].addr, k[0].rkey),
			     IBV_WC_SUCCESS);
	assert_int_equal(pool[k[0].off], 0x42);
}

struct slow_rkey {
	struct rfx *f;
	uint64_t ino;
	struct proto_rkey k[8];
	uint32_t n, fl;
	int rc;
};

static void *slow_rkey_main(void *arg)
{
	struct slow_rkey *x = arg;

	x->rc = rfx_rkey(x->f, x->ino, RKEY_F_WRITE, x->k, &x->n, &x->fl);
	return NULL;
}

/* A pending version of 1 MiB whose extent MRs take 400 ms to register (softverbs). */
static void slow_start(struct rfx *f, struct slow_rkey *x, pthread_t *t)
{
	struct proto_extent ext[8];
	uint32_t next;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	x->f = f;
	x->ino = rfx_create(f, "slow", 1 << 20, ext, &next);
	assert_int_equal(softverbs_fault_set("reg_mr_us_per_mib=400000"), 0);
	assert_int_equal(pthread_create(t, NULL, slow_rkey_main, x), 0);
	usleep(150 * 1000);
}

/* Extent MRs are registered without the rdma lock: RELEASE and PUBLISH do not wait. */
static void test_extent_mr_off_lock(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct slow_rkey x = { 0 };
	uint64_t t0;
	pthread_t t;

	slow_start(f, &x, &t);
	t0 = mono_ms();
	pthread_mutex_lock(&r->lock);	/* mid-registration: free */
	pthread_mutex_unlock(&r->lock);
	assert_true(mono_ms() - t0 < 100);
	pthread_join(t, NULL);
	softverbs_fault_set("");
	assert_int_equal(x.rc, 0);
	assert_int_equal(x.fl, RDMA_F_EXTENT_MR);
	assert_true(x.n >= 1);
	assert_int_equal(atomic_load(&r->st.windows), x.n);
	memset(f->buf, 0x5d, 4096);
	assert_int_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 4096, x.k[0].addr, x.k[0].rkey),
			 IBV_WC_SUCCESS);
	assert_int_equal(((uint8_t *)f->t.srv->pool->base)[x.k[0].off + 4095], 0x5d);
}

/*
 * The QP is fenced while an RKEY registers its extent MRs: nothing is
 * granted, the MRs are deregistered, and the QP's destroy waited for them.
 */
static void test_extent_mr_fenced_meanwhile(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct slow_rkey x = { 0 };
	struct rsess *rs;
	pthread_t t;

	slow_start(f, &x, &t);
	pthread_mutex_lock(&r->lock);
	rs = rdma_rsess_by_token(r, f->token);
	assert_non_null(rs);
	assert_non_null(rs->rc);
	assert_int_equal(rs->rc->busy, 1);
	rdma_rconn_fence(r, rs->rc, "test: fenced mid-registration");
	pthread_mutex_unlock(&r->lock);
	pthread_join(t, NULL);
	softverbs_fault_set("");
	assert_int_equal(x.rc, -ENOTCONN);
	assert_int_equal(atomic_load(&r->st.windows), 0);
	assert_true(atomic_load(&r->st.mr_regs) >= 1);	/* registered, never granted */
	assert_true(rfx_wait_eq(&r->st.conns, 0));
}

/* Extent MRs live on the QP's own PD, so no other client's QP can use them. */
static void test_extent_mr_own_pd(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_extent ext[8];
	struct proto_rkey k[8];
	struct rsess *rs;
	uint32_t n;

	ready(f, ext, k, &n);
	pthread_mutex_lock(&r->lock);
	rs = rdma_rsess_by_token(r, f->token);
	assert_non_null(rs);
	assert_non_null(rs->rc);
	assert_ptr_not_equal(rs->rc->pd, rs->rc->dev->pd);
	assert_null(rs->rc->dev->mr);	/* no MR over the pool */
	assert_non_null(rs->wins);
	assert_non_null(rs->wins->mr);
	assert_null(rs->wins->mw);
	assert_ptr_equal(rs->wins->mr->pd, rs->rc->pd);
	assert_int_equal(rs->wins->mr->length, rs->wins->len);
	pthread_mutex_unlock(&r->lock);
	assert_true(atomic_load(&r->st.mr_regs) >= n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_window_per_extent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_windows_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_revoked_on_abandon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_per_extent, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_window_exact, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_same_windows_again, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_revoked_on_abandon, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_read_only, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_extent_mr_own_pd, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_extent_mr_off_lock, setup_rxe, teardown),
		cmocka_unit_test_setup_teardown(test_extent_mr_fenced_meanwhile, setup_rxe, teardown),
	};

	log_init("rkey_test", 1, 0);
	return cmocka_run_group_tests_name("rkey", tests, NULL, NULL);
}
