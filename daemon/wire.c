// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/wire.c: a connection's socket. It is the only place marud's server
 * moves bytes over a client socket (through lib/common/sockio.h, the one
 * copy of whole-buffer socket I/O that daemon and library share), builds
 * the reply header every answer carries, and gives the close verdict on a
 * protocol violation. It owns the connection's read-ahead buffer (the event
 * loop reads many requests per wakeup; every read here takes from it before
 * the socket) and its reply queue (the loop's replies leave in one send per
 * wakeup), and marks a request whose socket broke under it as undeliverable.
 * It takes no lock: a connection's socket is used by one thread at a time,
 * except a subscriber's, whose writers subscribe.c serializes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "log.h"
#include "proto.h"
#include "server_priv.h"
#include "sockio.h"
#include "wire.h"

#define WIRE_IN_CAP	8192	/* read-ahead buffer: a few hundred small requests */

static int broke(struct conn *c, int rc)
{
	if (rc)
		c->undeliverable = 1;
	return rc;
}

size_t wire_buffered(const struct conn *c)
{
	return c->in_len - c->in_off;
}

size_t wire_in_cap(void)
{
	return WIRE_IN_CAP;
}

/* Up to len read-ahead bytes into buf: how many. */
static size_t in_take(struct conn *c, void *buf, size_t len)
{
	size_t n = wire_buffered(c);

	if (n > len)
		n = len;
	if (n) {
		memcpy(buf, c->in + c->in_off, n);
		c->in_off += (uint32_t)n;
	}
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	return n;
}

int wire_peek_hdr(const struct conn *c, struct proto_hdr *h)
{
	return wire_peek(c, 0, h, sizeof(*h));
}

int wire_peek(const struct conn *c, size_t off, void *buf, size_t len)
{
	if (wire_buffered(c) < off + len)
		return 0;
	memcpy(buf, c->in + c->in_off + off, len);
	return 1;
}

ssize_t wire_fill(struct conn *c, size_t *room)
{
	ssize_t n;

	if (!c->in) {
		c->in = malloc(WIRE_IN_CAP);
		if (!c->in)
			return -ENOMEM;
		c->in_cap = WIRE_IN_CAP;
	}
	if (c->in_off) {
		memmove(c->in, c->in + c->in_off, wire_buffered(c));
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	*room = c->in_cap - c->in_len;
	if (!*room)
		return -ENOBUFS;
	do
		n = recv(c->fd, c->in + c->in_len, *room, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	c->in_len += (uint32_t)n;
	return n;
}

int wire_flush(struct conn *c, int nonblock)
{
	size_t done = 0;
	ssize_t n;
	int rc = 0;

	if (!c->outq.len)
		return 0;
	if (!nonblock) {
		rc = broke(c, sock_write_full(c->fd, c->outq.data, c->outq.len));
		if (!rc)
			c->outq.len = 0;
		return rc;
	}
	while (done < c->outq.len) {
		n = send(c->fd, c->outq.data + done, c->outq.len - done,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		done += (size_t)n;
	}
	memmove(c->outq.data, c->outq.data + done, c->outq.len - done);
	c->outq.len -= done;
	return rc == -EAGAIN || rc == -EWOULDBLOCK ? -EAGAIN : broke(c, rc);
}

int wire_sendv(struct conn *c, struct iovec *iov, int cnt)
{
	return broke(c, wire_flush(c, 0) ?: sock_writev_all(c->fd, iov, cnt));
}

/* Read-ahead bytes into iov, advancing it: the entries still to fill. */
static int in_take_iov(struct conn *c, struct iovec **iov, int *cnt)
{
	while (*cnt && wire_buffered(c)) {
		size_t n = in_take(c, (*iov)->iov_base, (*iov)->iov_len);

		(*iov)->iov_base = (uint8_t *)(*iov)->iov_base + n;
		(*iov)->iov_len -= n;
		if ((*iov)->iov_len)
			break;
		(*iov)++;
		(*cnt)--;
	}
	return *cnt;
}

int wire_recvv(struct conn *c, struct iovec *iov, int cnt)
{
	while (cnt && !iov->iov_len) {
		iov++;
		cnt--;
	}
	if (!in_take_iov(c, &iov, &cnt))
		return 0;
	return broke(c, sock_readv_all(c->fd, iov, cnt));
}

int wire_recv(struct conn *c, void *buf, size_t len)
{
	size_t n = in_take(c, buf, len);

	if (n == len)
		return 0;
	return broke(c, sock_read_full(c->fd, (uint8_t *)buf + n, len - n));
}

int wire_recv_hdr(struct conn *c, struct proto_hdr *h)
{
	size_t n = in_take(c, h, sizeof(*h));
	ssize_t r;

	if (n)
		return wire_recv(c, (uint8_t *)h + n, sizeof(*h) - n);
	do
		r = recv(c->fd, h, sizeof(*h), MSG_WAITALL);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 1;
	if (r < 0)
		return -errno;
	if ((size_t)r < sizeof(*h))
		return wire_recv(c, (uint8_t *)h + r, sizeof(*h) - (size_t)r);
	return 0;
}

static int queue_reply(struct conn *c, const struct proto_hdr *h, const void *p, size_t n)
{
	int rc = proto_buf_reserve(&c->outq, sizeof(*h) + n);

	if (rc)
		return rc;
	proto_buf_put(&c->outq, h, sizeof(*h));
	proto_buf_put(&c->outq, p, n);
	return 0;
}

int wire_reply(struct conn *c, const struct proto_hdr *req, int32_t status,
	       const void *p, size_t n)
{
	struct proto_hdr h;
	struct iovec iov[2];

	if (status)
		n = 0;
	proto_hdr_init(&h, req->op, (uint32_t)n, req->reqid, c->srv->generation, status);
	if (c->batch)
		return queue_reply(c, &h, p, n);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	iov[1].iov_base = (void *)p;
	iov[1].iov_len = n;
	return wire_sendv(c, iov, n ? 2 : 1);
}

int wire_skip_unread(struct conn *c)
{
	uint8_t scratch[256];
	int rc = 0;

	while (c->unread && wire_buffered(c))
		c->unread -= in_take(c, scratch, c->unread < sizeof(scratch) ?
				     (size_t)c->unread : sizeof(scratch));
	if (c->unread)
		rc = broke(c, sock_drain(c->fd, c->unread));
	if (!rc)
		c->unread = 0;
	return rc;
}

void wire_free(struct conn *c)
{
	free(c->in);
	c->in = NULL;
	c->in_off = c->in_len = c->in_cap = 0;
	proto_buf_free(&c->outq);
}

void wire_violation(struct conn *c, uint16_t op, const char *reason)
{
	log_warnx("%s: %s: protocol violation: %s; closing", c->peer, proto_op_name(op),
		  reason);
	c->close = 1;
}
