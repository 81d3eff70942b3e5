/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/rdma/rdma.h: marud's rdma data path as the rest of marud sees it,
 * with no verbs type in sight (only daemon/rdma/ includes the verbs
 * headers). It owns the rdma:// listeners (rdma_listen.c), the pool memory
 * registered once per device (rdma_mr.c), the per-session rights, as type
 * 2 memory windows bound on the session's QP (rkey.c), and the fence that
 * keeps pages a late WRITE may still reach out of reuse (quarantine.c).
 *
 * The handlers that end a right (RELEASE of the last lease, PUBLISH,
 * ABANDON, TRUNCATE) wrap their directory call in rdma_end_begin() /
 * rdma_end_done(): the windows of that version are invalidated first, and
 * no RKEY can bind a new one until the directory call returned. The session
 * table calls rdma_session_end() (its end hook) before dir_session_end().
 * Without an rdma listener (srv->rdma == NULL) every call is a no-op.
 */
#ifndef MARUD_RDMA_H
#define MARUD_RDMA_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct server;
struct session;
struct rdma_srv;

/* 1 if uri is "rdma://ADDR:PORT" (host/port filled), 0 if another scheme,
 * -EINVAL if a malformed rdma:// one. */
int rdma_uri(const char *uri, char *host, size_t hostsz, uint16_t *port);
/* Open every rdma:// listener of srv->cfg (none: *out = NULL, 0). */
int rdma_srv_open(struct server *srv, struct rdma_srv **out);
int rdma_srv_start(struct rdma_srv *r);
/* Stop the event thread, fence and drop every QP, deregister the pool. */
void rdma_srv_close(struct rdma_srv *r);

/* HELLO_F_RDMA of a connection allowed the rdma path: fill the rdma fields. */
void rdma_hello(struct rdma_srv *r, struct session *s, const char *ctl_host,
		struct proto_hello_rep *rep);
/* RKEY: bind the rights of s on q->ino (dir_extents decides them). */
int rdma_rkey(struct rdma_srv *r, struct server *srv, struct session *s,
	      const struct proto_rkey_req *q, struct pbuf *out);
/* Around a directory call that ends the right of s on ino (0: none). */
void rdma_end_begin(struct rdma_srv *r, struct session *s, uint64_t ino, int rw);
void rdma_end_done(struct rdma_srv *r);
/* rdma_end_begin in two steps, for a caller that decides in between. */
void rdma_end_lock(struct rdma_srv *r);
void rdma_end_revoke(struct rdma_srv *r, struct session *s, uint64_t ino, int rw);
/* Before dir_session_end(s): fence its QP, revoke everything (arg: rdma_srv). */
void rdma_session_end(void *arg, struct session *s);
/* The rdma lines of STATS (Prometheus text). */
int rdma_stats(struct rdma_srv *r, struct pbuf *out);

#endif
