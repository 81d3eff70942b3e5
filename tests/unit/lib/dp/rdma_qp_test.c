/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/rdma_qp_test.c: the rdma data path's connection
 * (lib/dp/rdma_qp.c) on the software verbs device, against the in-process
 * peer of rdma_peer.c: probe says why when marud offered no listener and
 * finds the device otherwise; open connects one QP whose private data
 * carries the session's token and generation, and a refused open leaves
 * nothing behind; the QP is kept while the session's epoch (asked through
 * the client's facts callback) stays, and connected again, with a new
 * number, in a new session; a failed QP is counted and dropped and the
 * next use connects again; close drops the path.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rdma_peer.h"

static void test_probe(void **state)
{
	struct session s = { 0 };
	const char *why = NULL;

	(void)state;
	assert_int_equal(dp_rdma_ops.probe(&s, &why), -ENODEV);
	assert_non_null(strstr(why, "no rdma listener"));
	s.rdma_port = 1;
	why = NULL;
	assert_int_equal(dp_rdma_ops.probe(&s, &why), 0);	/* softverbs0 */
}

static void test_open_and_reconnect(void **state)
{
	struct rdma_fx x;
	struct rdma_dp *d;

	(void)state;
	assert_int_equal(rdma_fx_setup(&x), 0);
	d = x.c.rdma;
	assert_non_null(d);
	assert_non_null(d->id);
	assert_int_equal(peer_connects(&x.p), 1);
	assert_int_equal(x.p.last.magic, RDMA_CM_MAGIC);
	assert_int_equal(x.p.last.generation, 7);
	assert_int_equal(x.p.last.token[0], 0x3c);
	assert_int_equal(atomic_load(&x.c.st.rdma.qp_connects), 1);
	assert_int_equal(d->qp_gen, 1);
	/* same session: the same QP */
	pthread_mutex_lock(&d->lock);
	assert_int_equal(dp_rdma_qp_ready(&x.c, d), 0);
	pthread_mutex_unlock(&d->lock);
	assert_int_equal(peer_connects(&x.p), 1);
	/* a new session (epoch): a new QP, numbered anew, with the new facts */
	x.facts.epoch = 1;
	x.facts.generation = 8;
	pthread_mutex_lock(&d->lock);
	assert_int_equal(dp_rdma_qp_ready(&x.c, d), 0);
	pthread_mutex_unlock(&d->lock);
	assert_int_equal(peer_connects(&x.p), 2);
	assert_int_equal(x.p.last.generation, 8);
	assert_int_equal(d->qp_gen, 2);
	/* a failed QP: counted, dropped; the next use connects again */
	pthread_mutex_lock(&d->lock);
	dp_rdma_qp_fail(&x.c, d);
	assert_null(d->id);
	assert_int_equal(atomic_load(&x.c.st.rdma.qp_errors), 1);
	assert_int_equal(dp_rdma_qp_ready(&x.c, d), 0);
	pthread_mutex_unlock(&d->lock);
	assert_int_equal(peer_connects(&x.p), 3);
	assert_int_equal(d->qp_gen, 3);
	rdma_fx_teardown(&x);
	assert_null(x.c.rdma);
}

/* Nobody listens at the port: open fails with a reason, nothing kept. */
static void test_open_refused(void **state)
{
	struct rdma_fx x;
	struct session s = { .rdma_port = 0 };
	const char *why = NULL;
	uint16_t port;

	(void)state;
	assert_int_equal(rdma_fx_setup(&x), 0);
	port = x.p.port;
	rdma_fx_teardown(&x);		/* the listener is gone */
	memset(&x.c, 0, sizeof(x.c));
	x.c.opts.timeout_ms = 500;
	s.rdma_port = port;
	snprintf(s.rdma_host, sizeof(s.rdma_host), "127.0.0.1");
	assert_true(dp_rdma_ops.open(&x.c, &s, &why) < 0);
	assert_non_null(why);
	assert_null(x.c.rdma);
	dp_rdma_ops.close(&x.c);	/* nothing to close: harmless */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_open_and_reconnect),
		cmocka_unit_test(test_open_refused),
	};

	return cmocka_run_group_tests_name("dp/rdma_qp", tests, NULL, NULL);
}
