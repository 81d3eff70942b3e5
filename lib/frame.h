/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/frame.h: one request frame out and its reply in, on one socket that
 * the caller owns. No retries, no session: transport.c, auth.c and events.c
 * build on it.
 */
#ifndef MARU_FRAME_H
#define MARU_FRAME_H

#include "client_priv.h"

/*
 * Send h with r's payload and read the reply to it (same op and request
 * id). 0 when r->status holds marud's answer (payload in r->rep), else
 * -errno (-EPROTO: the peer broke the protocol).
 */
int frame_call(int fd, uint32_t max_frame, struct proto_hdr *h, struct req *r);
/* Read the reply to h only (the request is already sent). */
int frame_reply(int fd, uint32_t max_frame, const struct proto_hdr *h, struct req *r);
/* Free a malloc'd reply payload; r may be reused. */
void frame_req_done(struct req *r);
/* SO_RCVTIMEO and SO_SNDTIMEO of ms on fd. */
int frame_set_timeout(int fd, unsigned int ms);

#endif
