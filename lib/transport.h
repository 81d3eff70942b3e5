/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/transport.h: a client's sockets to marud and the one request path
 * (transport_call), the connect+AUTH+HELLO every socket starts with
 * (transport_dial), and the liveness of the session as seen from here.
 */
#ifndef MARU_TRANSPORT_H
#define MARU_TRANSPORT_H

#include "client_priv.h"

/*
 * Connect to c's marud within ms, authenticate if c has a key and say HELLO
 * with flags (and token, NULL for none). The reply in *rep. An fd or -errno.
 */
int transport_dial(struct maru_client *c, unsigned int ms, uint32_t flags,
		   const uint8_t *token, struct proto_hello_rep *rep);
/* Send r on an idle socket, retrying on fresh ones until opts.timeout_ms. */
int transport_call(struct maru_client *c, struct req *r);
/* The same, retrying for at most ms (and never past opts.timeout_ms). */
int transport_call_within(struct maru_client *c, struct req *r, unsigned int ms);
/*
 * 1 while this client is in an outage: its calls have failed to reach
 * marud for TRANSPORT_OUTAGE_MS or more (a stale socket's one EPIPE, which
 * the next try mends, is no outage).
 */
#define TRANSPORT_OUTAGE_MS	1000
int transport_down(struct maru_client *c);
/* maru_client_new: the first session, -ECONNREFUSED if nobody listens. */
int transport_connect_first(struct maru_client *c);
void transport_close_conns(struct maru_client *c);
/* A round trip that makes a restarted marud (new generation) known now. */
void transport_ping(struct maru_client *c);
/*
 * 0 if marud answered this client less than TRANSPORT_LIVE_MS ago (asking it
 * once more if not), so the session cannot have ended meanwhile; else
 * -ETIMEDOUT. Checked above a data path that writes pool memory directly.
 */
#define TRANSPORT_LIVE_MS	1000
int transport_live(struct maru_client *c);

#endif
