/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/file_open.c: the calls that open a struct maru_file (create, rewrite,
 * open by name, open by id): each builds its request, sends it and hands
 * the reply to file.c's file_new(), which makes the handle.
 */
#include <errno.h>
#include <sys/stat.h>

#include "attr.h"
#include "file.h"
#include "frame.h"
#include "transport.h"
#include "route.h"

static int open_call(struct maru_client *c, struct req *r, struct maru_file **out)
{
	int rc = transport_call(c, r);

	if (rc)
		return rc;
	rc = file_new(c, r, out);
	frame_req_done(r);
	return rc;
}

/* ---- opening ---- */

static uint32_t create_flags(unsigned int flags)
{
	return (flags & MARU_CREATE_EXCL ? CREATE_EXCL : 0) |
	       (flags & MARU_CREATE_COPY ? CREATE_COPY : 0);
}

int maru_file_create(struct maru_client *c, uint64_t parent, const char *name,
		     uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
		     uint64_t size_hint, struct maru_file **out)
{
	uint8_t buf[sizeof(struct proto_create_req) + PROTO_NAME_MAX];
	struct proto_create_req q = { .parent = parent, .size_hint = size_hint };
	struct req r = { .op = OP_CREATE, .p1 = buf };
	size_t n;
	int rc;

	if (!c || !out || (flags & ~(MARU_CREATE_EXCL | MARU_CREATE_COPY)))
		return -EINVAL;
	if (c->route)
		return route_file_create(c, parent, name, mode, uid, gid, flags, size_hint, out);
	rc = attr_name_check(name, &n);
	if (rc)
		return rc;
	q.flags = create_flags(flags);
	q.mode = S_IFREG | (mode & 07777);
	q.uid = uid;
	q.gid = gid;
	q.namelen = (uint16_t)n;
	r.n1 = attr_name_req_pack(buf, &q, sizeof(q), name, n);
	return open_call(c, &r, out);
}

int maru_file_rewrite(struct maru_client *c, uint64_t ino, unsigned int flags,
		      uint64_t size_hint, struct maru_file **out)
{
	struct proto_create_req q = { .from_ino = ino, .size_hint = size_hint };
	struct req r = { .op = OP_CREATE, .p1 = &q, .n1 = sizeof(q) };

	if (!c || !out || !ino || (flags & ~(MARU_CREATE_EXCL | MARU_CREATE_COPY)))
		return -EINVAL;
	if (c->route)
		return route_file_rewrite(c, ino, flags, size_hint, out);
	q.flags = create_flags(flags);
	/* mode/uid/gid 0: marud keeps those of the version being rewritten */
	return open_call(c, &r, out);
}

int maru_file_open(struct maru_client *c, uint64_t parent, const char *name,
		   struct maru_file **out)
{
	uint8_t buf[sizeof(struct proto_open_req) + PROTO_NAME_MAX];
	struct proto_open_req q = { .parent = parent };
	struct req r = { .op = OP_OPEN, .p1 = buf };
	size_t n;
	int rc;

	if (!c || !out)
		return -EINVAL;
	if (c->route)
		return route_file_open(c, parent, name, out);
	rc = attr_name_check(name, &n);
	if (rc)
		return rc;
	q.namelen = (uint16_t)n;
	r.n1 = attr_name_req_pack(buf, &q, sizeof(q), name, n);
	return open_call(c, &r, out);
}

int maru_file_open_ino(struct maru_client *c, uint64_t ino, struct maru_file **out)
{
	struct proto_open_req q = { .ino = ino };
	struct req r = { .op = OP_OPEN, .p1 = &q, .n1 = sizeof(q) };

	if (!c || !out || !ino)
		return -EINVAL;
	if (c->route)
		return route_file_open_ino(c, ino, out);
	return open_call(c, &r, out);
}
