/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/link.c: the calls for names that are not plain files: symlink,
 * readlink, link (hard links) and mknod (FIFOs, sockets, device nodes).
 * Each validates its names locally, encodes one request and decodes
 * marud's reply (a proto_attr, or the target bytes of READLINK).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "attr.h"
#include "frame.h"
#include "transport.h"
#include "route.h"

/* A call whose reply is exactly one proto_attr. */
static int link_attr_call(struct maru_client *c, struct req *r, struct maru_attr *out)
{
	int rc = transport_call(c, r);

	if (rc)
		return rc;
	if (r->rlen < sizeof(struct proto_attr))
		rc = -EIO;
	else if (out)
		attr_from_proto(r->rep, out);
	frame_req_done(r);
	return rc;
}

int maru_symlink(struct maru_client *c, uint64_t parent, const char *name,
		 const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	uint8_t buf[sizeof(struct proto_symlink_req) + PROTO_NAME_MAX + PROTO_PATH_MAX];
	struct proto_symlink_req q = { .parent = parent, .uid = uid, .gid = gid };
	struct req r = { .op = OP_SYMLINK, .p1 = buf };
	size_t n, t;
	int rc;

	if (!c || !target)
		return -EINVAL;
	if (c->route)
		return route_symlink(c, parent, name, target, uid, gid, out);
	rc = attr_name_check(name, &n);
	if (rc)
		return rc;
	t = strnlen(target, PROTO_PATH_MAX);
	if (t == 0)
		return -ENOENT;		/* symlink(2) on an empty target */
	if (t >= PROTO_PATH_MAX)
		return -ENAMETOOLONG;
	q.namelen = (uint16_t)n;
	q.targetlen = (uint16_t)t;
	r.n1 = attr_name_req_pack(buf, &q, sizeof(q), name, n);
	memcpy(buf + r.n1, target, t);
	r.n1 += t;
	return link_attr_call(c, &r, out);
}

int maru_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size)
{
	struct proto_ino_req q = { .ino = ino };
	struct req r = { .op = OP_READLINK, .p1 = &q, .n1 = sizeof(q) };
	int rc;

	if (!c || !buf)
		return -EINVAL;
	if (c->route)
		return route_readlink(c, ino, buf, size);
	rc = transport_call(c, &r);
	if (rc)
		return rc;
	if (r.rlen >= size) {
		rc = -ERANGE;
	} else {
		memcpy(buf, r.rep, r.rlen);
		buf[r.rlen] = '\0';
		rc = (int)r.rlen;
	}
	frame_req_done(&r);
	return rc;
}

int maru_link(struct maru_client *c, uint64_t ino, uint64_t newparent,
	      const char *newname, struct maru_attr *out)
{
	uint8_t buf[sizeof(struct proto_link_req) + PROTO_NAME_MAX];
	struct proto_link_req q = { .ino = ino, .newparent = newparent };
	struct req r = { .op = OP_LINK, .p1 = buf };
	size_t n;
	int rc;

	if (!c)
		return -EINVAL;
	if (c->route)
		return route_link(c, ino, newparent, newname, out);
	rc = attr_name_check(newname, &n);
	if (rc)
		return rc;
	q.namelen = (uint16_t)n;
	r.n1 = attr_name_req_pack(buf, &q, sizeof(q), newname, n);
	return link_attr_call(c, &r, out);
}

int maru_mknod(struct maru_client *c, uint64_t parent, const char *name,
	       uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
	       struct maru_attr *out)
{
	uint8_t buf[sizeof(struct proto_mknod_req) + PROTO_NAME_MAX];
	struct proto_mknod_req q = { .parent = parent, .mode = mode, .uid = uid,
				     .gid = gid, .rdev = rdev };
	struct req r = { .op = OP_MKNOD, .p1 = buf };
	size_t n;
	int rc;

	if (!c || !(S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISCHR(mode) || S_ISBLK(mode)))
		return -EINVAL;
	if (c->route)
		return route_mknod(c, parent, name, mode, rdev, uid, gid, out);
	rc = attr_name_check(name, &n);
	if (rc)
		return rc;
	q.namelen = (uint16_t)n;
	r.n1 = attr_name_req_pack(buf, &q, sizeof(q), name, n);
	return link_attr_call(c, &r, out);
}
