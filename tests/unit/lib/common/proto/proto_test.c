/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/proto/proto_test.c: the wire codec. Every request op is built with
 * pbuf, framed, and must pass proto_hdr_check and proto_req_check; every
 * shorter (and one longer) length of it must fail. Headers with bad magic,
 * version, op or length, names that marufs-design(7) §2 forbids, replies as libmaru
 * checks them, random garbage and randomly mutated frames are all fed in;
 * payloads live in exactly-sized heap buffers so valgrind catches any read
 * past the length. Finally a 4 MiB frame crosses a socketpair.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "proto.h"
#include "sockio.h"

static const uint16_t req_ops[] = {
	OP_PING, OP_HELLO, OP_AUTH, OP_STATFS, OP_STATS, OP_MKDIR, OP_RMDIR,
	OP_LOOKUP, OP_GETATTR, OP_SETATTR, OP_RENAME, OP_UNLINK, OP_READDIR,
	OP_EXISTS, OP_CREATE, OP_RESERVE, OP_TRUNCATE, OP_PUBLISH, OP_ABANDON,
	OP_OPEN, OP_RELEASE, OP_EXTENTS, OP_READ, OP_WRITE, OP_HINT, OP_SUBSCRIBE,
	OP_EVENT_ACK, OP_HINTV, OP_HINT_WAIT, OP_RKEY, OP_NS_USAGE, OP_PIN,
};
#define NREQ (sizeof(req_ops) / sizeof(req_ops[0]))

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint32_t rnd(void)
{
	/* xorshift64*: reproducible without libc rand() state */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static void put(struct pbuf *b, const void *p, size_t n)
{
	assert_int_equal(proto_buf_put(b, p, n), 0);
}

static void put_u16_name(struct pbuf *b, const char *name, size_t n)
{
	uint16_t l = (uint16_t)n;

	put(b, &l, sizeof(l));
	put(b, name, n);
}

/* A request naming `name` (nlen bytes) for an op that carries names. */
static void build_named(uint16_t op, const char *name, size_t nlen, struct pbuf *b)
{
	switch (op) {
	case OP_RENAME: {
		struct proto_rename_req r = { .oldparent = 1, .newparent = 2,
			.oldlen = 3, .newlen = (uint16_t)nlen };
		put(b, &r, sizeof(r));
		put(b, "old", 3);
		put(b, name, nlen);
		break;
	}
	case OP_EXISTS: {
		struct proto_exists_req r = { .parent = 1, .count = 3 };
		put(b, &r, sizeof(r));
		put_u16_name(b, "a", 1);
		put_u16_name(b, name, nlen);
		put_u16_name(b, "bcd", 3);
		break;
	}
	case OP_CREATE: {
		struct proto_create_req r = { .parent = 1, .size_hint = 4096,
			.flags = CREATE_EXCL, .mode = 0100644, .namelen = (uint16_t)nlen };
		put(b, &r, sizeof(r));
		put(b, name, nlen);
		break;
	}
	case OP_OPEN: {
		struct proto_open_req r = { .parent = 1, .namelen = (uint16_t)nlen };
		put(b, &r, sizeof(r));
		put(b, name, nlen);
		break;
	}
	default: {
		struct proto_name_req r = { .parent = 1, .mode = 040755,
			.namelen = (uint16_t)nlen };
		put(b, &r, sizeof(r));
		put(b, name, nlen);
		break;
	}
	}
}

static const uint8_t write_data[1000] = { 1, 2, 3, 4, 5 };

/* A valid request payload for op. */
static void build_req(uint16_t op, struct pbuf *b)
{
	switch (op) {
	case OP_PING: case OP_STATFS: case OP_STATS:
		break;
	case OP_HELLO: {
		struct proto_hello_req r = { .flags = HELLO_F_RECLAIM,
			.proto_version = PROTO_VERSION, .pid = 42, .client_name = "test" };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_AUTH: {
		struct proto_auth r = { .nonce = { 9 } };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_MKDIR: case OP_RMDIR: case OP_LOOKUP: case OP_UNLINK:
	case OP_RENAME: case OP_EXISTS: case OP_CREATE: case OP_OPEN:
		build_named(op, "0123abcd.bin", 12, b);
		break;
	case OP_GETATTR: case OP_ABANDON: case OP_RELEASE: case OP_EXTENTS:
	case OP_NS_USAGE: {
		struct proto_ino_req r = { .ino = 77 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_SETATTR: {
		struct proto_setattr_req r = { .ino = 7, .mask = SETATTR_MODE, .mode = 0600 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_READDIR: {
		struct proto_readdir_req r = { .dir = 1, .max_entries = 128 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_RESERVE: case OP_TRUNCATE: {
		struct proto_size_req r = { .ino = 5, .size = 1 << 20 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_PUBLISH: {
		struct proto_publish_req r = { .ino = 5, .size = 100 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_READ: case OP_WRITE: {
		struct proto_io_req r = { .ino = 5, .off = 4096, .len = sizeof(write_data) };
		put(b, &r, sizeof(r));
		if (op == OP_WRITE)
			put(b, write_data, sizeof(write_data));
		break;
	}
	case OP_HINT: {
		struct proto_hint_req r = { .ino = 5, .hint = 1 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_HINTV: case OP_HINT_WAIT: {
		struct proto_hintv_req r = { .action = op == OP_HINTV ? 1 : 5, .count = 2,
					     .reqlen = 3, .timeout_ms = op == OP_HINTV ? 0 : 50 };
		struct proto_hint_range g[2] = { { 5, 0, 0 }, { 6, 4096, 8192 } };
		uint8_t id[8] = "r17";

		put(b, &r, sizeof(r));
		put(b, id, sizeof(id));
		put(b, g, sizeof(g));
		break;
	}
	case OP_SUBSCRIBE: {
		struct proto_subscribe_req r = { .after_seq = 10 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_EVENT_ACK: {
		struct proto_ack_req r = { .seq = 11 };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_RKEY: {
		struct proto_rkey_req r = { .ino = 78, .flags = RKEY_F_WRITE };
		put(b, &r, sizeof(r));
		break;
	}
	case OP_PIN: {
		struct proto_pin_req r = { .ino = 79, .seconds = 600 };
		put(b, &r, sizeof(r));
		break;
	}
	default:
		fail_msg("no builder for op %u", op);
	}
}

/* Copy into an exactly-sized heap block so overreads are caught. */
static uint8_t *exact_copy(const void *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	assert_non_null(c);
	if (n)
		memcpy(c, p, n);
	return c;
}

static int req_check_exact(uint16_t op, const void *p, uint32_t len)
{
	uint8_t *c = exact_copy(p, len);
	int rc = proto_req_check(op, c, len);

	free(c);
	return rc;
}

static int rep_check_exact(uint16_t op, const void *p, uint32_t len)
{
	uint8_t *c = exact_copy(p, len);
	int rc = proto_rep_check(op, c, len);

	free(c);
	return rc;
}

static void test_round_trip(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NREQ; i++) {
		struct pbuf body = { 0 }, frame = { 0 };
		struct proto_hdr h, got;

		build_req(req_ops[i], &body);
		proto_hdr_init(&h, req_ops[i], (uint32_t)body.len, 1000 + i, 3, 0);
		put(&frame, &h, sizeof(h));
		put(&frame, body.data, body.len);
		memcpy(&got, frame.data, sizeof(got));
		assert_int_equal(proto_hdr_check(&got, PROTO_MAX_FRAME), 0);
		assert_int_equal(got.op, req_ops[i]);
		assert_int_equal(got.len, body.len);
		assert_int_equal(got.reqid, 1000 + i);
		assert_int_equal(got.generation, 3);
		assert_int_equal(req_check_exact(got.op, frame.data + sizeof(got), got.len), 0);
		proto_buf_free(&body);
		proto_buf_free(&frame);
	}
}

static void test_truncated_and_extended(void **state)
{
	size_t i;
	uint32_t l;

	(void)state;
	for (i = 0; i < NREQ; i++) {
		struct pbuf b = { 0 };

		build_req(req_ops[i], &b);
		for (l = 0; l < b.len; l++)
			assert_int_equal(req_check_exact(req_ops[i], b.data, l), -EPROTO);
		put(&b, "x", 1);
		assert_int_equal(req_check_exact(req_ops[i], b.data, (uint32_t)b.len), -EPROTO);
		proto_buf_free(&b);
	}
}

/* PUBLISH: the version's attr, or with HELLO_F_DIRATTR its directory's after it. */
static void test_publish_reply(void **state)
{
	struct proto_attr a[2];

	(void)state;
	memset(a, 0, sizeof(a));
	assert_int_equal(rep_check_exact(OP_PUBLISH, a, sizeof(a[0])), 0);
	assert_int_equal(rep_check_exact(OP_PUBLISH, a, sizeof(a)), 0);
	assert_int_equal(rep_check_exact(OP_PUBLISH, a, sizeof(a[0]) + 1), -EPROTO);
	assert_int_equal(rep_check_exact(OP_PUBLISH, a, sizeof(a) + 1), -EPROTO);
	a[1].nextents = 1;	/* a directory holds no extents */
	assert_int_equal(rep_check_exact(OP_PUBLISH, a, sizeof(a)), -EPROTO);
	/* the same length as one attr and 6 extents: read as that */
	a[0].nextents = 6;
	assert_int_equal(rep_check_exact(OP_PUBLISH, a, sizeof(a)), 0);
}

static void test_bad_headers(void **state)
{
	static const uint16_t bad_ops[] = { 0, 6, 9, 34, 39, 45, 47, OP_MAX, 0x7fff, 0xffff };
	struct proto_hdr h;
	size_t i;

	(void)state;
	proto_hdr_init(&h, OP_PING, 0, 1, 1, 0);
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), 0);
	h.magic ^= 1;
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), -EPROTO);
	proto_hdr_init(&h, OP_PING, 0, 1, 1, 0);
	h.version = PROTO_VERSION + 1;
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), -EPROTO);
	h.version = 0;
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), -EPROTO);
	for (i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		proto_hdr_init(&h, bad_ops[i], 0, 1, 1, 0);
		assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), -EPROTO);
		assert_int_equal(proto_req_check(bad_ops[i], NULL, 0), -EPROTO);
		assert_string_equal(proto_op_name(bad_ops[i]), "UNKNOWN");
	}
	proto_hdr_init(&h, OP_WRITE, PROTO_MAX_FRAME, 1, 1, 0);
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), 0);
	h.len = PROTO_MAX_FRAME + 1;
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), -EMSGSIZE);
	h.len = UINT32_MAX;
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), -EMSGSIZE);
	h.len = 4097;
	assert_int_equal(proto_hdr_check(&h, 4096), -EMSGSIZE);
	/* EVENT is a valid op in a header but never a valid request */
	proto_hdr_init(&h, OP_EVENT, 0, 0, 1, 0);
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), 0);
	assert_int_equal(proto_req_check(OP_EVENT, NULL, 0), -EPROTO);
	assert_string_equal(proto_op_name(OP_WRITE), "WRITE");
	assert_string_equal(proto_op_name(OP_PING), "PING");
	assert_string_equal(proto_op_name(OP_EVENT_ACK), "EVENT_ACK");
	/* EVENT_ACK is answered by nothing: no reply payload is ever valid */
	assert_int_equal(proto_rep_check(OP_EVENT_ACK, NULL, 0), -EPROTO);
}

