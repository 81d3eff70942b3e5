/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/attr.c: the translations every namespace and file call shares: a name
 * checked against the protocol's rules before it is sent, and marud's
 * struct proto_attr turned into the public struct maru_attr.
 */
#include <errno.h>
#include <string.h>

#include "attr.h"
#include "clock.h"

int attr_name_check(const char *name, size_t *len)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, PROTO_NAME_MAX + 1);
	if (proto_name_valid(name, n))
		return proto_name_valid(name, n);
	*len = n;
	return 0;
}

size_t attr_name_req_pack(void *buf, const void *head, size_t hlen, const char *name,
			  size_t n)
{
	memcpy(buf, head, hlen);
	memcpy((char *)buf + hlen, name, n);
	return hlen + n;
}

int attr_setattr_in(const struct maru_setattr *in, struct maru_setattr *out)
{
	size_t n = in->sa_size ? in->sa_size : sizeof(*in);

	if (n < offsetof(struct maru_setattr, mask) + sizeof(in->mask))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memcpy(out, in, n < sizeof(*out) ? n : sizeof(*out));
	out->sa_size = sizeof(*out);
	return 0;
}

void attr_from_proto(const struct proto_attr *p, struct maru_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->attr_size = sizeof(*out);
	out->ino = p->ino;
	out->parent = p->parent;
	out->size = p->size;
	out->reserved = p->reserved;
	out->mode = p->mode;
	out->uid = p->uid;
	out->gid = p->gid;
	out->nlink = p->nlink;
	out->state = p->state;
	out->leases = p->leases;
	out->xxh3 = p->xxh3;
	out->rdev = p->rdev;
	ns_to_timespec(p->atime_ns, &out->atime);
	ns_to_timespec(p->mtime_ns, &out->mtime);
	ns_to_timespec(p->ctime_ns, &out->ctime);
}
