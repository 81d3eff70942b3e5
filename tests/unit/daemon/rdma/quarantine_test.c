/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/quarantine_test.c: fencing a client's QP and
 * revoking windows (daemon/rdma/quarantine.c) on a real server over the
 * software verbs device: a session's end fences its QP (the client is cut
 * off, its read-write bytes are counted as quarantined until the drain,
 * every window is gone); a fence happens once; revoking one version's
 * windows leaves the others working; waiting for a completion that never
 * comes is bounded; in trust-pool mode (one MR over the pool) ending a
 * written pending version fences the QP, since its rkey cannot be revoked;
 * and a QP whose destroy is slow (softverbs destroy_qp_ms, as rdma_rxe's
 * destroy waiting for the QP's references) is destroyed after its windows
 * are gone and without the rdma lock: requests are not held meanwhile.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "fixture.h"
#include "log.h"
#include "softverbs.h"

static int setup(void **state)
{
	if (softverbs_active() != 1)
		return -1;
	softverbs_set_mw_support(1);
	*state = rfx_new();
	return 0;
}

static int setup_whole_pool(void **state)
{
	if (softverbs_active() != 1)
		return -1;
	softverbs_set_mw_support(1);
	*state = rfx_new_rights(RDMA_CFG_TRUST_POOL);
	return 0;
}

static int teardown(void **state)
{
	rfx_free(*state);
	softverbs_set_mw_support(1);
	return 0;
}

/* HELLO, QP, a pending version of size bytes with read-write rights: its ino. */
static uint64_t version_rw(struct rfx *f, const char *name, uint64_t size,
			   struct proto_rkey *k, uint32_t *n, uint64_t *bytes)
{
	struct proto_extent ext[8];
	uint32_t next, fl, i;
	uint64_t ino = rfx_create(f, name, size, ext, &next);

	assert_int_equal(rfx_rkey(f, ino, RKEY_F_WRITE, k, n, &fl), 0);
	*bytes = 0;
	for (i = 0; i < *n; i++)
		*bytes += k[i].len;
	return ino;
}

static struct rsess *rsess_locked(struct rfx *f)
{
	struct rdma_srv *r = rfx_rdma(f);
	struct rsess *rs;

	pthread_mutex_lock(&r->lock);
	rs = rdma_rsess_by_token(r, f->token);
	assert_non_null(rs);
	return rs;
}

static void test_session_end_fences(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_rkey k[8];
	uint32_t n;
	uint64_t bytes;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	version_rw(f, "v", 64 << 10, k, &n, &bytes);
	assert_true(bytes >= 64 << 10);
	assert_true(rfx_wait_eq(&r->st.conns, 1));
	rdma_session_end(r, f->tc.c->sess);
	assert_int_equal(atomic_load(&r->st.fences), 1);
	assert_int_equal(atomic_load(&r->st.conns), 0);
	assert_int_equal(atomic_load(&r->st.windows), 0);
	assert_int_equal(atomic_load(&r->st.quarantined), 0);
	assert_int_equal(atomic_load(&r->st.quarantined_total), bytes);
	pthread_mutex_lock(&r->lock);
	assert_null(rdma_rsess_by_token(r, f->token));
	pthread_mutex_unlock(&r->lock);
	/* The client is cut off. */
	assert_int_equal(svt_expect(f->ep.ch, RDMA_CM_EVENT_DISCONNECTED), 0);
}

static void test_fence_once(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct rsess *rs;
	struct rconn *rc;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	assert_true(rfx_wait_eq(&r->st.conns, 1));
	rs = rsess_locked(f);
	rc = rs->rc;
	assert_non_null(rc);
	rdma_rconn_fence(r, rc, "test");
	assert_int_equal(rc->fenced, 1);
	assert_null(rs->rc);
	assert_null(rc->rs);
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		/* in ERR at once; destroyed later, off the lock, by the event thread */
		assert_int_equal(ibv_query_qp(rc->id->qp, &a, IBV_QP_STATE, &ia), 0);
		assert_int_equal(a.qp_state, IBV_QPS_ERR);
	}
	rdma_rconn_fence(r, rc, "test again");
	pthread_mutex_unlock(&r->lock);
	assert_int_equal(atomic_load(&r->st.fences), 1);
	assert_int_equal(atomic_load(&r->st.conns), 0);
}

