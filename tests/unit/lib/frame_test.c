/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/frame_test.c: one request and its reply (lib/frame.c) on a
 * socketpair whose other end plays marud: the request goes out as framed,
 * a good reply lands in the caller's buffer or a fresh one, and every
 * malformed reply (magic, op, request id, length against max_frame and
 * against the caller's buffer, errors with a payload, positive status, a
 * payload proto_rep_check refuses, a truncated payload) is rejected before
 * anyone reads it. frame_set_timeout bounds a reply that never comes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "sockio.h"

struct pair {
	int c, m;	/* client end, marud end */
};

static void pair_open(struct pair *p)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	p->c = sv[0];
	p->m = sv[1];
}

static void pair_close(struct pair *p)
{
	close(p->c);
	if (p->m >= 0)
		close(p->m);
}

/* marud's end queues a raw reply header (fields as given) and payload. */
static void put_reply(struct pair *p, const struct proto_hdr *rh, const void *pl, size_t n)
{
	assert_int_equal(sock_write_full(p->m, rh, sizeof(*rh)), 0);
	if (n)
		assert_int_equal(sock_write_full(p->m, pl, n), 0);
}

static void reply_hdr(struct proto_hdr *rh, uint16_t op, uint32_t len, uint64_t reqid,
		      int32_t status)
{
	proto_hdr_init(rh, op, len, reqid, 7, status);
}

static int call_getattr(struct pair *p, uint64_t reqid, struct req *r)
{
	static const struct proto_ino_req q = { .ino = 42 };
	struct proto_hdr h;

	r->op = OP_GETATTR;
	r->p1 = &q;
	r->n1 = sizeof(q);
	proto_hdr_init(&h, OP_GETATTR, sizeof(q), reqid, 7, 0);
	return frame_call(p->c, 1u << 16, &h, r);
}

static void test_good_reply_and_request(void **state)
{
	struct proto_attr a = { .ino = 42, .size = 5 }, into;
	struct req r = { .rbuf = &into, .rcap = sizeof(into) };
	struct proto_ino_req q;
	struct proto_hdr rh, h;
	struct pair p;

	(void)state;
	pair_open(&p);
	reply_hdr(&rh, OP_GETATTR, sizeof(a), 9, 0);
	put_reply(&p, &rh, &a, sizeof(a));
	assert_int_equal(call_getattr(&p, 9, &r), 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.rgen, 7);
	assert_ptr_equal(r.rep, &into);
	assert_int_equal(r.rlen, sizeof(a));
	assert_int_equal(into.ino, 42);
	/* what marud received: the request exactly as framed */
	assert_int_equal(sock_read_full(p.m, &h, sizeof(h)), 0);
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), 0);
	assert_int_equal(h.op, OP_GETATTR);
	assert_int_equal(h.len, sizeof(q));
	assert_int_equal(h.reqid, 9);
	assert_int_equal(sock_read_full(p.m, &q, sizeof(q)), 0);
	assert_int_equal(q.ino, 42);
	frame_req_done(&r);
	assert_null(r.rep);
	pair_close(&p);
}

static void test_malloc_reply_and_error(void **state)
{
	struct proto_attr a = { .ino = 43 };
	struct req r = { 0 };
	struct proto_hdr rh;
	struct pair p;

	(void)state;
	pair_open(&p);
	/* no caller buffer: a fresh one, freed by frame_req_done */
	reply_hdr(&rh, OP_GETATTR, sizeof(a), 1, 0);
	put_reply(&p, &rh, &a, sizeof(a));
	assert_int_equal(call_getattr(&p, 1, &r), 0);
	assert_non_null(r.rep);
	assert_int_equal(((struct proto_attr *)r.rep)->ino, 43);
	/* an error carries no payload; status is marud's -errno */
	reply_hdr(&rh, OP_GETATTR, 0, 2, -ENOENT);
	put_reply(&p, &rh, NULL, 0);
	assert_int_equal(call_getattr(&p, 2, &r), 0);	/* frees the previous reply */
	assert_int_equal(r.status, -ENOENT);
	assert_null(r.rep);
	assert_int_equal(r.rlen, 0);
	frame_req_done(&r);
	pair_close(&p);
}