static void test_request_fields(void **state)
{
	struct proto_readdir_req rd = { .dir = 1, .max_entries = 0 };
	struct proto_io_req io = { .ino = 1, .len = PROTO_MAX_IO + 1 };
	struct proto_create_req cr = { .parent = 0, .from_ino = 9 };
	struct proto_open_req op = { .ino = 9 };
	struct proto_exists_req ex = { .parent = 1, .count = 0 };
	struct proto_rename_req rn = { .oldlen = 1, .newlen = 1, .flags = 0x80 };
	struct pbuf b = { 0 };

	(void)state;
	assert_int_equal(req_check_exact(OP_READDIR, &rd, sizeof(rd)), -EPROTO);
	assert_int_equal(req_check_exact(OP_READ, &io, sizeof(io)), -EPROTO);
	io.len = PROTO_MAX_IO;
	assert_int_equal(req_check_exact(OP_READ, &io, sizeof(io)), 0);
	/* WRITE length must be body + io.len exactly, and io.len bounded */
	io.len = 0;
	assert_int_equal(req_check_exact(OP_WRITE, &io, sizeof(io)), 0);
	io.len = PROTO_MAX_IO + 1;
	assert_int_equal(req_check_exact(OP_WRITE, &io, sizeof(io)), -EPROTO);
	/* create by from_ino carries no name; with parent 0 and no from_ino it is bad */
	assert_int_equal(req_check_exact(OP_CREATE, &cr, sizeof(cr)), 0);
	cr.from_ino = 0;
	assert_int_equal(req_check_exact(OP_CREATE, &cr, sizeof(cr)), -EINVAL);
	assert_int_equal(req_check_exact(OP_OPEN, &op, sizeof(op)), 0);
	op.ino = 0;
	assert_int_equal(req_check_exact(OP_OPEN, &op, sizeof(op)), -EINVAL);
	assert_int_equal(req_check_exact(OP_EXISTS, &ex, sizeof(ex)), 0);
	/* EXISTS whose count claims more names than the bytes hold */
	ex.count = 2;
	put(&b, &ex, sizeof(ex));
	put_u16_name(&b, "ab", 2);
	assert_int_equal(req_check_exact(OP_EXISTS, b.data, (uint32_t)b.len), -EPROTO);
	ex.count = 0xffffffffu;
	memcpy(b.data, &ex, sizeof(ex));
	assert_int_equal(req_check_exact(OP_EXISTS, b.data, (uint32_t)b.len), -EPROTO);
	/* a name length that runs past the end */
	b.len = 0;
	ex.count = 1;
	put(&b, &ex, sizeof(ex));
	put_u16_name(&b, "ab", 2);
	b.data[sizeof(ex)] = 3;
	assert_int_equal(req_check_exact(OP_EXISTS, b.data, (uint32_t)b.len), -EPROTO);
	b.len = 0;
	put(&b, &rn, sizeof(rn));
	put(&b, "ab", 2);
	assert_int_equal(req_check_exact(OP_RENAME, b.data, (uint32_t)b.len), -EINVAL);
	proto_buf_free(&b);
}

