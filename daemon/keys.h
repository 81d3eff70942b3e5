/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/keys.h: the key file in a running marud (keys.c): read at start
 * and on every reload into the administrator key and the tenant table
 * (tenant.h); a removed key's connections are closed at once.
 */
#ifndef MARUD_KEYS_H
#define MARUD_KEYS_H

struct server;

/*
 * Read srv->cfg.key_file (a no-op without one) and apply it. On any error
 * (unreadable, bad mode, a parse error "FILE:LINE: what", a root that is a
 * file) nothing changes, one log line says why, and -errno is returned.
 * Once the tenant table took the file, its keys are in force: when the
 * quotas then cannot reach the directory (quotas.h), that is logged, the
 * directory keeps the quotas it had, removed keys' connections are closed
 * all the same, and the quota error is returned.
 * reload: 1 from SIGHUP (the line says the old keys stay), 0 at start.
 */
int keys_load(struct server *srv, int reload);

#endif
