// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/wire.c: a connection's socket. It is the only place marud's server
 * moves bytes over a client socket (through lib/common/sockio.h, the one
 * copy of whole-buffer socket I/O that daemon and library share), builds
 * the reply header every answer carries, and gives the close verdict on a
 * protocol violation. It takes no lock: a connection's socket is used by its
 * own thread, except a subscriber's, whose writers subscribe.c serializes.
 */
#include <stdint.h>
#include <sys/uio.h>

#include "log.h"
#include "proto.h"
#include "server_priv.h"
#include "sockio.h"
#include "wire.h"

int wire_sendv(struct conn *c, struct iovec *iov, int cnt)
{
	return sock_writev_all(c->fd, iov, cnt);
}

int wire_recvv(struct conn *c, struct iovec *iov, int cnt)
{
	return sock_readv_all(c->fd, iov, cnt);
}

int wire_recv(struct conn *c, void *buf, size_t len)
{
	return sock_read_full(c->fd, buf, len);
}

int wire_reply(struct conn *c, const struct proto_hdr *req, int32_t status,
	       const void *p, size_t n)
{
	struct proto_hdr h;
	struct iovec iov[2];

	if (status)
		n = 0;
	proto_hdr_init(&h, req->op, (uint32_t)n, req->reqid, c->srv->generation, status);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	iov[1].iov_base = (void *)p;
	iov[1].iov_len = n;
	return sock_writev_all(c->fd, iov, n ? 2 : 1);
}

int wire_skip_unread(struct conn *c)
{
	int rc = 0;

	if (c->unread)
		rc = sock_drain(c->fd, c->unread);
	if (!rc)
		c->unread = 0;
	return rc;
}

void wire_violation(struct conn *c, uint16_t op, const char *reason)
{
	log_warnx("%s: %s: protocol violation: %s; closing", c->peer, proto_op_name(op),
		  reason);
	c->close = 1;
}
