/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/ns.c: namespace calls (mkdir, rmdir, lookup, getattr, setattr, rename,
 * unlink, readdir, exists). Each validates names locally, encodes one
 * request and decodes marud's reply; readdir and exists stream in batches.
 *
 * Sizes of pending versions: in shm mode a writer stores bytes straight into
 * pool memory and tells marud the size only at PUBLISH, so maru_lookup() and
 * maru_getattr() of this client's own pending version return marud's idea
 * of the size (what was reserved/truncated/written over TCP), which can lag.
 * libmaru cannot fix that for other processes; marufs must overlay the size
 * of its open pending handles (maru_file_attr() gives the handle's size).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attr.h"
#include "frame.h"
#include "transport.h"
#include "route.h"

#define READDIR_BATCH	1024
#define EXISTS_BATCH	4096

/* A call whose reply is a proto_attr (extents, if any, ignored). */
static int attr_call(struct maru_client *c, struct req *r, struct maru_attr *out)
{
	int rc = transport_call(c, r);

	if (rc)
		return rc;
	if (r->rlen < sizeof(struct proto_attr)) {
		frame_req_done(r);
		return -EIO;
	}
	if (out)
		attr_from_proto(r->rep, out);
	frame_req_done(r);
	return 0;
}

/* OP_MKDIR, OP_RMDIR, OP_LOOKUP, OP_UNLINK: proto_name_req + name. */
static int name_call(struct maru_client *c, uint16_t op, uint64_t parent, const char *name,
		     const uint32_t ids[3], struct maru_attr *out)
{
	uint8_t buf[sizeof(struct proto_name_req) + PROTO_NAME_MAX];
	struct proto_name_req q = { .parent = parent };
	struct req r = { .op = op, .p1 = buf };
	size_t n;
	int rc;

	if (!c)
		return -EINVAL;
	rc = attr_name_check(name, &n);
	if (rc)
		return rc;
	if (ids) {
		q.mode = ids[0];
		q.uid = ids[1];
		q.gid = ids[2];
	}
	q.namelen = (uint16_t)n;
	r.n1 = attr_name_req_pack(buf, &q, sizeof(q), name, n);
	if (op == OP_MKDIR || op == OP_LOOKUP)
		return attr_call(c, &r, out);
	rc = transport_call(c, &r);
	frame_req_done(&r);
	return rc;
}

int maru_mkdir(struct maru_client *c, uint64_t parent, const char *name,
	       uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	const uint32_t ids[3] = { S_IFDIR | (mode & 07777), uid, gid };

	if (c && c->route)
		return route_mkdir(c, parent, name, mode, uid, gid, out);

	return name_call(c, OP_MKDIR, parent, name, ids, out);
}

int maru_rmdir(struct maru_client *c, uint64_t parent, const char *name)
{
	if (c && c->route)
		return route_rmdir(c, parent, name);
	return name_call(c, OP_RMDIR, parent, name, NULL, NULL);
}

int maru_lookup(struct maru_client *c, uint64_t parent, const char *name,
		struct maru_attr *out)
{
	if (c && c->route)
		return route_lookup(c, parent, name, out);
	return name_call(c, OP_LOOKUP, parent, name, NULL, out);
}

int maru_unlink(struct maru_client *c, uint64_t parent, const char *name)
{
	if (c && c->route)
		return route_unlink(c, parent, name);
	return name_call(c, OP_UNLINK, parent, name, NULL, NULL);
}

int maru_getattr(struct maru_client *c, uint64_t ino, struct maru_attr *out)
{
	struct proto_ino_req q = { .ino = ino };
	struct req r = { .op = OP_GETATTR, .p1 = &q, .n1 = sizeof(q) };

	if (!c)
		return -EINVAL;
	if (c->route)
		return route_getattr(c, ino, out);
	return attr_call(c, &r, out);
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

int maru_setattr(struct maru_client *c, uint64_t ino,
		 const struct maru_setattr *in, struct maru_attr *out)
{
	struct proto_setattr_req q = { .ino = ino };
	struct req r = { .op = OP_SETATTR, .p1 = &q, .n1 = sizeof(q) };
	uint64_t now = now_ns();
	struct maru_setattr s, *sa = &s;

	if (!c || !in || attr_setattr_in(in, &s))
		return -EINVAL;
	if (c->route)
		return route_setattr(c, ino, in, out);
	q.mask = (sa->mask & MARU_SET_MODE ? SETATTR_MODE : 0) |
		 (sa->mask & MARU_SET_UID ? SETATTR_UID : 0) |
		 (sa->mask & MARU_SET_GID ? SETATTR_GID : 0);
	q.mode = sa->mode & 07777;
	q.uid = sa->uid;
	q.gid = sa->gid;
	/* marud stores times; "now" is resolved here, on the caller's clock */
	if (sa->mask & (MARU_SET_ATIME | MARU_SET_ATIME_NOW)) {
		q.mask |= SETATTR_ATIME;
		q.atime_ns = sa->mask & MARU_SET_ATIME_NOW ? now : ts_ns(&sa->atime);
	}
	if (sa->mask & (MARU_SET_MTIME | MARU_SET_MTIME_NOW)) {
		q.mask |= SETATTR_MTIME;
		q.mtime_ns = sa->mask & MARU_SET_MTIME_NOW ? now : ts_ns(&sa->mtime);
	}
	return attr_call(c, &r, out);
}

int maru_rename(struct maru_client *c, uint64_t oldparent, const char *oldname,
		uint64_t newparent, const char *newname, unsigned int flags)
{
	return maru_rename_seq(c, oldparent, oldname, newparent, newname, flags, NULL);
}

int maru_rename_seq(struct maru_client *c, uint64_t oldparent, const char *oldname,
		    uint64_t newparent, const char *newname, unsigned int flags,
		    uint64_t *event_seq)
{
	struct proto_rename_rep rep = { 0 };
	uint8_t buf[sizeof(struct proto_rename_req) + 2 * PROTO_NAME_MAX];
	struct proto_rename_req q = { .oldparent = oldparent, .newparent = newparent };
	struct req r = { .op = OP_RENAME, .p1 = buf };
	size_t on, nn;
	int rc;

	if (event_seq)
		*event_seq = 0;
	if (!c || (flags & ~MARU_RENAME_NOREPLACE))
		return -EINVAL;
	if (c->route)
		return route_rename_seq(c, oldparent, oldname, newparent, newname, flags,
					event_seq);
	rc = attr_name_check(oldname, &on);
	if (!rc)
		rc = attr_name_check(newname, &nn);
	if (rc)
		return rc;
	q.flags = flags & MARU_RENAME_NOREPLACE ? PROTO_RENAME_NOREPLACE : 0;
	q.oldlen = (uint16_t)on;
	q.newlen = (uint16_t)nn;
	r.n1 = attr_name_req_pack(buf, &q, sizeof(q), oldname, on);
	memcpy(buf + r.n1, newname, nn);
	r.n1 += nn;
	rc = transport_call(c, &r);
	if (!rc && r.rlen == sizeof(rep))
		memcpy(&rep, r.rep, sizeof(rep));
	frame_req_done(&r);
	if (!rc && event_seq)
		*event_seq = rep.seq;
	return rc;
}

/* ---- readdir ---- */

/*
 * Walk one batch. Returns 1 when the callback asked to stop, 0 to go on,
 * -EIO on a malformed batch. *cookie advances to the last entry seen.
 */
static int readdir_batch(const uint8_t *p, uint32_t len, maru_readdir_cb cb, void *arg,
			 uint64_t *cookie, uint32_t *count)
{
	const struct proto_readdir_rep *rep = (const void *)p;
	size_t off = sizeof(*rep);
	uint32_t i;

	*count = rep->count;
	for (i = 0; i < rep->count; i++) {
		struct proto_dirent d;
		struct maru_dirent de;

		if (off + sizeof(d) > len)
			return -EIO;
		memcpy(&d, p + off, sizeof(d));
		off += sizeof(d);
		if (d.namelen == 0 || d.namelen > PROTO_NAME_MAX || off + d.namelen > len)
			return -EIO;
		de.ino = d.ino;
		de.cookie = d.cookie;
		de.mode = d.mode;
		de.state = d.state;
		de.namelen = d.namelen;
		de.name = (const char *)p + off;
		off = (off + d.namelen + 7) & ~(size_t)7;
		*cookie = d.cookie;
		if (cb(arg, &de))
			return 1;
	}
	return 0;
}

int maru_readdir(struct maru_client *c, uint64_t dir, uint64_t cookie,
		 maru_readdir_cb cb, void *arg)
{
	struct proto_readdir_req q = { .dir = dir, .max_entries = READDIR_BATCH };
	struct req r = { .op = OP_READDIR, .p1 = &q, .n1 = sizeof(q) };
	uint32_t count, eof;
	int rc;

	if (!c || !cb)
		return -EINVAL;
	if (c->route)
		return route_readdir(c, dir, cookie, cb, arg);
	do {
		q.cookie = cookie;
		rc = transport_call(c, &r);
		if (rc)
			return rc;
		if (r.rlen < sizeof(struct proto_readdir_rep)) {
			frame_req_done(&r);
			return -EIO;
		}
		eof = ((const struct proto_readdir_rep *)r.rep)->eof;
		rc = readdir_batch(r.rep, r.rlen, cb, arg, &cookie, &count);
		frame_req_done(&r);
	} while (rc == 0 && !eof && count > 0);
	return rc < 0 ? rc : 0;
}

/* ---- exists ---- */

static int exists_batch(struct maru_client *c, uint64_t parent, const char *const *names,
			size_t n, uint8_t *out)
{
	struct proto_exists_req q = { .parent = parent, .count = (uint32_t)n };
	struct pbuf b = { 0 };
	struct req r = { .op = OP_EXISTS, .rbuf = out, .rcap = n };
	size_t i, len;
	uint16_t l16;
	int rc;

	rc = proto_buf_put(&b, &q, sizeof(q));
	for (i = 0; i < n && !rc; i++) {
		rc = attr_name_check(names[i], &len);
		l16 = (uint16_t)len;
		if (!rc)
			rc = proto_buf_put(&b, &l16, sizeof(l16));
		if (!rc)
			rc = proto_buf_put(&b, names[i], len);
	}
	if (rc)
		goto out;
	r.p1 = b.data;
	r.n1 = b.len;
	rc = transport_call(c, &r);
	if (!rc && r.rlen != n)
		rc = -EIO;
	frame_req_done(&r);
out:
	proto_buf_free(&b);
	return rc;
}

int maru_exists(struct maru_client *c, uint64_t parent, const char *const *names,
		size_t n, uint8_t *out)
{
	size_t i, k;
	int rc;

	if (!c || (n && (!names || !out)))
		return -EINVAL;
	if (c->route)
		return route_exists(c, parent, names, n, out);
	for (i = 0; i < n; i += k) {
		k = n - i < EXISTS_BATCH ? n - i : EXISTS_BATCH;
		rc = exists_batch(c, parent, names + i, k, out + i);
		if (rc)
			return rc;
	}
	return 0;
}