static const uint16_t named_ops[] = {
	OP_MKDIR, OP_RMDIR, OP_LOOKUP, OP_UNLINK, OP_RENAME, OP_EXISTS, OP_CREATE, OP_OPEN,
};

static void check_name_on_ops(const char *name, size_t nlen, int want)
{
	size_t i;

	assert_int_equal(proto_name_valid(name, nlen), want);
	for (i = 0; i < sizeof(named_ops) / sizeof(named_ops[0]); i++) {
		struct pbuf b = { 0 };

		build_named(named_ops[i], name, nlen, &b);
		assert_int_equal(req_check_exact(named_ops[i], b.data, (uint32_t)b.len), want);
		proto_buf_free(&b);
	}
}

static void test_names(void **state)
{
	char big[PROTO_NAME_MAX + 2];

	(void)state;
	memset(big, 'n', sizeof(big));
	check_name_on_ops("", 0, -EINVAL);
	check_name_on_ops(".", 1, -EINVAL);
	check_name_on_ops("..", 2, -EINVAL);
	check_name_on_ops("a/b", 3, -EINVAL);
	check_name_on_ops("/", 1, -EINVAL);
	check_name_on_ops("a\0b", 3, -EINVAL);
	check_name_on_ops(big, PROTO_NAME_MAX + 1, -ENAMETOOLONG);
	check_name_on_ops(big, PROTO_NAME_MAX, 0);
	check_name_on_ops("...", 3, 0);
	check_name_on_ops(".hidden", 7, 0);
	check_name_on_ops("x", 1, 0);
	check_name_on_ops("a b\xff.tmp", 8, 0);
	assert_int_equal(proto_name_valid(NULL, 1), -EINVAL);
}

