/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/listen.h: marud's listening sockets and accept thread (listen.c),
 * called by server.c.
 */
#ifndef MARUD_LISTEN_H
#define MARUD_LISTEN_H

struct server;

/* Bind every address of srv->cfg.listen; -errno (some may be open: close them). */
int listen_open_all(struct server *srv);
/* Close them; unlink the unix socket paths. Idempotent. */
void listen_close_all(struct server *srv);
/* Start the accept thread. */
int listen_accept_start(struct server *srv);
/* Wake the accept thread and join it (srv->stopping is set). Idempotent. */
void listen_accept_stop(struct server *srv);

#endif
