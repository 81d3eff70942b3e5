/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/conn.h: marud's connections (conn.c): the objects, their threads,
 * the list of them. listen.c makes them; server.c closes them all at stop.
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
/* Kick every connection out of its blocking read and wait until all are gone. */
void conns_close_all(struct server *srv);

#endif
