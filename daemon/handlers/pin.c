// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/pin.c: PIN, the TTL pins of marufs-design(7) §4.3 on
 * the wire (proto.h): set, renew, clear or read the pin of one published
 * version. Unlike hints a pin is a promise with a cap, so its refusal
 * (-ENOSPC) is answered, never dropped. Any session may pin a version it
 * may read (every published one); the caps bound what that costs.
 */
#include <errno.h>
#include <string.h>

#include "handlers.h"
#include "server_priv.h"

HANDLER(hdl_pin)
{
	struct proto_pin_req q;
	struct proto_pin_rep r = { 0 };
	int rc;

	(void)h;
	(void)len;
	memcpy(&q, p, sizeof(q));
	if (q.flags & PIN_F_QUERY)
		rc = dir_pin_left(c->srv->dir, q.ino, &r.left);
	else
		rc = dir_pin(c->srv->dir, q.ino, q.seconds, 0, &r.left);
	if (rc)
		return rc;
	return proto_buf_put(out, &r, sizeof(r));
}
