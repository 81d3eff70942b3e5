// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/rdma.c: RKEY, the rights of the rdma data path on a
 * version the session holds (daemon/rdma/rkey.c binds them on the
 * session's QP; rights and lifecycle in lib/common/proto/proto.h).
 */
#include <errno.h>

#include "handlers.h"
#include "rdma.h"
#include "server_priv.h"

HANDLER(hdl_rkey)
{
	const struct proto_rkey_req *r = (const void *)p;

	if (r->flags & ~RKEY_F_WRITE)
		return -EINVAL;
	return rdma_rkey(c->srv->rdma, c->srv, c->sess, r, out);
}
