/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/frame.c: a request and its reply on one socket (see frame.h). A reply
 * is checked before anyone reads it: its header (proto_hdr_check, same op
 * and request id, errors carry no payload) and, on success, its payload
 * (proto_rep_check). The payload lands in the caller's buffer when it fits
 * there, else in a fresh one frame_req_done() frees.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "frame.h"
#include "sockio.h"

int frame_set_timeout(int fd, unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

void frame_req_done(struct req *r)
{
	if (r->rep && r->rep != r->rbuf)
		free(r->rep);
	r->rep = NULL;
	r->rlen = 0;
}

/* Payload of a reply into r->rbuf or a fresh buffer. -EPROTO if it cannot fit. */
static int recv_payload(int fd, const struct proto_hdr *rh, struct req *r)
{
	void *p = r->rbuf;
	int rc;

	if (rh->len == 0)
		return 0;
	if (p && rh->len > r->rcap)
		return -EPROTO;
	if (!p) {
		p = malloc(rh->len);
		if (!p)
			return -ENOMEM;
	}
	rc = sock_read_full(fd, p, rh->len);
	if (rc) {
		if (p != r->rbuf)
			free(p);
		return rc;
	}
	r->rep = p;
	r->rlen = rh->len;
	return 0;
}

int frame_reply(int fd, uint32_t max_frame, const struct proto_hdr *h, struct req *r)
{
	struct proto_hdr rh;
	int rc;

	rc = sock_read_full(fd, &rh, sizeof(rh));
	if (rc)
		return rc;
	if (proto_hdr_check(&rh, max_frame) || rh.op != h->op || rh.reqid != h->reqid ||
	    (rh.status != 0 && rh.len != 0) || rh.status > 0)
		return -EPROTO;
	rc = recv_payload(fd, &rh, r);
	if (rc)
		return rc;
	r->status = rh.status;
	r->rgen = rh.generation;
	if (rh.status == 0 && proto_rep_check(h->op, r->rep, r->rlen)) {
		frame_req_done(r);
		return -EPROTO;
	}
	return 0;
}

int frame_call(int fd, uint32_t max_frame, struct proto_hdr *h, struct req *r)
{
	int rc;

	frame_req_done(r);
	rc = proto_send(fd, h, r->p1, r->n1, r->p2, r->n2);
	if (rc)
		return rc;
	return frame_reply(fd, max_frame, h, r);
}
