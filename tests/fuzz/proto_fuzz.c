/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/proto_fuzz.c: libFuzzer harness of the wire decoder (lib/common/proto/proto.c).
 * The input is one frame as it arrives: a 32-byte header, then the payload.
 * The header goes through proto_hdr_check(); the payload, whatever the header
 * said, through proto_req_check() and proto_rep_check() of the header's op
 * (known or not), once as given (its end is the end of the allocation, so
 * ASan sees any read past len) and once one byte off alignment (UBSan sees
 * any unaligned field read). Beyond "no crash", it asserts what lib/common/proto/proto.h
 * promises: only the documented error codes, the same verdict at any
 * alignment, and for the fixed-size and entry-naming requests the exact
 * verdict the layout in proto.h and marufs-design(7) §2's name rule give. It also
 * round-trips the frame through the pbuf frame builder.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto.h"

#define FUZZ_CHECK(cond)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "proto_fuzz: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);                     \
			abort();                                                \
		}                                                               \
	} while (0)

/* marufs-design(7) §2, stated independently of proto.c: 1..255 bytes, no '/' or NUL, not . or .. */
static bool name_ok(const uint8_t *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 255)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == '\0')
			return false;
	return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* Request body size of the ops that carry one fixed struct and nothing else. */
static long fixed_req_size(uint16_t op)
{
	switch (op) {
	case OP_PING:
	case OP_STATFS:
	case OP_STATS:
		return 0;
	case OP_HELLO:
		return sizeof(struct proto_hello_req);
	case OP_AUTH:
		return sizeof(struct proto_auth);
	case OP_GETATTR:
	case OP_ABANDON:
	case OP_RELEASE:
	case OP_EXTENTS:
	case OP_READLINK:
		return sizeof(struct proto_ino_req);
	case OP_SETATTR:
		return sizeof(struct proto_setattr_req);
	case OP_RESERVE:
	case OP_TRUNCATE:
		return sizeof(struct proto_size_req);
	case OP_PUBLISH:
		return sizeof(struct proto_publish_req);
	case OP_HINT:
		return sizeof(struct proto_hint_req);
	case OP_SUBSCRIBE:
		return sizeof(struct proto_subscribe_req);
	case OP_EVENT_ACK:
		return sizeof(struct proto_ack_req);
	default:
		return -1;
	}
}

static bool is_name_op(uint16_t op)
{
	return op == OP_MKDIR || op == OP_RMDIR || op == OP_LOOKUP || op == OP_UNLINK;
}

/* The verdict proto.h's layout gives for the ops it pins down exactly; 1: no opinion. */
static int expected_req(uint16_t op, const uint8_t *p, uint32_t len)
{
	long fixed = fixed_req_size(op);
	struct proto_name_req r;

	/* AUTH may carry a key name (proto_auth_named, scoped keys) */
	if (op == OP_AUTH && len == sizeof(struct proto_auth_named))
		return 0;
	if (fixed >= 0)
		return len == (uint32_t)fixed ? 0 : -EPROTO;
	if (!is_name_op(op))
		return 1;
	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.namelen)
		return -EPROTO;
	if (name_ok(p + sizeof(r), r.namelen))
		return 0;
	return r.namelen > PROTO_NAME_MAX ? -ENAMETOOLONG : -EINVAL;
}

/* What an accepted variable-length request guarantees its handler. */
static void accepted_req(uint16_t op, const uint8_t *p, uint32_t len)
{
	struct proto_io_req io;
	struct proto_rename_req rn;
	struct proto_create_req cr;
	struct proto_open_req op_;
	struct proto_symlink_req sl;
	struct proto_link_req lk;
	struct proto_mknod_req mk;

	switch (op) {
	case OP_SYMLINK:
		FUZZ_CHECK(len >= sizeof(sl));
		memcpy(&sl, p, sizeof(sl));
		FUZZ_CHECK(len == sizeof(sl) + (size_t)sl.namelen + sl.targetlen);
		FUZZ_CHECK(name_ok(p + sizeof(sl), sl.namelen));
		FUZZ_CHECK(sl.targetlen >= 1 && sl.targetlen < PROTO_PATH_MAX);
		FUZZ_CHECK(!memchr(p + sizeof(sl) + sl.namelen, '\0', sl.targetlen));
		break;
	case OP_LINK:
		FUZZ_CHECK(len >= sizeof(lk));
		memcpy(&lk, p, sizeof(lk));
		FUZZ_CHECK(len == sizeof(lk) + (size_t)lk.namelen);
		FUZZ_CHECK(name_ok(p + sizeof(lk), lk.namelen));
		break;
	case OP_MKNOD:
		FUZZ_CHECK(len >= sizeof(mk));
		memcpy(&mk, p, sizeof(mk));
		FUZZ_CHECK(len == sizeof(mk) + (size_t)mk.namelen);
		FUZZ_CHECK(name_ok(p + sizeof(mk), mk.namelen));
		break;
	case OP_READ:
	case OP_WRITE:
		FUZZ_CHECK(len >= sizeof(io));
		memcpy(&io, p, sizeof(io));
		FUZZ_CHECK(io.len <= PROTO_MAX_IO);
		FUZZ_CHECK(len == sizeof(io) + (op == OP_WRITE ? io.len : 0));
		break;
	case OP_RENAME:
		FUZZ_CHECK(len >= sizeof(rn));
		memcpy(&rn, p, sizeof(rn));
		FUZZ_CHECK(len == sizeof(rn) + (size_t)rn.oldlen + rn.newlen);
		FUZZ_CHECK(name_ok(p + sizeof(rn), rn.oldlen));
		FUZZ_CHECK(name_ok(p + sizeof(rn) + rn.oldlen, rn.newlen));
		break;
	case OP_CREATE:
		FUZZ_CHECK(len >= sizeof(cr));
		memcpy(&cr, p, sizeof(cr));
		FUZZ_CHECK(len == sizeof(cr) + (size_t)cr.namelen);
		FUZZ_CHECK(cr.parent ? name_ok(p + sizeof(cr), cr.namelen) :
				       cr.namelen == 0 && cr.from_ino != 0);
		break;
	case OP_OPEN:
		FUZZ_CHECK(len >= sizeof(op_));
		memcpy(&op_, p, sizeof(op_));
		FUZZ_CHECK(len == sizeof(op_) + (size_t)op_.namelen);
		FUZZ_CHECK(op_.namelen ? name_ok(p + sizeof(op_), op_.namelen) : op_.ino != 0);
		break;
	default:
		break;
	}
}

