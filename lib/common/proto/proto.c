/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/proto/proto.c: the codec of the marud wire protocol (message sequence and
 * layouts in proto.h): header fill and checks, per-op payload validation for
 * requests (run by marud on every frame) and for replies (run by libmaru),
 * the growable frame buffer, and sending a frame (sockio.c moves the
 * bytes). The checks read a
 * field only after the length proves it is there, and copy fields out with
 * memcpy so a payload at any alignment is safe. Framing violations return
 * -EPROTO (the receiver closes the connection); a well-framed request that
 * names an invalid entry returns -EINVAL (the receiver may just answer it).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "proto.h"
#include "sockio.h"

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

static const char *const op_names[OP_MAX] = {
	[OP_PING] = "PING", [OP_HELLO] = "HELLO", [OP_AUTH] = "AUTH",
	[OP_STATFS] = "STATFS", [OP_STATS] = "STATS", [OP_MKDIR] = "MKDIR",
	[OP_RMDIR] = "RMDIR", [OP_LOOKUP] = "LOOKUP", [OP_GETATTR] = "GETATTR",
	[OP_SETATTR] = "SETATTR", [OP_RENAME] = "RENAME", [OP_UNLINK] = "UNLINK",
	[OP_READDIR] = "READDIR", [OP_EXISTS] = "EXISTS", [OP_CREATE] = "CREATE",
	[OP_RESERVE] = "RESERVE", [OP_TRUNCATE] = "TRUNCATE",
	[OP_PUBLISH] = "PUBLISH", [OP_ABANDON] = "ABANDON", [OP_OPEN] = "OPEN",
	[OP_RELEASE] = "RELEASE", [OP_EXTENTS] = "EXTENTS", [OP_READ] = "READ",
	[OP_WRITE] = "WRITE", [OP_HINT] = "HINT", [OP_SUBSCRIBE] = "SUBSCRIBE",
	[OP_EVENT] = "EVENT", [OP_EVENT_ACK] = "EVENT_ACK", [OP_RKEY] = "RKEY",
	[OP_SYMLINK] = "SYMLINK", [OP_READLINK] = "READLINK", [OP_LINK] = "LINK",
	[OP_MKNOD] = "MKNOD",
	[OP_HINTV] = "HINTV", [OP_HINT_WAIT] = "HINT_WAIT", [OP_PIN] = "PIN",
};

const char *proto_op_name(uint16_t op)
{
	if (op < OP_MAX && op_names[op])
		return op_names[op];
	return "UNKNOWN";
}

static bool op_known(uint16_t op)
{
	return op < OP_MAX && op_names[op] != NULL;
}

void proto_hdr_init(struct proto_hdr *h, uint16_t op, uint32_t len,
		    uint64_t reqid, uint64_t generation, int32_t status)
{
	h->magic = PROTO_MAGIC;
	h->version = PROTO_VERSION;
	h->op = op;
	h->len = len;
	h->status = status;
	h->reqid = reqid;
	h->generation = generation;
}

int proto_hdr_check(const struct proto_hdr *h, uint32_t max_frame)
{
	if (h->magic != PROTO_MAGIC || h->version != PROTO_VERSION)
		return -EPROTO;
	if (!op_known(h->op))
		return -EPROTO;
	if (h->len > max_frame)
		return -EMSGSIZE;
	return 0;
}

int proto_name_valid(const char *name, size_t len)
{
	if (!name || len == 0)
		return -EINVAL;
	if (len > PROTO_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EINVAL;
	return 0;
}

/* ---- request checks ---- */

/* Body of exactly `size` bytes and nothing after it. */
static int check_fixed(uint32_t len, size_t size)
{
	return len == size ? 0 : -EPROTO;
}

static int check_name_req(const uint8_t *p, uint32_t len)
{
	struct proto_name_req r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.namelen)
		return -EPROTO;
	return proto_name_valid((const char *)p + sizeof(r), r.namelen);
}

