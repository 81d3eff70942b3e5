/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/conn_test.c: marud's connections (daemon/conn.c)
 * through their own calls on a real server (server_harness.c) that is not
 * started, so the test decides what runs: a connection on a thread of its
 * own (no event loop) answering pipelined requests in order and leaving
 * the list when its peer goes; the same on the event loop, counted by the
 * loop; a frame with a bad header closing the connection; a connection the
 * loop cannot take handed back to the caller unlisted; and
 * conns_close_all() ending idle connections on both kinds and stopping the
 * loops.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn.h"
#include "log.h"
#include "server_harness.h"
#include "server_priv.h"

struct fx {
	struct th t;
	struct treply r;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	th_config(&f->t);
	if (th_new(&f->t, NULL))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc = th_free(&f->t);

	free(f);
	return rc;
}

/* A started connection on a socketpair: the client's end (blocking). */
static int conn_pair(struct server *srv)
{
	struct conn *c;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(conn_new(srv, sv[1], 1, &c), 0);
	snprintf(c->peer, sizeof(c->peer), "conn_test fd %d", sv[1]);
	assert_int_equal(conn_start(c), 0);
	return sv[0];
}

/* Wait up to 5 s for the server's connection count to be n. */
static int wait_conns(struct server *srv, unsigned int n)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	int i;

	for (i = 0; i < 1000; i++) {
		if (atomic_load(&srv->nconns) == n)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* n PINGs in one write; their replies in order. */
static void pings(struct fx *f, int fd, int n)
{
	uint8_t buf[64 * sizeof(struct proto_hdr)];
	struct proto_hdr h;
	int i;

	assert_true(n <= 64);
	for (i = 0; i < n; i++) {
		proto_hdr_init(&h, OP_PING, 0, 100 + (uint64_t)i, TH_GENERATION, 0);
		memcpy(buf + i * sizeof(h), &h, sizeof(h));
	}
	assert_int_equal(write(fd, buf, n * sizeof(h)), (ssize_t)(n * sizeof(h)));
	for (i = 0; i < n; i++) {
		assert_int_equal(tc_reply(fd, &f->r, 5000), 0);
		assert_int_equal(f->r.h.op, OP_PING);
		assert_int_equal(f->r.h.reqid, 100 + (uint64_t)i);
		assert_int_equal(f->r.h.status, 0);
	}
}

static uint64_t loop_pings(struct server *srv)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < srv->nloops; i++)
		n += atomic_load(&srv->loops[i].ops[OP_PING]);
	return n;
}

/* No loop running: conn_start() gives the connection a thread of its own. */
static void test_own_thread(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;
	int fd;

	assert_int_equal(srv->nloops, 0);
	fd = conn_pair(srv);
	assert_int_equal(atomic_load(&srv->nconns), 1);
	pings(f, fd, 5);
	close(fd);
	assert_true(wait_conns(srv, 0));
	assert_null(srv->conns);
}

/* With the loops running the connection is served there, and counted by its loop. */
static void test_on_loop(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;
	int fd;

	assert_int_equal(conn_loops_start(srv), 0);
	assert_true(srv->nloops >= 1);
	fd = conn_pair(srv);
	assert_int_equal(atomic_load(&srv->nconns), 1);
	pings(f, fd, 20);
	assert_int_equal(loop_pings(srv), 20);
	close(fd);
	assert_true(wait_conns(srv, 0));
	conn_loops_stop(srv);
	assert_int_equal(srv->nloops, 0);
	conn_loops_stop(srv);	/* idempotent */
}

/* A frame that is not marud's protocol ends the connection: the peer sees EOF. */
static void test_bad_frame_closes(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;
	struct proto_hdr h;
	int fd = conn_pair(srv);

	proto_hdr_init(&h, OP_PING, 0, 1, TH_GENERATION, 0);
	h.magic ^= 0xffff;
	assert_int_equal(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	assert_true(wait_conns(srv, 0));
	assert_int_equal(tc_reply(fd, &f->r, 2000), -ECONNRESET);
	close(fd);
}

/*
 * A descriptor the loop's epoll set refuses (a regular file): conn_start()
 * fails, the connection is no longer listed and the caller still owns it.
 */
static void test_loop_refuses(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;
	struct conn *c;
	char path[] = "/tmp/marud-conn-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(conn_loops_start(srv), 0);
	assert_int_equal(conn_new(srv, fd, 1, &c), 0);
	assert_int_equal(conn_start(c), -EPERM);
	assert_int_equal(atomic_load(&srv->nconns), 0);
	assert_null(srv->conns);
	conn_free(c);
	close(fd);
	conn_loops_stop(srv);
}

/* conns_close_all() ends idle connections, threaded and looped, and stops the loops. */
static void test_close_all(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;
	int a, b;

	a = conn_pair(srv);		/* before the loops: its own thread */
	assert_int_equal(conn_loops_start(srv), 0);
	b = conn_pair(srv);		/* on a loop */
	pings(f, a, 1);
	pings(f, b, 1);
	assert_int_equal(atomic_load(&srv->nconns), 2);
	conns_close_all(srv);
	assert_int_equal(atomic_load(&srv->nconns), 0);
	assert_int_equal(srv->nloops, 0);
	assert_int_equal(tc_reply(a, &f->r, 2000), -ECONNRESET);
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_own_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_on_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_frame_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_all, setup, teardown),
	};

	log_init("conn_test", 1, 0);
	return cmocka_run_group_tests_name("conn", tests, NULL, NULL);
}
