/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/conn.h: marud's connections (conn.c): the objects, the event loop
 * and the threads that serve them, the list of them. listen.c makes them; server.c closes them all at stop.
 */
#ifndef MARUD_CONN_H
#define MARUD_CONN_H

struct conn;
struct server;

/* The connection list's lock and condition variable (CLOCK_MONOTONIC). */
int conns_init(struct server *srv);
void conns_destroy(struct server *srv);
/* A connection over an accepted (or socketpair) fd, not yet running. */
int conn_new(struct server *srv, int fd, int is_unix, struct conn **out);
/* Frees c, not its fd. */
void conn_free(struct conn *c);
/*
 * Start c's thread and list it; from then on the thread owns c and its fd
 * (closes and frees both when the peer or the server goes). -errno: not
 * started, the caller still owns both.
 */
int conn_spawn(struct conn *c);
/*
 * Serve c: on the event loop when it runs, else on a thread of its own
 * (conn_spawn). From then on the server owns c and its fd; -errno: not
 * started, the caller still owns both.
 */
int conn_start(struct conn *c);
/* The event loop's threads (one per CPU); stop: join them (idempotent). */
int conn_loops_start(struct server *srv);
void conn_loops_stop(struct server *srv);
/* Kick every connection out of its blocking read and wait until all are gone. */
void conns_close_all(struct server *srv);

#endif
