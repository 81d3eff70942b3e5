/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/reload.h: SIGHUP's one entry point (reload.c). run.c reads the
 * configuration again and calls reload_all(); reload_all() runs each step
 * of its table in order, each on its own: a step that fails logs why and
 * keeps what it had, and the next steps still run. Nothing restarts:
 * listeners, the pool and sessions stay.
 *
 * To add a step (the TLS certificates, say): write
 *	int NAME_reload(struct server *srv, const struct config *nc);
 * (nc: the new configuration, NULL when it failed to load; 0 or -errno),
 * and add one line to the table at the top of reload.c.
 */
#ifndef MARUD_RELOAD_H
#define MARUD_RELOAD_H

struct config;
struct server;

/* Every step; returns how many failed. */
unsigned int reload_all(struct server *srv, const struct config *nc);

#endif
