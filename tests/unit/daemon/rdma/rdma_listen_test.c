/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/rdma_listen_test.c: the rdma:// listener and its
 * event thread (daemon/rdma/rdma_listen.c) on a real server over the
 * software verbs device: HELLO_F_RDMA offers the listener, a connect is
 * refused without a session's private data, with an unknown token or with
 * another generation, and accepted for a session that asked in HELLO; a
 * second QP of the session fences the first; a disconnect fences and
 * unlists the QP; closing the server with a QP attached does not hang. A
 * device found to enforce no rights (set by hand: softverbs always
 * enforces an MR's) gets no rdma path in HELLO and its connects refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"
#include "log.h"
#include "softverbs.h"

static int setup(void **state)
{
	if (softverbs_active() != 1)
		return -1;
	*state = rfx_new();
	return 0;
}

static int teardown(void **state)
{
	rfx_free(*state);
	return 0;
}

static void test_hello_offers(void **state)
{
	struct rfx *f = *state;

	rfx_hello(f);
	assert_int_equal(f->hello.rdma_port, f->port);
	assert_int_equal(f->hello.rdma_flags, RDMA_F_WINDOWS);
	assert_string_equal(f->hello.rdma_host, "127.0.0.1");
}

static void test_refused(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_rdma_cm pd = { .magic = RDMA_CM_MAGIC, .generation = TH_GENERATION };

	rfx_hello(f);
	/* No private data of ours. */
	assert_int_equal(rfx_connect_pd(f, "x", 1), -ECONNREFUSED);
	/* A token no HELLO gave. */
	memset(pd.token, 0x5a, sizeof(pd.token));
	assert_int_equal(rfx_connect_pd(f, &pd, sizeof(pd)), -ECONNREFUSED);
	/* The session's token, another generation. */
	memcpy(pd.token, f->token, sizeof(pd.token));
	pd.generation = TH_GENERATION + 1;
	assert_int_equal(rfx_connect_pd(f, &pd, sizeof(pd)), -ECONNREFUSED);
	/* A wrong magic. */
	pd.generation = TH_GENERATION;
	pd.magic = 0;
	assert_int_equal(rfx_connect_pd(f, &pd, sizeof(pd)), -ECONNREFUSED);
	assert_int_equal(atomic_load(&r->st.rejected), 4);
	assert_int_equal(atomic_load(&r->st.accepted), 0);
	assert_int_equal(atomic_load(&r->st.conns), 0);
	assert_null(r->conns);
}

static void test_rights_refused(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int i;

	/* the event thread registers the pool of the bound listener at start */
	for (i = 0; i < 2500 && !r->ndev; i++)
		nanosleep(&ts, NULL);
	assert_int_equal(r->ndev, 1);
	pthread_mutex_lock(&r->lock);
	r->rights = RIGHTS_REFUSED;
	r->tested[0].rights = RIGHTS_REFUSED;
	r->dev[0].rights = RIGHTS_REFUSED;
	pthread_mutex_unlock(&r->lock);
	rfx_hello(f);
	assert_int_equal(f->hello.rdma_port, 0);
	assert_int_equal(f->hello.rdma_flags, 0);
	assert_int_equal(rfx_connect(f), -ECONNREFUSED);
	assert_int_equal(atomic_load(&r->st.rejected), 1);
	assert_int_equal(atomic_load(&r->st.conns), 0);
}

static void test_accepted(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct rsess *rs;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	/* The event thread lists the QP just after accepting it. */
	assert_true(rfx_wait_u64(&r->st.accepted, 1));
	assert_true(rfx_wait_eq(&r->st.conns, 1));
	pthread_mutex_lock(&r->lock);
	rs = rdma_rsess_by_token(r, f->token);
	assert_non_null(rs);
	assert_non_null(rs->rc);
	assert_ptr_equal(r->conns, rs->rc);
	assert_ptr_equal(rs->rc->rs, rs);
	assert_int_equal(rs->rc->fenced, 0);
	pthread_mutex_unlock(&r->lock);
}

/* A session connecting a second QP: the first is fenced, the second is its QP. */
static void test_second_qp_fences_first(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);
	struct proto_rdma_cm pd = { .magic = RDMA_CM_MAGIC, .generation = TH_GENERATION };
	struct rdma_cm_event *ev;
	struct svt_ep e2;

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	memcpy(pd.token, f->token, sizeof(pd.token));
	assert_int_equal(svt_ep_init(&e2, "127.0.0.1", f->port), 0);
	assert_int_equal(svt_ep_connect(&e2, &pd, sizeof(pd), &ev), 0);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	rdma_ack_cm_event(ev);
	assert_true(rfx_wait_u64(&r->st.accepted, 2));
	assert_int_equal(atomic_load(&r->st.fences), 1);
	assert_int_equal(atomic_load(&r->st.conns), 1);
	/* The first QP hears it is cut off. */
	assert_int_equal(svt_expect(f->ep.ch, RDMA_CM_EVENT_DISCONNECTED), 0);
	rdma_disconnect(e2.id);
	svt_ep_fini(&e2);
}

/* A client that disconnects: its QP is fenced and unlisted. */
static void test_disconnect(void **state)
{
	struct rfx *f = *state;
	struct rdma_srv *r = rfx_rdma(f);

	rfx_hello(f);
	assert_int_equal(rfx_connect(f), 0);
	assert_true(rfx_wait_eq(&r->st.conns, 1));
	assert_int_equal(rdma_disconnect(f->ep.id), 0);
	assert_true(rfx_wait_eq(&r->st.conns, 0));
	assert_true(rfx_wait_u64(&r->st.fences, 1));
	pthread_mutex_lock(&r->lock);
	assert_null(rdma_rsess_by_token(r, f->token)->rc);
	pthread_mutex_unlock(&r->lock);
	/* the region goes before its protection domain, or the PD leaks */
	ibv_dereg_mr(f->mr);
	f->mr = NULL;
	svt_ep_fini(&f->ep);
	f->ep_up = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_offers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rights_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_qp_fences_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disconnect, setup, teardown),
	};

	log_init("rdma_listen_test", 1, 0);
	return cmocka_run_group_tests_name("rdma_listen", tests, NULL, NULL);
}