/* Revoking one version's windows leaves the session's others usable. */
static void test_revoke_one_version(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_rkey ka[8], kb[8];
	uint32_t na, nb;
	uint64_t ba, bb, ino_a;
	struct rsess *rs;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	ino_a = version_rw(f, "a", 8192, ka, &na, &ba);
	version_rw(f, "b", 8192, kb, &nb, &bb);
	assert_int_equal(atomic_load(&r->st.windows), na + nb);
	rs = rsess_locked(f);
	rdma_rwin_revoke(r, rs, ino_a, 0);
	pthread_mutex_unlock(&r->lock);
	assert_int_equal(atomic_load(&r->st.windows), nb);
	assert_int_equal(atomic_load(&r->st.revokes), na);
	assert_int_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 64, kb[0].addr, kb[0].rkey),
			 IBV_WC_SUCCESS);
	assert_int_not_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 64, ka[0].addr, ka[0].rkey),
			     IBV_WC_SUCCESS);
}

/* A completion that never comes: the wait gives up after RDMA_BIND_MS. */
static void test_wait_bounded(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct rsess *rs;
	uint64_t t0;
	int rc;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	assert_true(rfx_wait_eq(&r->st.conns, 1));
	rs = rsess_locked(f);
	t0 = mono_ms();
	rc = rdma_rconn_wait(r, rs->rc, 0xdeadULL);
	pthread_mutex_unlock(&r->lock);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(mono_ms() - t0 >= RDMA_BIND_MS);
	assert_true(mono_ms() - t0 < RDMA_BIND_MS + 3000);
}

/*
 * No memory windows: every rkey is the pool MR's and cannot be revoked, so
 * ending a pending version the session may have written fences its QP,
 * holding its read-write bytes until the drain.
 */
static void test_whole_pool_end_fences(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_rkey k[8];
	uint32_t n, i;
	uint64_t bytes, ino;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	assert_int_equal(r->rights, RIGHTS_POOL);
	ino = version_rw(f, "w", 8192, k, &n, &bytes);
	for (i = 1; i < n; i++)
		assert_int_equal(k[i].rkey, k[0].rkey);
	assert_int_equal(atomic_load(&r->st.windows), 0);	/* none bound */
	assert_int_equal(rfx_rdma_op(f, IBV_WR_RDMA_WRITE, 0, 64, k[0].addr, k[0].rkey),
			 IBV_WC_SUCCESS);
	assert_int_equal(rfx_ino_op(f, OP_ABANDON, ino), 0);
	assert_int_equal(atomic_load(&r->st.fences), 1);
	assert_int_equal(atomic_load(&r->st.quarantined_total), bytes);
	assert_int_equal(atomic_load(&r->st.quarantined), 0);
	assert_int_equal(svt_expect(f->ep.ch, RDMA_CM_EVENT_DISCONNECTED), 0);
}

/*
 * The client goes away holding a lease's window while every QP destroy
 * takes 1.5 s: its window is revoked at once, and the rdma lock (which
 * RELEASE and PUBLISH take) stays free while the event thread destroys
 * the QP.
 */
static void test_slow_destroy_no_lock(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_rkey k[8];
	uint64_t bytes, t0, worst = 0, t;
	uint32_t n;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	version_rw(f, "slow", 8192, k, &n, &bytes);
	assert_true(atomic_load(&r->st.windows) > 0);
	assert_int_equal(softverbs_fault_set("destroy_qp_ms=1500"), 0);
	t0 = mono_ms();
	assert_int_equal(rdma_disconnect(f->ep.id), 0);
	/* rights gone before the destroy, quickly */
	assert_true(rfx_wait_eq(&r->st.windows, 0));
	assert_true(rfx_wait_eq(&r->st.conns, 0));
	assert_true(mono_ms() - t0 < 1000);
	/* while the event thread sits in the destroy, the lock is free */
	while (mono_ms() - t0 < 1800) {
		t = mono_ms();
		pthread_mutex_lock(&r->lock);
		pthread_mutex_unlock(&r->lock);
		if (mono_ms() - t > worst)
			worst = mono_ms() - t;
		usleep(20 * 1000);
	}
	assert_true(worst < 200);
	softverbs_fault_set("");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_session_end_fences, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fence_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_revoke_one_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whole_pool_end_fences, setup_whole_pool,
						teardown),
		cmocka_unit_test_setup_teardown(test_slow_destroy_no_lock, setup, teardown),
	};

	log_init("quarantine_test", 1, 0);
	return cmocka_run_group_tests_name("quarantine", tests, NULL, NULL);
}
