/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dispatch.h: from a framed request to its reply (dispatch.c).
 * conn.c reads the frame; dispatch.c decides whether it may run and runs it.
 */
#ifndef MARUD_DISPATCH_H
#define MARUD_DISPATCH_H

#include <stdint.h>

#include "proto.h"

struct conn;

/*
 * A header just read: 0 if its frame is sound and its op served; otherwise
 * the violation is logged (and a too-large frame of a served op answered
 * -EMSGSIZE) and -EPROTO returned: close the connection.
 */
int dispatch_header(struct conn *c, const struct proto_hdr *h);
/*
 * Run a request whose header passed dispatch_header() and whose payload
 * (p, len) conn.c read; check: proto_req_check()'s verdict on it (a
 * well-framed request naming an invalid entry, answered without running).
 * Counts it, gates it (AUTH, HELLO, generation), answers a replayed request
 * id from the session's reply cache, runs the handler, waits for
 * acknowledgements after a change and replies. < 0: close at once.
 */
/* served[op] = 1 for each op with a handler (STATS lists those). */
void dispatch_served(unsigned char served[OP_MAX]);
int dispatch_request(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, int check, struct pbuf *out);

#endif
