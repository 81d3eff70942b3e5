/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/wire.h: a connection's socket, the lowest layer of marud's server.
 * Whole-message sends and receives over iovecs (taking the read-ahead
 * buffer's bytes first), replies (queued while c->batch is set, sent by
 * wire_flush()), skipping the unread part of a request, and the verdict on a
 * protocol violation. conn.c,
 * dispatch.c, subscribe.c and the handlers talk to a client only through
 * these; wire.c calls nothing of the server above it.
 */
#ifndef MARUD_WIRE_H
#define MARUD_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "proto.h"

struct conn;

/*
 * Send every byte of iov[0..cnt) (the array is consumed), after the queued
 * replies; 0 or -errno. A failed send or receive marks c->undeliverable.
 */
int wire_sendv(struct conn *c, struct iovec *iov, int cnt);
/* Fill every byte of iov[0..cnt); -ECONNRESET on EOF. */
int wire_recvv(struct conn *c, struct iovec *iov, int cnt);
int wire_recv(struct conn *c, void *buf, size_t len);
/* Reply to req: header (our generation) and, on status 0, n payload bytes. */
int wire_reply(struct conn *c, const struct proto_hdr *req, int32_t status,
	       const void *p, size_t n);
/* Read and drop the request payload still in the socket (c->unread). */
int wire_skip_unread(struct conn *c);
/* Next frame header; 1 on a clean EOF before any byte of it, else 0 or -errno. */
int wire_recv_hdr(struct conn *c, struct proto_hdr *h);
/* Read-ahead bytes not yet taken; the buffer's capacity (a bigger frame is not read ahead). */
size_t wire_buffered(const struct conn *c);
size_t wire_in_cap(void);
/* Copy the next header out of the read-ahead buffer without taking it: 1, or 0 if short. */
int wire_peek_hdr(const struct conn *c, struct proto_hdr *h);
/* The same for len bytes at off into the read-ahead bytes. */
int wire_peek(const struct conn *c, size_t off, void *buf, size_t len);
/*
 * One recv without waiting into the read-ahead buffer (*room: the space it
 * had): bytes read, 0 on EOF, -EAGAIN when none are there, -errno.
 */
ssize_t wire_fill(struct conn *c, size_t *room);
/* Send the queued replies; nonblock: -EAGAIN leaves what did not fit queued. */
int wire_flush(struct conn *c, int nonblock);
/* Free the read-ahead buffer and the reply queue. */
void wire_free(struct conn *c);
/* Log a protocol violation by the peer and mark the connection to close. */
void wire_violation(struct conn *c, uint16_t op, const char *reason);

#endif
