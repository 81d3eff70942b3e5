/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/wire_test.c: a connection's socket (daemon/wire.c) on
 * a socketpair, with a struct conn made by hand (wire.c reads nothing of
 * the server but its generation): frames read ahead and taken header by
 * header and payload by payload across the buffer and the socket, a clean
 * EOF told apart from a cut header, replies queued while batching and sent
 * in one flush (a failed status drops the payload), a non-blocking flush
 * that keeps what did not fit, the unread payload skipped from both
 * places, a full read-ahead buffer, a broken socket marking the request
 * undeliverable, and a protocol violation closing the connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "proto.h"
#include "server_priv.h"
#include "wire.h"

#define GEN	0x1234abcdULL

struct fx {
	struct server *srv;
	struct conn c;
	int peer;		/* the client's end */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int sv[2];

	if (!f || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	f->srv = calloc(1, sizeof(*f->srv));
	if (!f->srv)
		return -1;
	f->srv->generation = GEN;
	f->c.srv = f->srv;
	f->c.fd = sv[1];
	snprintf(f->c.peer, sizeof(f->c.peer), "wire_test");
	f->peer = sv[0];
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	wire_free(&f->c);
	if (f->peer >= 0)
		close(f->peer);
	close(f->c.fd);
	free(f->srv);
	free(f);
	return 0;
}

/* A request frame of op with payload n bytes of byte b, written by the peer. */
static size_t frame(uint8_t *buf, uint16_t op, uint64_t reqid, uint8_t b, uint32_t n)
{
	struct proto_hdr h;

	proto_hdr_init(&h, op, n, reqid, GEN, 0);
	memcpy(buf, &h, sizeof(h));
	memset(buf + sizeof(h), b, n);
	return sizeof(h) + n;
}

static void peer_write(struct fx *f, const void *p, size_t n)
{
	assert_int_equal(write(f->peer, p, n), (ssize_t)n);
}

/* Two frames in one write: read ahead once, taken header by header. */
static void test_read_ahead(void **state)
{
	struct fx *f = *state;
	uint8_t buf[256], pay[16];
	struct proto_hdr h;
	size_t n = 0, room;

	n += frame(buf + n, OP_PING, 1, 0xaa, 16);
	n += frame(buf + n, OP_PING, 2, 0xbb, 8);
	peer_write(f, buf, n);
	assert_int_equal(wire_fill(&f->c, &room), (ssize_t)n);
	assert_int_equal(room, wire_in_cap());
	assert_int_equal(wire_buffered(&f->c), n);

	assert_int_equal(wire_peek_hdr(&f->c, &h), 1);
	assert_int_equal(h.reqid, 1);
	assert_int_equal(wire_buffered(&f->c), n);	/* a peek takes nothing */
	assert_int_equal(wire_recv_hdr(&f->c, &h), 0);
	assert_int_equal(h.reqid, 1);
	assert_int_equal(h.len, 16);
	assert_int_equal(wire_peek(&f->c, 0, pay, 4), 1);
	assert_int_equal(pay[0], 0xaa);
	assert_int_equal(wire_recv(&f->c, pay, 16), 0);
	assert_int_equal(pay[15], 0xaa);
	assert_int_equal(wire_recv_hdr(&f->c, &h), 0);
	assert_int_equal(h.reqid, 2);
	assert_int_equal(wire_peek(&f->c, 0, pay, 9), 0);	/* only 8 are there */
	assert_int_equal(wire_recv(&f->c, pay, 8), 0);
	assert_int_equal(pay[7], 0xbb);
	assert_int_equal(wire_buffered(&f->c), 0);
	assert_int_equal(wire_peek_hdr(&f->c, &h), 0);

	/* Nothing more: a non-blocking fill says so. */
	assert_int_equal(wire_fill(&f->c, &room), -EAGAIN);
}

/* A header half in the buffer, half still in the socket, and a payload split the same way. */
static void test_split_across(void **state)
{
	struct fx *f = *state;
	uint8_t buf[256], pay[40];
	struct proto_hdr h;
	struct iovec iov[3];
	size_t n, room;

	n = frame(buf, OP_PING, 7, 0x11, 40);
	peer_write(f, buf, 10);
	assert_int_equal(wire_fill(&f->c, &room), 10);
	peer_write(f, buf + 10, n - 10);
	assert_int_equal(wire_recv_hdr(&f->c, &h), 0);
	assert_int_equal(h.reqid, 7);
	assert_int_equal(h.generation, GEN);

	/* Payload: a zero-length entry skipped, then from the socket. */
	iov[0] = (struct iovec){ pay, 0 };
	iov[1] = (struct iovec){ pay, 25 };
	iov[2] = (struct iovec){ pay + 25, 15 };
	assert_int_equal(wire_recvv(&f->c, iov, 3), 0);
	assert_int_equal(pay[0], 0x11);
	assert_int_equal(pay[39], 0x11);
}

/* EOF before any header byte is a clean end (1); after some it is an error. */
static void test_eof(void **state)
{
	struct fx *f = *state;
	uint8_t buf[64];
	struct proto_hdr h;

	assert_int_equal(shutdown(f->peer, SHUT_WR), 0);
	assert_int_equal(wire_recv_hdr(&f->c, &h), 1);

	close(f->peer);
	f->peer = -1;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(wire_recv(&f->c, buf, 4), -ECONNRESET);
	assert_int_equal(f->c.undeliverable, 1);
}

static void test_eof_mid_header(void **state)
{
	struct fx *f = *state;
	uint8_t buf[64];
	struct proto_hdr h;

	frame(buf, OP_PING, 1, 0, 0);
	peer_write(f, buf, 5);
	assert_int_equal(shutdown(f->peer, SHUT_WR), 0);
	assert_true(wire_recv_hdr(&f->c, &h) < 0);
	assert_int_equal(f->c.undeliverable, 1);
}

static void read_reply(struct fx *f, struct proto_hdr *h, uint8_t *p, size_t cap)
{
	assert_int_equal(read(f->peer, h, sizeof(*h)), (ssize_t)sizeof(*h));
	assert_int_equal(proto_hdr_check(h, 1U << 20), 0);
	assert_true(h->len <= cap);
	if (h->len)
		assert_int_equal(read(f->peer, p, h->len), (ssize_t)h->len);
}

/* Batched replies stay queued until a flush sends them all, in order. */
static void test_batch_flush(void **state)
{
	struct fx *f = *state;
	struct proto_hdr req, h;
	uint8_t p[32];
	int fl;

	proto_hdr_init(&req, OP_LOOKUP, 0, 41, GEN, 0);
	f->c.batch = 1;
	assert_int_equal(wire_reply(&f->c, &req, 0, "abcd", 4), 0);
	req.reqid = 42;
	assert_int_equal(wire_reply(&f->c, &req, -ENOENT, "dropped", 7), 0);
	assert_int_equal(f->c.outq.len, 2 * sizeof(h) + 4);
	fl = fcntl(f->peer, F_GETFL);
	fcntl(f->peer, F_SETFL, fl | O_NONBLOCK);
	assert_int_equal(read(f->peer, &h, sizeof(h)), -1);	/* nothing sent yet */
	fcntl(f->peer, F_SETFL, fl);

	assert_int_equal(wire_flush(&f->c, 1), 0);
	assert_int_equal(f->c.outq.len, 0);
	read_reply(f, &h, p, sizeof(p));
	assert_int_equal(h.op, OP_LOOKUP);
	assert_int_equal(h.reqid, 41);
	assert_int_equal(h.generation, GEN);
	assert_int_equal(h.status, 0);
	assert_int_equal(h.len, 4);
	assert_memory_equal(p, "abcd", 4);
	read_reply(f, &h, p, sizeof(p));
	assert_int_equal(h.reqid, 42);
	assert_int_equal(h.status, -ENOENT);
	assert_int_equal(h.len, 0);
	/* An empty queue flushes to nothing. */
	assert_int_equal(wire_flush(&f->c, 1), 0);
}

/* Unbatched, a reply goes out at once. */
static void test_reply_now(void **state)
{
	struct fx *f = *state;
	struct proto_hdr req, h;
	uint8_t p[8];

	proto_hdr_init(&req, OP_PING, 0, 9, 0, 0);
	assert_int_equal(wire_reply(&f->c, &req, 0, NULL, 0), 0);
	read_reply(f, &h, p, sizeof(p));
	assert_int_equal(h.reqid, 9);
	assert_int_equal(h.len, 0);
	assert_int_equal(f->c.outq.len, 0);
}

/* A peer that takes nothing: a non-blocking flush keeps the rest queued. */
static void test_flush_partial(void **state)
{
	struct fx *f = *state;
	size_t big = 1U << 20, total = sizeof(struct proto_hdr) + big, got = 0;
	uint8_t *p = malloc(big), *sink = malloc(total);
	struct proto_hdr req;
	int sz = 4096, rc;
	ssize_t n;

	assert_non_null(p);
	assert_non_null(sink);
	memset(p, 0x5c, big);
	setsockopt(f->c.fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	proto_hdr_init(&req, OP_READ, 0, 3, GEN, 0);
	f->c.batch = 1;
	assert_int_equal(wire_reply(&f->c, &req, 0, p, big), 0);
	assert_int_equal(wire_flush(&f->c, 1), -EAGAIN);
	assert_true(f->c.outq.len > 0 && f->c.outq.len < total);
	assert_int_equal(f->c.undeliverable, 0);
	/* Drain while flushing again: every byte arrives, in order. */
	do {
		rc = wire_flush(&f->c, 1);
		n = recv(f->peer, sink + got, total - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
	} while (got < total);
	assert_int_equal(rc, 0);
	assert_int_equal(f->c.outq.len, 0);
	assert_int_equal(sink[total - 1], 0x5c);
	assert_int_equal(((struct proto_hdr *)sink)->len, big);
	free(p);
	free(sink);
}

/* The unread part of a request is skipped from the buffer first, then the socket. */
static void test_skip_unread(void **state)
{
	struct fx *f = *state;
	uint8_t buf[2048];
	struct proto_hdr h;
	size_t n = 0, room;

	n += frame(buf + n, OP_WRITE, 1, 0x33, 1000);
	n += frame(buf + n, OP_PING, 2, 0, 0);
	peer_write(f, buf, 200);
	assert_int_equal(wire_fill(&f->c, &room), 200);
	peer_write(f, buf + 200, n - 200);
	assert_int_equal(wire_recv_hdr(&f->c, &h), 0);
	f->c.unread = h.len;
	assert_int_equal(wire_skip_unread(&f->c), 0);
	assert_int_equal(f->c.unread, 0);
	assert_int_equal(wire_recv_hdr(&f->c, &h), 0);
	assert_int_equal(h.reqid, 2);
	assert_int_equal(h.op, OP_PING);
}

/* A read-ahead buffer with no room left says so rather than reading. */
static void test_fill_full(void **state)
{
	struct fx *f = *state;
	size_t cap = wire_in_cap(), room;
	uint8_t *buf = calloc(1, cap + 64);

	assert_non_null(buf);
	peer_write(f, buf, cap + 64);
	assert_int_equal(wire_fill(&f->c, &room), (ssize_t)cap);
	assert_int_equal(wire_fill(&f->c, &room), -ENOBUFS);
	assert_int_equal(room, 0);
	free(buf);
}

/* A reply to a peer that left fails and marks the request undeliverable. */
static void test_broken_send(void **state)
{
	struct fx *f = *state;
	struct proto_hdr req;

	close(f->peer);
	f->peer = -1;
	proto_hdr_init(&req, OP_PING, 0, 1, GEN, 0);
	assert_true(wire_reply(&f->c, &req, 0, "x", 1) < 0);
	assert_int_equal(f->c.undeliverable, 1);
}

static void test_violation(void **state)
{
	struct fx *f = *state;

	assert_int_equal(f->c.close, 0);
	wire_violation(&f->c, OP_WRITE, "test");
	assert_int_equal(f->c.close, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_across, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eof_mid_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_partial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_skip_unread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fill_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_send, setup, teardown),
		cmocka_unit_test_setup_teardown(test_violation, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	log_init("wire_test", 1, 0);
	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