static void put_attr(struct pbuf *b, uint32_t nextents, uint32_t sent)
{
	struct proto_attr a = { .ino = 1, .size = 10, .nextents = nextents };
	struct proto_extent e = { .off = 8192, .len = 4096 };
	uint32_t i;

	put(b, &a, sizeof(a));
	for (i = 0; i < sent; i++)
		put(b, &e, sizeof(e));
}

static void test_reply_attr(void **state)
{
	static const uint16_t ext_ops[] = { OP_CREATE, OP_RESERVE, OP_TRUNCATE, OP_OPEN, OP_EXTENTS };
	struct pbuf b = { 0 };
	uint32_t l;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ext_ops) / sizeof(ext_ops[0]); i++) {
		b.len = 0;
		put_attr(&b, 3, 3);
		assert_int_equal(rep_check_exact(ext_ops[i], b.data, (uint32_t)b.len), 0);
		for (l = 0; l < b.len; l++)
			assert_int_equal(rep_check_exact(ext_ops[i], b.data, l), -EPROTO);
		put(&b, "", 1);
		assert_int_equal(rep_check_exact(ext_ops[i], b.data, (uint32_t)b.len), -EPROTO);
	}
	b.len = 0;
	put_attr(&b, PROTO_MAX_EXTENTS + 1, 0);
	assert_int_equal(rep_check_exact(OP_EXTENTS, b.data, (uint32_t)b.len), -EPROTO);
	assert_int_equal(rep_check_exact(OP_LOOKUP, b.data, (uint32_t)b.len), -EPROTO);
	/* attr-only replies: the attr alone, or with its extents */
	b.len = 0;
	put_attr(&b, 2, 0);
	assert_int_equal(rep_check_exact(OP_LOOKUP, b.data, (uint32_t)b.len), 0);
	assert_int_equal(rep_check_exact(OP_OPEN, b.data, (uint32_t)b.len), -EPROTO);
	assert_int_equal(rep_check_exact(OP_GETATTR, b.data, (uint32_t)b.len - 1), -EPROTO);
	proto_buf_free(&b);
}

static void put_dirent(struct pbuf *b, const char *name, uint64_t cookie)
{
	struct proto_dirent d = { .ino = cookie, .cookie = cookie, .mode = 0100644,
		.namelen = (uint16_t)strlen(name) };

	put(b, &d, sizeof(d));
	put(b, name, d.namelen);
	assert_int_equal(proto_buf_align8(b), 0);
}