/* A reply header h (as given) with n payload bytes: frame_call says rc. */
static void expect_reject(const struct proto_hdr *rh, size_t n, int rc, int with_buf)
{
	uint8_t pl[256] = { 0 }, into[sizeof(struct proto_attr)];
	struct req r = { 0 };
	struct pair p;

	if (with_buf) {
		r.rbuf = into;
		r.rcap = sizeof(into);
	}
	pair_open(&p);
	put_reply(&p, rh, pl, n);
	assert_int_equal(call_getattr(&p, 5, &r), rc);
	assert_null(r.rep);
	frame_req_done(&r);
	pair_close(&p);
}

static void test_malformed_replies(void **state)
{
	struct proto_hdr rh;

	(void)state;
	reply_hdr(&rh, OP_GETATTR, sizeof(struct proto_attr), 5, 0);
	rh.magic ^= 1;
	expect_reject(&rh, sizeof(struct proto_attr), -EPROTO, 0);
	reply_hdr(&rh, OP_GETATTR, sizeof(struct proto_attr), 5, 0);
	rh.version = PROTO_VERSION + 1;
	expect_reject(&rh, sizeof(struct proto_attr), -EPROTO, 0);
	reply_hdr(&rh, OP_LOOKUP, sizeof(struct proto_attr), 5, 0);	/* wrong op */
	expect_reject(&rh, sizeof(struct proto_attr), -EPROTO, 0);
	reply_hdr(&rh, OP_GETATTR, sizeof(struct proto_attr), 6, 0);	/* wrong id */
	expect_reject(&rh, sizeof(struct proto_attr), -EPROTO, 0);
	reply_hdr(&rh, OP_GETATTR, 0, 5, -ENOENT);
	rh.len = 8;					/* error with payload */
	expect_reject(&rh, 8, -EPROTO, 0);
	reply_hdr(&rh, OP_GETATTR, 0, 5, 3);		/* positive status */
	expect_reject(&rh, 0, -EPROTO, 0);
	/* longer than max_frame (64 KiB here): refused before reading it */
	reply_hdr(&rh, OP_GETATTR, (1u << 16) + 1, 5, 0);
	expect_reject(&rh, 0, -EPROTO, 0);
	/* longer than the caller's buffer */
	reply_hdr(&rh, OP_GETATTR, sizeof(struct proto_attr) + 16, 5, 0);
	expect_reject(&rh, sizeof(struct proto_attr) + 16, -EPROTO, 1);
	/* a GETATTR reply shorter than a proto_attr: proto_rep_check */
	reply_hdr(&rh, OP_GETATTR, 10, 5, 0);
	expect_reject(&rh, 10, -EPROTO, 0);
	expect_reject(&rh, 10, -EPROTO, 1);
}

static void test_truncated_reply(void **state)
{
	struct proto_attr a = { .ino = 1 };
	struct req r = { 0 };
	struct proto_hdr rh;
	struct pair p;

	(void)state;
	pair_open(&p);
	reply_hdr(&rh, OP_GETATTR, sizeof(a), 5, 0);
	put_reply(&p, &rh, &a, sizeof(a) / 2);
	shutdown(p.m, SHUT_WR);			/* marud died mid-payload */
	assert_int_equal(call_getattr(&p, 5, &r), -ECONNRESET);
	assert_null(r.rep);
	/* and a peer gone before the header */
	assert_int_equal(call_getattr(&p, 6, &r), -ECONNRESET);
	pair_close(&p);
}

static void test_timeout(void **state)
{
	struct timespec t0, t1;
	struct req r = { 0 };
	struct pair p;
	long ms;

	(void)state;
	pair_open(&p);
	assert_int_equal(frame_set_timeout(p.c, 100), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(call_getattr(&p, 5, &r), -EAGAIN);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 90 && ms < 2000);
	assert_int_equal(frame_set_timeout(-1, 100), -EBADF);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_reply_and_request),
		cmocka_unit_test(test_malloc_reply_and_error),
		cmocka_unit_test(test_malformed_replies),
		cmocka_unit_test(test_truncated_reply),
		cmocka_unit_test(test_timeout),
	};

	return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
