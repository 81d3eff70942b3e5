// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/pin.c: maru_pin_set() and maru_pin_get(), TTL pins on a published
 * version (marufs-design(7) §4.3): one PIN request each. A pin is not a
 * hint: marud answers whether it holds (-ENOSPC over a cap), so the
 * caller learns it.
 */
#include <errno.h>
#include <string.h>

#include "frame.h"
#include "maru/libmaru.h"
#include "proto.h"
#include "transport.h"
#include "route.h"

static int pin_call(struct maru_client *c, uint64_t ino, uint32_t seconds, uint32_t flags)
{
	struct proto_pin_req q = { .ino = ino, .seconds = seconds, .flags = flags };
	struct req r = { .op = OP_PIN, .p1 = &q, .n1 = sizeof(q) };
	struct proto_pin_rep rep;
	int rc;

	if (!c || !ino)
		return -EINVAL;
	if (c->route)
		return route_pin(c, ino, seconds, flags == PIN_F_QUERY);
	rc = transport_call(c, &r);
	if (rc)
		return rc;
	if (r.rlen != sizeof(rep)) {
		rc = -EIO;
	} else {
		memcpy(&rep, r.rep, sizeof(rep));
		rc = rep.left > INT32_MAX ? INT32_MAX : (int)rep.left;
	}
	frame_req_done(&r);
	return rc;
}

int maru_pin_set(struct maru_client *c, uint64_t ino, uint32_t seconds)
{
	return pin_call(c, ino, seconds, 0);
}

int maru_pin_get(struct maru_client *c, uint64_t ino)
{
	return pin_call(c, ino, 0, PIN_F_QUERY);
}
