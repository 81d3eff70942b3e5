/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/admit.h: the handshake limits (admit.c). A connection is
 * unauthenticated from accept until its handshake is done (AUTH with a key
 * configured, HELLO without one). Until then it is on a list, oldest first,
 * bounded per source address and overall, closed at its deadline, and
 * allowed only small AUTH, HELLO and PING frames; listen.c asks at accept,
 * conn.c on every frame and when the connection ends.
 */
#ifndef MARUD_ADMIT_H
#define MARUD_ADMIT_H

#include <stdint.h>

#include "proto.h"

struct conn;
struct server;

/* The largest frame before the handshake: AUTH and HELLO are 64 bytes. */
#define ADMIT_FRAME_MAX		256u

int admit_init(struct server *srv);
void admit_destroy(struct server *srv);
/*
 * At accept: c (its src set) is listed as unauthenticated and 0 returned;
 * or -EBUSY: its source has handshake-per-source unauthenticated ones
 * already, or as many closed ones are not yet ended; or -EUSERS: max-conns reached with every slot authenticated.
 * *why (a literal) says which. Making room may close the oldest
 * unauthenticated connection (logged rate-limited).
 */
int admit_conn(struct conn *c, const char **why);
/*
 * Before a frame of c is taken (header h): 0 to go on; > 0: answered and
 * closing (HELLO before AUTH: the client has no key); -EPROTO: close (a
 * frame the handshake does not need, or over ADMIT_FRAME_MAX).
 */
int admit_frame(struct conn *c, const struct proto_hdr *h);
/* After a frame ran: c leaves the list once its handshake is done. */
void admit_check(struct conn *c);
/* c ends: off the list (a client that left after AUTH step 1 is logged: wrong key). */
void admit_forget(struct conn *c);
/* A refusal of a connection from c's source, logged rate-limited. */
void admit_refused(struct server *srv, const char *src, const char *why);
/*
 * The accept thread's timer: close the connections past their handshake
 * deadline, log the refusal counts whose window ended. Returns the ms until
 * it is due again. stopping: log every count now.
 */
int admit_tick(struct server *srv, int stopping);
/* The number of unauthenticated connections marud keeps at most. */
unsigned int admit_limit(const struct server *srv);

#endif