static void test_reply_readdir(void **state)
{
	struct proto_readdir_rep r = { .count = 3, .eof = 1 };
	struct pbuf b = { 0 };
	uint32_t l, full;

	(void)state;
	put(&b, &r, sizeof(r));
	put_dirent(&b, "a", 1);
	put_dirent(&b, "eight888", 2);
	put_dirent(&b, "last.bin", 3);
	full = (uint32_t)b.len;
	assert_int_equal(full % 8, 0);
	assert_int_equal(rep_check_exact(OP_READDIR, b.data, full), 0);
	for (l = 0; l < full; l++)
		assert_int_equal(rep_check_exact(OP_READDIR, b.data, l), -EPROTO);
	/* one more entry claimed than sent */
	r.count = 4;
	memcpy(b.data, &r, sizeof(r));
	assert_int_equal(rep_check_exact(OP_READDIR, b.data, full), -EPROTO);
	/* the last entry's padding may be left off */
	b.len = 0;
	r.count = 1;
	put(&b, &r, sizeof(r));
	put_dirent(&b, "abc", 1);
	assert_int_equal(rep_check_exact(OP_READDIR, b.data, sizeof(r) + 32 + 3), 0);
	assert_int_equal(rep_check_exact(OP_READDIR, b.data, sizeof(r) + 32 + 2), -EPROTO);
	r.count = 0;
	assert_int_equal(rep_check_exact(OP_READDIR, &r, sizeof(r)), 0);
	proto_buf_free(&b);
}

static void test_reply_other(void **state)
{
	struct proto_hello_rep *hello = calloc(1, sizeof(*hello));
	struct proto_event ev = { .seq = 1, .type = 7, .namelen = 3, .name2len = 4,
		.pathlen = 6, .path2len = 7 };
	struct proto_io_rep io = { .done = 5 };
	uint8_t exists[4] = { 0, 1, 1, 0 };
	struct pbuf b = { 0 };
	uint32_t l;

	(void)state;
	assert_non_null(hello);
	memcpy(hello->pool_path, "/dev/shm/maru", 14);
	assert_int_equal(rep_check_exact(OP_HELLO, hello, sizeof(*hello)), 0);
	assert_int_equal(rep_check_exact(OP_HELLO, hello, sizeof(*hello) - 1), -EPROTO);
	memset(hello->pool_path, 'p', sizeof(hello->pool_path));
	assert_int_equal(rep_check_exact(OP_HELLO, hello, sizeof(*hello)), -EPROTO);
	free(hello);

	put(&b, &ev, sizeof(ev));
	put(&b, "abcnew1/d/abc/e/new1", 20);
	assert_int_equal(rep_check_exact(OP_EVENT, b.data, (uint32_t)b.len), 0);
	for (l = 0; l < b.len; l++)
		assert_int_equal(rep_check_exact(OP_EVENT, b.data, l), -EPROTO);
	b.data[sizeof(ev) + 1] = '/';	/* a name with a slash */
	assert_int_equal(rep_check_exact(OP_EVENT, b.data, (uint32_t)b.len), -EPROTO);
	memset(&ev, 0, sizeof(ev));
	ev.type = 100;
	assert_int_equal(rep_check_exact(OP_EVENT, &ev, sizeof(ev)), 0);

	assert_int_equal(rep_check_exact(OP_EXISTS, exists, 4), 0);
	exists[2] = 2;
	assert_int_equal(rep_check_exact(OP_EXISTS, exists, 4), -EPROTO);
	assert_int_equal(rep_check_exact(OP_WRITE, &io, sizeof(io)), 0);
	assert_int_equal(rep_check_exact(OP_WRITE, &io, sizeof(io) - 1), -EPROTO);
	assert_int_equal(rep_check_exact(OP_PING, NULL, 0), 0);
	assert_int_equal(rep_check_exact(OP_UNLINK, "x", 1), -EPROTO);
	assert_int_equal(rep_check_exact(OP_AUTH, NULL, 0), 0);
	assert_int_equal(rep_check_exact(OP_AUTH, &io, 16), -EPROTO);
	assert_int_equal(rep_check_exact(OP_STATS, "up 1\n", 5), 0);
	assert_int_equal(proto_rep_check(OP_READ, NULL, PROTO_MAX_IO + 1), -EPROTO);
	proto_buf_free(&b);
}

/*
 * The rdma data path's wire: RKEY's fixed request and its count-prefixed
 * keys, HELLO's appended rdma fields (the layout before them unchanged),
 * the rdma_cm private data.
 */