static int check_rename_req(const uint8_t *p, uint32_t len)
{
	const char *names = (const char *)p + sizeof(struct proto_rename_req);
	struct proto_rename_req r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.oldlen + r.newlen)
		return -EPROTO;
	if (r.flags & ~PROTO_RENAME_NOREPLACE)
		return -EINVAL;
	if (proto_name_valid(names, r.oldlen))
		return proto_name_valid(names, r.oldlen);
	return proto_name_valid(names + r.oldlen, r.newlen);
}

static int check_symlink_req(const uint8_t *p, uint32_t len)
{
	const char *name = (const char *)p + sizeof(struct proto_symlink_req);
	struct proto_symlink_req r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.namelen + r.targetlen)
		return -EPROTO;
	if (r.targetlen == 0 || memchr(name + r.namelen, '\0', r.targetlen))
		return -EINVAL;
	if (r.targetlen >= PROTO_PATH_MAX)
		return -ENAMETOOLONG;
	return proto_name_valid(name, r.namelen);
}

static int check_link_req(const uint8_t *p, uint32_t len)
{
	struct proto_link_req r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.namelen)
		return -EPROTO;
	return proto_name_valid((const char *)p + sizeof(r), r.namelen);
}

static int check_mknod_req(const uint8_t *p, uint32_t len)
{
	struct proto_mknod_req r;
	uint32_t t;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.namelen)
		return -EPROTO;
	t = r.mode & 0170000;
	/* FIFO, character device, block device, socket */
	if (t != 0010000 && t != 0020000 && t != 0060000 && t != 0140000)
		return -EINVAL;
	return proto_name_valid((const char *)p + sizeof(r), r.namelen);
}

static int check_readdir_req(const uint8_t *p, uint32_t len)
{
	struct proto_readdir_req r;

	if (len != sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	return r.max_entries >= 1 ? 0 : -EPROTO;
}

/* count names, each u16 length + bytes, filling the payload exactly. */
static int check_exists_req(const uint8_t *p, uint32_t len)
{
	struct proto_exists_req r;
	size_t off = sizeof(r);
	uint32_t i;
	int bad = 0;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	/* each name takes at least 2 bytes: bounds the loop before reading */
	if (r.count > (len - sizeof(r)) / 2)
		return -EPROTO;
	for (i = 0; i < r.count; i++) {
		uint16_t n;

		if (len - off < sizeof(n))
			return -EPROTO;
		memcpy(&n, p + off, sizeof(n));
		off += sizeof(n);
		if (len - off < n)
			return -EPROTO;
		if (proto_name_valid((const char *)p + off, n))
			bad = proto_name_valid((const char *)p + off, n);
		off += n;
	}
	if (off != len)
		return -EPROTO;
	return bad;
}

static int check_create_req(const uint8_t *p, uint32_t len)
{
	struct proto_create_req r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.namelen)
		return -EPROTO;
	if (r.flags & ~(CREATE_EXCL | CREATE_COPY))
		return -EINVAL;
	/* parent 0: the new version takes from_ino's name, none is sent */
	if (r.parent == 0)
		return r.namelen == 0 && r.from_ino != 0 ? 0 : -EINVAL;
	return proto_name_valid((const char *)p + sizeof(r), r.namelen);
}

static int check_open_req(const uint8_t *p, uint32_t len)
{
	struct proto_open_req r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (len != sizeof(r) + (size_t)r.namelen)
		return -EPROTO;
	/* by ino the name is optional; by name it must be valid */
	if (r.ino != 0 && r.namelen == 0)
		return 0;
	return proto_name_valid((const char *)p + sizeof(r), r.namelen);
}

