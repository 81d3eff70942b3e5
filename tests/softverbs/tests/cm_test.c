// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/cm_test.c: rdma_cm on libsoftverbs. Emulated: the
 * connection manager handshake (REQ/REP/RTU, REJ, DREQ/DREP) between two
 * processes' emulated NICs over a unix socket, address checks against the
 * host's real IPs, and the events each side sees: connect request with
 * private data, established, rejected (by the peer, or for a port nobody
 * listens on), disconnected (by rdma_disconnect or the peer's exit), and a
 * connection made entirely within one process; an id only bound (never
 * listening) destroyed cleanly. No real RDMA hardware.
 */
#include "svt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static void test_connect_accept_pdata(void **state)
{
	struct svt_peer peer;
	struct svt_ep e;
	struct svt_reply r;
	struct rdma_cm_event *ev;

	assert_int_equal(svt_peer_start(&peer), 0);
	assert_int_equal(svt_ep_init(&e, "127.0.0.1", peer.port), 0);
	assert_int_equal(e.id->qp->state, IBV_QPS_INIT);
	assert_int_equal(svt_peer_send(&peer, SVT_ACCEPT, 0, 0, 0), 0);
	assert_int_equal(svt_ep_connect(&e, "hello-srv", 10, &ev), 0);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(ev->param.conn.private_data_len, 10);
	assert_string_equal(ev->param.conn.private_data, "srv-hello");
	rdma_ack_cm_event(ev);
	assert_int_equal(svt_peer_recv(&peer, &r), 0);
	assert_int_equal(r.rc, 0);			/* peer saw ESTABLISHED */
	assert_string_equal((char *)r.pdata, "hello-srv");
	assert_int_equal(e.id->qp->state, IBV_QPS_RTS);
	assert_int_equal(ntohs(rdma_get_dst_port(e.id)), peer.port);
	assert_int_equal(((struct sockaddr_in *)rdma_get_peer_addr(e.id))->sin_addr.s_addr,
			 htonl(INADDR_LOOPBACK));
	svt_ep_fini(&e);
	assert_int_equal(svt_peer_stop(&peer), 0);
}

static void test_reject(void **state)
{
	struct svt_peer peer;
	struct svt_ep e;
	struct svt_reply r;
	struct rdma_cm_event *ev;

	assert_int_equal(svt_peer_start(&peer), 0);
	assert_int_equal(svt_ep_init(&e, "127.0.0.1", peer.port), 0);
	assert_int_equal(svt_peer_send(&peer, SVT_ACCEPT, 1, 0, 0), 0);
	assert_int_equal(svt_ep_connect(&e, "x", 2, &ev), 0);
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, 28);		/* consumer reject */
	assert_int_equal(ev->param.conn.private_data_len, 7);
	assert_string_equal(ev->param.conn.private_data, "srv-no");
	rdma_ack_cm_event(ev);
	assert_int_equal(svt_peer_recv(&peer, &r), 0);
	assert_int_equal(r.rc, 0);
	svt_ep_fini(&e);
	assert_int_equal(svt_peer_stop(&peer), 0);
}

static void test_no_listener(void **state)
{
	struct svt_ep e;
	struct rdma_cm_event *ev;

	assert_int_equal(svt_ep_init(&e, "127.0.0.1", 9), 0);
	assert_int_equal(svt_ep_connect(&e, NULL, 0, &ev), 0);
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, 8);		/* invalid service id */
	rdma_ack_cm_event(ev);
	svt_ep_fini(&e);
}

static void test_disconnect(void **state)
{
	struct svt_peer peer;
	struct svt_ep e;
	struct svt_reply r;

	assert_int_equal(svt_peer_start(&peer), 0);
	assert_int_equal(svt_connect(&e, peer.port, &peer), 0);
	assert_int_equal(rdma_disconnect(e.id), 0);
	assert_int_equal(e.id->qp->state, IBV_QPS_ERR);
	assert_int_equal(svt_expect(e.ch, RDMA_CM_EVENT_DISCONNECTED), 0);
	assert_int_equal(svt_peer_cmd(&peer, SVT_EVENT, RDMA_CM_EVENT_DISCONNECTED, 0, 0,
				      &r), 0);
	assert_int_equal(r.rc, 0);
	svt_ep_fini(&e);
	assert_int_equal(svt_peer_stop(&peer), 0);
}

