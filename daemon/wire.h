/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/wire.h: a connection's socket, the lowest layer of marud's server.
 * Whole-message sends and receives over iovecs, replies, skipping the unread
 * part of a request, and the verdict on a protocol violation. conn.c,
 * dispatch.c, subscribe.c and the handlers talk to a client only through
 * these; wire.c calls nothing of the server above it.
 */
#ifndef MARUD_WIRE_H
#define MARUD_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "proto.h"

struct conn;

/* Send every byte of iov[0..cnt) (the array is consumed); 0 or -errno. */
int wire_sendv(struct conn *c, struct iovec *iov, int cnt);
/* Fill every byte of iov[0..cnt); -ECONNRESET on EOF. */
int wire_recvv(struct conn *c, struct iovec *iov, int cnt);
int wire_recv(struct conn *c, void *buf, size_t len);
/* Reply to req: header (our generation) and, on status 0, n payload bytes. */
int wire_reply(struct conn *c, const struct proto_hdr *req, int32_t status,
	       const void *p, size_t n);
/* Read and drop the request payload still in the socket (c->unread). */
int wire_skip_unread(struct conn *c);
/* Log a protocol violation by the peer and mark the connection to close. */
void wire_violation(struct conn *c, uint16_t op, const char *reason);

#endif
