// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/pin.c: PIN, the TTL pins of marufs-design(7) §4.3 on
 * the wire (proto.h): set, renew, clear or read the pin of one published
 * version. Unlike hints a pin is a promise with a cap, so its refusal
 * (-ENOSPC) is answered, never dropped. Any session may pin a version it
 * may read (every published one; a scoped session only inside its root,
 * which confine.c checks before this runs); the caps bound what that
 * costs. A tenant's pins also count against its own cap
 * (pin-tenant-max-bytes, never more than its quota); a read-only tenant
 * may read a pin but not set one (-EROFS, as for its other changes).
 */
#include <errno.h>
#include <string.h>

#include "conf.h"
#include "handlers.h"
#include "server_priv.h"

/* The cap of tn's pinned bytes: pin-tenant-max-bytes, at most its quota. */
static uint64_t tenant_pin_cap(const struct server *srv, struct tenant *tn)
{
	uint64_t quota = atomic_load(&tn->quota), cap = srv->cfg.pin_tenant_max_bytes;

	if (cap == CONFIG_PIN_BYTES_HALF)
		return quota / 2;	/* no quota: 0, no cap of its own */
	if (quota && (cap == 0 || cap > quota))
		return quota;
	return cap;
}

HANDLER(hdl_pin)
{
	struct tenant *tn = c->tenant;
	struct proto_pin_req q;
	struct proto_pin_rep r = { 0 };
	uint64_t cap;
	int rc;

	(void)h;
	(void)len;
	memcpy(&q, p, sizeof(q));
	if (q.flags & PIN_F_QUERY) {
		rc = dir_pin_left(c->srv->dir, q.ino, &r.left);
	} else if (tn && tenant_ro(tn)) {
		rc = -EROFS;
	} else {
		if (tn) {
			cap = tenant_pin_cap(c->srv, tn);
			/* a tenant's cap of 0 bytes with a quota set: none may pin */
			rc = dir_pin_tenant_cap(c->srv->dir, tn->root, cap);
			if (rc == 0 && q.seconds && cap == 0 && c->srv->cfg.pin_tenant_max_bytes == 0)
				rc = -ENOSPC;
			if (rc)
				return rc;
		}
		rc = dir_pin(c->srv->dir, q.ino, q.seconds, tn ? tn->root : 0, &r.left);
	}
	if (rc)
		return rc;
	return proto_buf_put(out, &r, sizeof(r));
}