static int check_pin_req(const uint8_t *p, uint32_t len)
{
	struct proto_pin_req r;

	if (len != sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (r.flags & ~PIN_F_QUERY)
		return -EINVAL;
	return (r.flags & PIN_F_QUERY) && r.seconds ? -EINVAL : 0;
}

/* Body, request id (padded to 8) and exactly count ranges. */
static int check_hintv_req(uint16_t op, const uint8_t *p, uint32_t len)
{
	struct proto_hintv_req r;
	size_t want;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (r.count > PROTO_MAX_HINT_RANGES || r.reqlen > PROTO_HINT_REQ_MAX)
		return -EPROTO;
	want = sizeof(r) + ALIGN8(r.reqlen) + (size_t)r.count * sizeof(struct proto_hint_range);
	if (len != want)
		return -EPROTO;
	if (r.reqlen && memchr(p + sizeof(r), '\0', r.reqlen))
		return -EINVAL;
	if (op == OP_HINT_WAIT) {
		if (r.action != HINT_A_READ_WAIT && r.action != HINT_A_WRITE_WAIT)
			return -EINVAL;
		return r.timeout_ms >= 1 && r.timeout_ms <= 10000 ? 0 : -EINVAL;
	}
	if (r.action < HINT_A_READ || r.action > HINT_A_WRITE || r.timeout_ms)
		return -EINVAL;
	return 0;
}

static int check_io_req(uint16_t op, const uint8_t *p, uint32_t len)
{
	struct proto_io_req r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (r.len > PROTO_MAX_IO)
		return -EPROTO;
	if (op == OP_WRITE)
		return len == sizeof(r) + (size_t)r.len ? 0 : -EPROTO;
	return check_fixed(len, sizeof(r));
}

int proto_req_check(uint16_t op, const void *payload, uint32_t len)
{
	const uint8_t *p = payload;

	if (len > 0 && !p)
		return -EPROTO;
	switch (op) {
	case OP_PING:
	case OP_STATFS:
	case OP_STATS:
		return check_fixed(len, 0);
	case OP_HELLO:
		return check_fixed(len, sizeof(struct proto_hello_req));
	case OP_AUTH:
		if (len == sizeof(struct proto_auth_named))
			return 0;
		return check_fixed(len, sizeof(struct proto_auth));
	case OP_MKDIR:
	case OP_RMDIR:
	case OP_LOOKUP:
	case OP_UNLINK:
		return check_name_req(p, len);
	case OP_GETATTR:
	case OP_ABANDON:
	case OP_RELEASE:
	case OP_EXTENTS:
	case OP_READLINK:
		return check_fixed(len, sizeof(struct proto_ino_req));
	case OP_SYMLINK:
		return check_symlink_req(p, len);
	case OP_LINK:
		return check_link_req(p, len);
	case OP_MKNOD:
		return check_mknod_req(p, len);
	case OP_SETATTR:
		return check_fixed(len, sizeof(struct proto_setattr_req));
	case OP_RENAME:
		return check_rename_req(p, len);
	case OP_READDIR:
		return check_readdir_req(p, len);
	case OP_EXISTS:
		return check_exists_req(p, len);
	case OP_CREATE:
		return check_create_req(p, len);
	case OP_RESERVE:
	case OP_TRUNCATE:
		return check_fixed(len, sizeof(struct proto_size_req));
	case OP_PUBLISH:
		return check_fixed(len, sizeof(struct proto_publish_req));
	case OP_OPEN:
		return check_open_req(p, len);
	case OP_READ:
	case OP_WRITE:
		return check_io_req(op, p, len);
	case OP_HINT:
		return check_fixed(len, sizeof(struct proto_hint_req));
	case OP_HINTV:
	case OP_HINT_WAIT:
		return check_hintv_req(op, p, len);
	case OP_SUBSCRIBE:
		return check_fixed(len, sizeof(struct proto_subscribe_req));
	case OP_EVENT_ACK:
		return check_fixed(len, sizeof(struct proto_ack_req));
	case OP_RKEY:
		return check_fixed(len, sizeof(struct proto_rkey_req));
	case OP_PIN:
		return check_pin_req(p, len);
	default:
		/* EVENT is pushed by marud, never sent to it */
		return -EPROTO;
	}
}

/* ---- reply checks ---- */

static int check_hello_rep(const uint8_t *p, uint32_t len)
{
	const struct proto_hello_rep *r = (const void *)p;

	if (len != sizeof(*r))
		return -EPROTO;
	if (!memchr(p + offsetof(struct proto_hello_rep, pool_path), '\0',
		    sizeof(r->pool_path)))
		return -EPROTO;
	return 0;
}

/*
 * proto_attr then nextents extents. Ops that hand out extents must send all
 * of them; the others may send the attr alone.
 */
static int check_attr_rep(const uint8_t *p, uint32_t len, bool extents)
{
	struct proto_attr a;

	if (len < sizeof(a))
		return -EPROTO;
	memcpy(&a, p, sizeof(a));
	if (a.nextents > PROTO_MAX_EXTENTS)
		return -EPROTO;
	if (len == sizeof(a) + (size_t)a.nextents * sizeof(struct proto_extent))
		return 0;
	return !extents && len == sizeof(a) ? 0 : -EPROTO;
}

/* One attr (and its extents), or with HELLO_F_DIRATTR two attrs: the version's, the directory's. */
static int check_publish_rep(const uint8_t *p, uint32_t len)
{
	struct proto_attr a, d;

	if (len == 2 * sizeof(a)) {
		memcpy(&a, p, sizeof(a));
		memcpy(&d, p + sizeof(a), sizeof(d));
		if (a.nextents == 0 && d.nextents == 0)
			return 0;
	}
	return check_attr_rep(p, len, false);
}

/* count dirents, each 8-aligned; the last one's padding may be left off. */
static int check_readdir_rep(const uint8_t *p, uint32_t len)
{
	struct proto_readdir_rep r;
	size_t off = sizeof(r);
	uint32_t i;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (r.count > (len - sizeof(r)) / sizeof(struct proto_dirent))
		return -EPROTO;
	for (i = 0; i < r.count; i++) {
		struct proto_dirent d;

		if (off >= len || len - off < sizeof(d))
			return -EPROTO;
		memcpy(&d, p + off, sizeof(d));
		off += sizeof(d);
		if (len - off < d.namelen)
			return -EPROTO;
		if (proto_name_valid((const char *)p + off, d.namelen))
			return -EPROTO;
		off = ALIGN8(off + d.namelen);
	}
	return off >= len && ALIGN8(len) == off ? 0 : -EPROTO;
}

static int check_exists_rep(const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] > 1)
			return -EPROTO;
	return 0;
}