/* PIN: one fixed body; flags only PIN_F_QUERY, and a query sets no seconds */
static void test_pin(void **state)
{
	struct proto_pin_req q = { .ino = 5, .seconds = 30 };
	struct proto_pin_rep r = { .left = 30 };

	assert_string_equal(proto_op_name(OP_PIN), "PIN");
	assert_int_equal(req_check_exact(OP_PIN, &q, sizeof(q)), 0);
	assert_int_equal(req_check_exact(OP_PIN, &q, sizeof(q) - 1), -EPROTO);
	q.seconds = 0;
	q.flags = PIN_F_QUERY;
	assert_int_equal(req_check_exact(OP_PIN, &q, sizeof(q)), 0);
	q.seconds = 1;
	assert_int_equal(req_check_exact(OP_PIN, &q, sizeof(q)), -EINVAL);
	q.seconds = 0;
	q.flags = 2;
	assert_int_equal(req_check_exact(OP_PIN, &q, sizeof(q)), -EINVAL);
	assert_int_equal(rep_check_exact(OP_PIN, &r, sizeof(r)), 0);
	assert_int_equal(rep_check_exact(OP_PIN, &r, sizeof(r) - 1), -EPROTO);
	assert_int_equal(rep_check_exact(OP_PIN, &r, 0), -EPROTO);
}

static void test_rdma(void **state)
{
	struct proto_rkey_req q = { .ino = 5 };
	struct proto_rkey_rep h = { .count = 2, .flags = RDMA_F_WINDOWS };
	struct proto_rkey k[2] = { { .off = 4096, .len = 8192, .addr = 4096, .rkey = 0x1234 },
				   { .off = 65536, .len = 4096, .addr = 65536, .rkey = 0x5678 } };
	struct proto_hello_rep *hello = calloc(1, sizeof(*hello));
	struct pbuf b = { 0 };
	uint32_t l;

	(void)state;
	assert_string_equal(proto_op_name(OP_RKEY), "RKEY");
	assert_int_equal(req_check_exact(OP_RKEY, &q, sizeof(q)), 0);
	assert_int_equal(req_check_exact(OP_RKEY, &q, sizeof(q) - 1), -EPROTO);
	assert_int_equal(req_check_exact(OP_RKEY, &q, 0), -EPROTO);

	put(&b, &h, sizeof(h));
	put(&b, k, sizeof(k));
	assert_int_equal(rep_check_exact(OP_RKEY, b.data, (uint32_t)b.len), 0);
	for (l = 0; l < b.len; l++)
		assert_int_equal(rep_check_exact(OP_RKEY, b.data, l), -EPROTO);
	h.count = 0;	/* a version of size 0 has no extents, so no keys */
	assert_int_equal(rep_check_exact(OP_RKEY, &h, sizeof(h)), 0);
	h.count = PROTO_MAX_EXTENTS + 1;
	assert_int_equal(rep_check_exact(OP_RKEY, &h, sizeof(h)), -EPROTO);
	h.count = 0xffffffffu;	/* count * 32 must not wrap into a match */
	assert_int_equal(rep_check_exact(OP_RKEY, &h, sizeof(h)), -EPROTO);
	proto_buf_free(&b);

	/* HELLO: the rdma fields come after everything older clients read */
	assert_int_equal(HELLO_F_RDMA, 1u << 31);
	assert_int_equal(offsetof(struct proto_hello_rep, rdma_port), 80 + PROTO_PATH_MAX);
	assert_non_null(hello);
	memcpy(hello->pool_path, "/dev/shm/maru", 14);
	hello->rdma_port = 18515;
	hello->rdma_flags = RDMA_F_WHOLE_POOL;
	memcpy(hello->rdma_host, "10.0.0.7", 9);
	assert_int_equal(rep_check_exact(OP_HELLO, hello, sizeof(*hello)), 0);
	assert_int_equal(rep_check_exact(OP_HELLO, hello, offsetof(struct proto_hello_rep,
								   rdma_port)), -EPROTO);
	free(hello);
	assert_int_equal(sizeof(struct proto_rdma_cm), 32);
	assert_int_equal(RDMA_CM_MAGIC, 0x4d44524dU);
}