/* The peer process exits with a SEND outstanding: link down, retry error. */
static void test_peer_exit(void **state)
{
	struct svt_peer peer;
	struct svt_ep e;
	uint8_t b[16] = { 0 };
	struct ibv_mr *mr;
	struct ibv_wc wc;

	assert_int_equal(svt_peer_start(&peer), 0);
	assert_int_equal(svt_connect(&e, peer.port, &peer), 0);
	mr = ibv_reg_mr(e.pd, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(svt_post_rdma(e.id->qp, IBV_WR_SEND, 1, mr, 0, 16, 0, 0,
				       IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_peer_stop(&peer), 0);
	assert_int_equal(svt_expect(e.ch, RDMA_CM_EVENT_DISCONNECTED), 0);
	assert_int_equal(svt_wait_wc(e.cq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(e.id->qp->state, IBV_QPS_ERR);
	ibv_dereg_mr(mr);
	svt_ep_fini(&e);
}

static void test_bind_foreign_ip(void **state)
{
	struct rdma_cm_id *id;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_event_channel *ch = rdma_create_event_channel();

	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);	/* TEST-NET-1 */
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_int_equal(rdma_listen(id, 1), -1);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* An id bound to a local address but never listening is destroyed cleanly. */
static void test_destroy_bound_id(void **state)
{
	struct rdma_cm_id *id;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_event_channel *ch = rdma_create_event_channel();

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	assert_non_null(id->verbs);	/* the device behind the address */
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* Both ends in this process; then SEND/RECV with immediate data. */
static void test_in_process_loop(void **state)
{
	struct svt_loop l;
	char src[32] = "loopback", dst[32] = { 0 };
	struct ibv_mr *ms, *md;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_wc wc;

	assert_int_equal(svt_loop_open(&l), 0);
	md = ibv_reg_mr(l.sid->qp->pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	ms = ibv_reg_mr(l.cli.pd, src, sizeof(src), 0);
	assert_non_null(md);
	assert_non_null(ms);
	sge = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = sizeof(dst),
				.lkey = md->lkey };
	/* the SEND arrives first and waits for the receive (RNR retry) */
	assert_int_equal(svt_post_rdma(l.cli.id->qp, IBV_WR_SEND, 6, ms, 0, 9, 0, 0,
				       IBV_SEND_SIGNALED), 0);
	usleep(20000);
	assert_int_equal(ibv_poll_cq(l.cli.cq, 1, &wc), 0);
	assert_int_equal(ibv_post_recv(l.sid->qp, &rwr, &rbad), 0);
	assert_int_equal(svt_wait_wc(l.scq, 5000, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 9);
	assert_string_equal(dst, "loopback");
	assert_int_equal(svt_wait_wc(l.cli.cq, 5000, &wc), 0);
	assert_int_equal(wc.wr_id, 6);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	ibv_dereg_mr(md);
	ibv_dereg_mr(ms);
	svt_loop_close(&l);
}

/* A NULL channel makes a synchronous id: resolve returns when done. */
static void test_sync_id(void **state)
{
	struct rdma_cm_id *id;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(9) };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 100), 0);
	assert_int_equal(rdma_resolve_route(id, 100), 0);
	assert_non_null(id->verbs);
	assert_int_equal(rdma_resolve_route(id, 100), -1);	/* wrong state */
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_accept_pdata),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_no_listener),
		cmocka_unit_test(test_disconnect),
		cmocka_unit_test(test_peer_exit),
		cmocka_unit_test(test_bind_foreign_ip),
		cmocka_unit_test(test_destroy_bound_id),
		cmocka_unit_test(test_in_process_loop),
		cmocka_unit_test(test_sync_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