/* A path from the root: below PROTO_PATH_MAX, no NUL inside. */
static bool event_path_ok(const uint8_t *s, uint16_t n)
{
	return n < PROTO_PATH_MAX && !memchr(s, '\0', n);
}

static int check_event(const uint8_t *p, uint32_t len)
{
	struct proto_event e;
	const uint8_t *s = p + sizeof(e);

	if (len < sizeof(e))
		return -EPROTO;
	memcpy(&e, p, sizeof(e));
	if (len != sizeof(e) + (size_t)e.namelen + e.name2len + e.pathlen + e.path2len)
		return -EPROTO;
	/* OVERFLOW and GENERATION carry no names */
	if (e.namelen && proto_name_valid((const char *)s, e.namelen))
		return -EPROTO;
	s += e.namelen;
	if (e.name2len && proto_name_valid((const char *)s, e.name2len))
		return -EPROTO;
	s += e.name2len;
	if (!event_path_ok(s, e.pathlen) || !event_path_ok(s + e.pathlen, e.path2len))
		return -EPROTO;
	return 0;
}

static int check_rkey_rep(const uint8_t *p, uint32_t len)
{
	struct proto_rkey_rep r;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, p, sizeof(r));
	if (r.count > PROTO_MAX_EXTENTS)
		return -EPROTO;
	return len == sizeof(r) + (size_t)r.count * sizeof(struct proto_rkey) ? 0 : -EPROTO;
}

