/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/confine.h: a scoped session's view (confine.c, issue 26). A
 * session of a tenant key (tenant.h) sees the tenant's root as "/": in its
 * requests the id MARU_ROOT_ID (1) means the tenant root, and in its
 * replies and events the tenant root is 1. Every id it names must be
 * inside the root (dir_within), else the request fails with -ENOENT, as
 * for an id that does not exist: nothing outside can be told apart from
 * absent. Both parents of a RENAME and LINK are checked, so moving a name
 * across the root cannot be expressed (ENOENT, never EXDEV). A read-only
 * tenant's changes (and pins set or cleared) fail with -EROFS. STATS (the
 * whole pool's figures) is refused with -EACCES; STATFS keeps the pool's byte totals but not its
 * counts of names, directories and versions. Events outside the root are
 * not delivered.
 */
#ifndef MARUD_CONFINE_H
#define MARUD_CONFINE_H

#include <stdint.h>

struct conn;
struct dir_event;
struct pbuf;
struct proto_hdr;

/*
 * Before the handler: translate the root id in place in the request p
 * (the connection's own input buffer) and check every id. 0 or -errno.
 * A no-op (0) for an unscoped connection.
 */
int confine_request(struct conn *c, const struct proto_hdr *h, uint8_t *p, uint32_t len);
/* After a handler answered 0: the tenant root's id in the reply's attrs becomes 1. */
void confine_reply(struct conn *c, uint16_t op, struct pbuf *out);
/*
 * An event for c's stream: 1 deliver (ids and paths translated in e), 0
 * skip it. An event across the root (a rename by the administrator from
 * inside to outside, or back) becomes DEV_OVERFLOW: drop every cache.
 */
int confine_event(struct conn *c, struct dir_event *e);

#endif
