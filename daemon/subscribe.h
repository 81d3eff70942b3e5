/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/subscribe.h: event subscribers and acknowledgement waits
 * (subscribe.c), called by server.c (set up, tear down) and dispatch.c (the
 * SUBSCRIBE handler, the wait after a change).
 */
#ifndef MARUD_SUBSCRIBE_H
#define MARUD_SUBSCRIBE_H

#include <stdint.h>

#include "proto.h"

struct conn;
struct server;

/* The registry's lock and condition variable (CLOCK_MONOTONIC); -errno. */
int subs_init(struct server *srv);
void subs_destroy(struct server *srv);

/*
 * SUBSCRIBE: answer, then push events on c until the peer or the server
 * goes; the connection closes afterwards. Returns 0 (or -ENOMEM unanswered).
 */
int hdl_subscribe(struct conn *c, const struct proto_hdr *h, const uint8_t *p, uint32_t len,
		struct pbuf *out);

/*
 * How long a successful op waits for acknowledgements; 0: not at all.
 * PUBLISH runs at close, under no kernel directory lock, so it can wait
 * long; the namespace changes hold one on the requesting mount and wait
 * briefly.
 */
unsigned int subs_ack_wait_ms(struct server *srv, uint16_t op);

/*
 * Close-to-open across mounts: before c's change up to event seq is
 * answered, every acknowledging subscriber of another session applies it,
 * or ms pass. holds_lock: the requester holds a kernel directory lock (all
 * but PUBLISH). Called with no lock held (the dir lock above all).
 */
void subs_acks_wait(struct conn *c, uint64_t seq, unsigned int ms, int holds_lock);

#endif