int proto_rep_check(uint16_t op, const void *payload, uint32_t len)
{
	const uint8_t *p = payload;

	if (len > 0 && !p)
		return -EPROTO;
	switch (op) {
	case OP_RENAME:
		return check_fixed(len, sizeof(struct proto_rename_rep));
	case OP_READLINK:
		return len >= 1 && len < PROTO_PATH_MAX ? 0 : -EPROTO;
	case OP_PING:
	case OP_RMDIR:
	case OP_UNLINK:
	case OP_ABANDON:
	case OP_RELEASE:
	case OP_HINT:
	case OP_HINTV:
	case OP_SUBSCRIBE:
		return check_fixed(len, 0);
	case OP_HINT_WAIT:
		return check_fixed(len, sizeof(struct proto_hint_wait_rep));
	case OP_PIN:
		return check_fixed(len, sizeof(struct proto_pin_rep));
	case OP_HELLO:
		return check_hello_rep(p, len);
	case OP_AUTH:
		/* the last step of the exchange answers with status alone */
		return len == 0 ? 0 : check_fixed(len, sizeof(struct proto_auth));
	case OP_STATFS:
		return check_fixed(len, sizeof(struct proto_statfs));
	case OP_STATS:
		return 0;
	case OP_MKDIR:
	case OP_LOOKUP:
	case OP_PUBLISH:
		return check_publish_rep(p, len);
	case OP_GETATTR:
	case OP_SETATTR:
	case OP_SYMLINK:
	case OP_LINK:
	case OP_MKNOD:
		return check_attr_rep(p, len, false);
	case OP_CREATE:
	case OP_RESERVE:
	case OP_TRUNCATE:
	case OP_OPEN:
	case OP_EXTENTS:
		return check_attr_rep(p, len, true);
	case OP_READDIR:
		return check_readdir_rep(p, len);
	case OP_EXISTS:
		return check_exists_rep(p, len);
	case OP_READ:
		return len <= PROTO_MAX_IO ? 0 : -EPROTO;
	case OP_WRITE:
		return check_fixed(len, sizeof(struct proto_io_rep));
	case OP_EVENT:
		return check_event(p, len);
	case OP_RKEY:
		return check_rkey_rep(p, len);
	default:
		return -EPROTO;
	}
}

/* ---- frame buffer ---- */

int proto_buf_reserve(struct pbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *n;

	if (more > SIZE_MAX - b->len)
		return -ENOMEM;
	if (b->len + more <= b->cap)
		return 0;
	while (cap < b->len + more) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	n = realloc(b->data, cap);
	if (!n)
		return -ENOMEM;
	b->data = n;
	b->cap = cap;
	return 0;
}

int proto_buf_put(struct pbuf *b, const void *p, size_t n)
{
	int rc;

	if (n == 0)
		return 0;
	rc = proto_buf_reserve(b, n);
	if (rc)
		return rc;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int proto_buf_align8(struct pbuf *b)
{
	static const uint8_t zeros[8];

	return proto_buf_put(b, zeros, ALIGN8(b->len) - b->len);
}

void proto_buf_free(struct pbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

/* ---- sending a frame ---- */

int proto_send(int fd, const struct proto_hdr *h, const void *p1, size_t n1,
	       const void *p2, size_t n2)
{
	struct iovec iov[3];
	int cnt = 0;

	iov[cnt++] = (struct iovec){ .iov_base = (void *)h, .iov_len = sizeof(*h) };
	if (n1)
		iov[cnt++] = (struct iovec){ .iov_base = (void *)p1, .iov_len = n1 };
	if (n2)
		iov[cnt++] = (struct iovec){ .iov_base = (void *)p2, .iov_len = n2 };
	return sock_writev_all(fd, iov, cnt);
}