/* Random bytes with a random op and length: only "no crash" and a sane code. */
static void test_fuzz_garbage(void **state)
{
	uint8_t buf[700];
	int i, rc;

	(void)state;
	for (i = 0; i < 20000; i++) {
		uint16_t op = (uint16_t)(rnd() % 48);
		uint32_t len = rnd() % sizeof(buf), j;
		struct proto_hdr h;

		for (j = 0; j < len; j++)
			buf[j] = (uint8_t)rnd();
		/* small length fields make it past the size checks more often */
		if (len > 24 && (rnd() & 1))
			buf[20] = buf[21] = buf[12] = buf[13] = 0;
		rc = req_check_exact(op, buf, len);
		assert_true(rc == 0 || rc == -EPROTO || rc == -EINVAL);
		rc = rep_check_exact(op, buf, len);
		assert_true(rc == 0 || rc == -EPROTO || rc == -EINVAL);
		memcpy(&h, buf, sizeof(h) <= len ? sizeof(h) : 0);
		if (len >= sizeof(h)) {
			rc = proto_hdr_check(&h, PROTO_MAX_FRAME);
			assert_true(rc == 0 || rc == -EPROTO || rc == -EMSGSIZE);
		}
	}
}

/* Valid frames with a few bytes flipped: checks must hold without overreads. */
static void test_fuzz_mutated(void **state)
{
	int i, k, rc, pass = 0;

	(void)state;
	for (i = 0; i < 20000; i++) {
		uint16_t op = req_ops[rnd() % NREQ];
		struct pbuf b = { 0 };

		build_req(op, &b);
		if (b.len == 0) {
			proto_buf_free(&b);
			continue;
		}
		for (k = 0; k < 1 + (int)(rnd() % 3); k++)
			b.data[rnd() % b.len] = (uint8_t)rnd();
		rc = req_check_exact(op, b.data, (uint32_t)b.len);
		assert_true(rc == 0 || rc == -EPROTO || rc == -EINVAL);
		pass += rc == 0;
		proto_buf_free(&b);
	}
	/* most mutations hit values, not lengths, and stay valid */
	assert_true(pass > 1000);
}

static void test_pbuf(void **state)
{
	struct pbuf b = { 0 };
	uint8_t chunk[1000];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(chunk); i++)
		chunk[i] = (uint8_t)i;
	assert_int_equal(proto_buf_put(&b, NULL, 0), 0);
	assert_int_equal(b.len, 0);
	put(&b, chunk, 3);
	assert_int_equal(proto_buf_align8(&b), 0);
	assert_int_equal(b.len, 8);
	assert_int_equal(proto_buf_align8(&b), 0);
	assert_int_equal(b.len, 8);
	assert_memory_equal(b.data, "\0\1\2\0\0\0\0\0", 8);
	for (i = 0; i < 200; i++)
		put(&b, chunk, sizeof(chunk));
	assert_int_equal(b.len, 8 + 200 * sizeof(chunk));
	assert_true(b.cap >= b.len);
	assert_memory_equal(b.data + 8 + 199 * sizeof(chunk), chunk, sizeof(chunk));
	assert_int_equal(proto_buf_reserve(&b, SIZE_MAX), -ENOMEM);
	proto_buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
}

#define BIG (4u << 20)

struct sender {
	int fd;
	const uint8_t *data;
	int rc;
};

static void *send_thread(void *arg)
{
	struct sender *s = arg;
	struct proto_hdr h;

	proto_hdr_init(&h, OP_WRITE, BIG, 99, 5, 0);
	/* split so the second piece starts mid-way: both iovecs get partials */
	s->rc = proto_send(s->fd, &h, s->data, 1234567, s->data + 1234567, BIG - 1234567);
	return NULL;
}