/* Reply payload size of the ops whose reply is fixed; -1 otherwise. */
static long fixed_rep_size(uint16_t op)
{
	switch (op) {
	case OP_PING:
	case OP_RMDIR:
	case OP_UNLINK:
	case OP_ABANDON:
	case OP_RELEASE:
	case OP_HINT:
	case OP_HINTV:
	case OP_SUBSCRIBE:
		return 0;
	case OP_RENAME:
		return sizeof(struct proto_rename_rep);
	case OP_HINT_WAIT:
		return sizeof(struct proto_hint_wait_rep);
	case OP_HELLO:
		return sizeof(struct proto_hello_rep);
	case OP_STATFS:
		return sizeof(struct proto_statfs);
	case OP_WRITE:
		return sizeof(struct proto_io_rep);
	default:
		return -1;
	}
}

static bool op_known(uint16_t op)
{
	return strcmp(proto_op_name(op), "UNKNOWN") != 0;
}

static void check_header(const uint8_t *data)
{
	struct proto_hdr h;
	int rc;

	memcpy(&h, data, sizeof(h));
	rc = proto_hdr_check(&h, PROTO_MAX_FRAME);
	FUZZ_CHECK(rc == 0 || rc == -EPROTO || rc == -EMSGSIZE);
	if (h.magic != PROTO_MAGIC || h.version != PROTO_VERSION || !op_known(h.op))
		FUZZ_CHECK(rc == -EPROTO);
	else
		FUZZ_CHECK(rc == (h.len > PROTO_MAX_FRAME ? -EMSGSIZE : 0));
	FUZZ_CHECK(proto_hdr_check(&h, UINT32_MAX) != -EMSGSIZE);
}

static void check_payload(uint16_t op, const uint8_t *p, uint32_t len, int *req, int *rep)
{
	int want;

	*req = proto_req_check(op, p, len);
	*rep = proto_rep_check(op, p, len);
	FUZZ_CHECK(*req == 0 || *req == -EPROTO || *req == -EINVAL || *req == -ENAMETOOLONG);
	FUZZ_CHECK(*rep == 0 || *rep == -EPROTO);
	if (!op_known(op) || op == OP_EVENT)
		FUZZ_CHECK(*req == -EPROTO);
	if (!op_known(op))
		FUZZ_CHECK(*rep == -EPROTO);
	want = expected_req(op, p, len);
	if (want != 1)
		FUZZ_CHECK(*req == want);
	if (*req == 0)
		accepted_req(op, p, len);
	if (fixed_rep_size(op) >= 0 && (uint32_t)fixed_rep_size(op) != len)
		FUZZ_CHECK(*rep == -EPROTO);
}

/* The frame builder reproduces the frame, padded to 8 with zeros. */
static void check_pbuf(const uint8_t *data, size_t size)
{
	struct pbuf b = { 0 };
	size_t half = size / 2, i;

	FUZZ_CHECK(proto_buf_put(&b, data, half) == 0);
	FUZZ_CHECK(proto_buf_put(&b, data + half, size - half) == 0);
	FUZZ_CHECK(proto_buf_align8(&b) == 0);
	FUZZ_CHECK(b.len == ((size + 7) & ~(size_t)7) && b.len <= b.cap);
	FUZZ_CHECK(size == 0 || memcmp(b.data, data, size) == 0);
	for (i = size; i < b.len; i++)
		FUZZ_CHECK(b.data[i] == 0);
	proto_buf_free(&b);
	FUZZ_CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_hdr h;
	uint32_t len;
	uint8_t *shifted;
	int req, rep, req2, rep2;

	if (size < sizeof(h) || size - sizeof(h) > UINT32_MAX)
		return 0;
	check_header(data);
	memcpy(&h, data, sizeof(h));
	len = (uint32_t)(size - sizeof(h));
	check_payload(h.op, data + sizeof(h), len, &req, &rep);
	/* One byte off 8-alignment, and again exactly len bytes long. */
	shifted = malloc((size_t)len + 1);
	FUZZ_CHECK(shifted != NULL);
	memcpy(shifted + 1, data + sizeof(h), len);
	check_payload(h.op, shifted + 1, len, &req2, &rep2);
	free(shifted);
	FUZZ_CHECK(req == req2 && rep == rep2);
	check_pbuf(data, size);
	return 0;
}
