// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/wire.c: a connection's socket. It owns the socket I/O helpers
 * (iov_advance, sendv_all, recvv_all, recv_all, drain: the only place marud's
 * server loops over sendmsg/recvmsg), the reply header every answer carries,
 * and the close verdict on a protocol violation. It takes no lock: a
 * connection's socket is used by its own thread, except a subscriber's, whose
 * writers subscribe.c serializes.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "log.h"
#include "proto.h"
#include "server_priv.h"
#include "wire.h"

static void iov_advance(struct iovec **iov, int *cnt, size_t done)
{
	while (*cnt && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*cnt)--;
	}
	if (*cnt && done) {
		(*iov)->iov_base = (uint8_t *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
}

static int sendv_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		iov_advance(&iov, &cnt, (size_t)w);
	}
	return 0;
}

static int recvv_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t r = recvmsg(fd, &m, MSG_WAITALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		iov_advance(&iov, &cnt, (size_t)r);
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return len ? recvv_all(fd, &iov, 1) : 0;
}

/* Read and drop n payload bytes (a request answered without its data). */
static int drain(int fd, uint64_t n)
{
	uint8_t scratch[4096];
	int rc;

	while (n) {
		size_t k = n < sizeof(scratch) ? (size_t)n : sizeof(scratch);

		rc = recv_all(fd, scratch, k);
		if (rc)
			return rc;
		n -= k;
	}
	return 0;
}

int wire_sendv(struct conn *c, struct iovec *iov, int cnt)
{
	return sendv_all(c->fd, iov, cnt);
}

int wire_recvv(struct conn *c, struct iovec *iov, int cnt)
{
	return recvv_all(c->fd, iov, cnt);
}

int wire_recv(struct conn *c, void *buf, size_t len)
{
	return recv_all(c->fd, buf, len);
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
	return sendv_all(c->fd, iov, n ? 2 : 1);
}

int wire_skip_unread(struct conn *c)
{
	int rc = 0;

	if (c->unread)
		rc = drain(c->fd, c->unread);
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