static void test_socket_io(void **state)
{
	uint8_t *data = malloc(BIG), *got = malloc(BIG);
	struct sender s = { .data = data };
	struct proto_hdr h;
	pthread_t t;
	int sv[2];
	size_t i;

	(void)state;
	assert_non_null(data);
	assert_non_null(got);
	for (i = 0; i < BIG; i++)
		data[i] = (uint8_t)rnd();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	s.fd = sv[0];
	assert_int_equal(pthread_create(&t, NULL, send_thread, &s), 0);
	assert_int_equal(sock_read_full(sv[1], &h, sizeof(h)), 0);
	assert_int_equal(proto_hdr_check(&h, PROTO_MAX_FRAME), 0);
	assert_int_equal(h.len, BIG);
	assert_int_equal(h.reqid, 99);
	assert_int_equal(sock_read_full(sv[1], got, h.len), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(s.rc, 0);
	assert_memory_equal(got, data, BIG);

	/* EOF mid-frame is a reset; a closed peer is EPIPE, not SIGPIPE */
	assert_int_equal(sock_write_full(sv[0], data, 10), 0);
	close(sv[0]);
	assert_int_equal(sock_read_full(sv[1], got, 11), -ECONNRESET);
	assert_int_equal(sock_write_full(sv[1], data, 10), -EPIPE);
	close(sv[1]);
	free(data);
	free(got);
}

static void test_pipe_io(void **state)
{
	struct proto_hdr h, got;
	char buf[8];
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	proto_hdr_init(&h, OP_PING, 5, 1, 2, -ENOENT);
	/* not a socket: falls back to writev */
	assert_int_equal(proto_send(p[1], &h, "ab", 2, "cde", 3), 0);
	assert_int_equal(sock_read_full(p[0], &got, sizeof(got)), 0);
	assert_memory_equal(&got, &h, sizeof(h));
	assert_int_equal(got.status, -ENOENT);
	assert_int_equal(sock_read_full(p[0], buf, 5), 0);
	assert_memory_equal(buf, "abcde", 5);
	assert_int_equal(sock_write_full(p[1], "xyz", 3), 0);
	assert_int_equal(sock_read_full(p[0], buf, 3), 0);
	assert_memory_equal(buf, "xyz", 3);
	assert_int_equal(sock_read_full(-1, buf, 1), -EBADF);
	assert_int_equal(sock_write_full(-1, buf, 1), -EBADF);
	close(p[0]);
	close(p[1]);
}

/* SYMLINK, LINK, MKNOD, READLINK and the RENAME reply (issue 13 ops). */
static void test_link_ops(void **state)
{
	struct proto_symlink_req sl = { .parent = 1, .namelen = 1, .targetlen = 3 };
	struct proto_link_req lk = { .ino = 9, .newparent = 1, .namelen = 2 };
	struct proto_mknod_req mk = { .parent = 1, .mode = 0010644, .namelen = 1 };
	struct proto_rename_rep rr = { .seq = 5 };
	static char target[PROTO_PATH_MAX + 1];
	struct pbuf b = { 0 };

	(void)state;
	put(&b, &sl, sizeof(sl));
	put(&b, "ltgt", 4);
	assert_int_equal(req_check_exact(OP_SYMLINK, b.data, (uint32_t)b.len), 0);
	assert_int_equal(req_check_exact(OP_SYMLINK, b.data, (uint32_t)b.len - 1), -EPROTO);
	b.data[sizeof(sl) + 2] = '\0';
	assert_int_equal(req_check_exact(OP_SYMLINK, b.data, (uint32_t)b.len), -EINVAL);
	b.len = 0;
	memset(target, 't', sizeof(target));
	sl.targetlen = PROTO_PATH_MAX;
	put(&b, &sl, sizeof(sl));
	put(&b, "l", 1);
	put(&b, target, PROTO_PATH_MAX);
	assert_int_equal(req_check_exact(OP_SYMLINK, b.data, (uint32_t)b.len), -ENAMETOOLONG);
	b.len = 0;
	put(&b, &lk, sizeof(lk));
	put(&b, "ab", 2);
	assert_int_equal(req_check_exact(OP_LINK, b.data, (uint32_t)b.len), 0);
	b.data[sizeof(lk)] = '/';
	assert_int_equal(req_check_exact(OP_LINK, b.data, (uint32_t)b.len), -EINVAL);
	b.len = 0;
	put(&b, &mk, sizeof(mk));
	put(&b, "f", 1);
	assert_int_equal(req_check_exact(OP_MKNOD, b.data, (uint32_t)b.len), 0);
	mk.mode = 0100644;	/* a regular file is no mknod */
	memcpy(b.data, &mk, sizeof(mk));
	assert_int_equal(req_check_exact(OP_MKNOD, b.data, (uint32_t)b.len), -EINVAL);
	proto_buf_free(&b);
	assert_int_equal(rep_check_exact(OP_RENAME, &rr, sizeof(rr)), 0);
	assert_int_equal(rep_check_exact(OP_RENAME, &rr, 0), -EPROTO);
	assert_int_equal(rep_check_exact(OP_READLINK, target, 4), 0);
	assert_int_equal(rep_check_exact(OP_READLINK, target, PROTO_PATH_MAX), -EPROTO);
	assert_string_equal(proto_op_name(OP_SYMLINK), "SYMLINK");
	assert_string_equal(proto_op_name(OP_MKNOD), "MKNOD");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_truncated_and_extended),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_publish_reply),
		cmocka_unit_test(test_request_fields),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_reply_attr),
		cmocka_unit_test(test_reply_readdir),
		cmocka_unit_test(test_reply_other),
		cmocka_unit_test(test_rdma),
		cmocka_unit_test(test_pin),
		cmocka_unit_test(test_fuzz_garbage),
		cmocka_unit_test(test_fuzz_mutated),
		cmocka_unit_test(test_pbuf),
		cmocka_unit_test(test_socket_io),
		cmocka_unit_test(test_pipe_io),
		cmocka_unit_test(test_link_ops),
	};

	/* SIGPIPE stays at its default: proto_*() must not raise it */
	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
