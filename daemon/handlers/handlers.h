/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/handlers/handlers.h: marud's request handlers, one per op of
 * lib/common/proto/proto.h, and what they share (common.c). dispatch.c puts
 * them in its table and runs them; a handler sees its connection's state
 * (server_priv.h), talks to the socket only through wire.h, and calls the
 * directory, the session table and the pool. No handler calls back into
 * conn.c or dispatch.c.
 *
 * A handler returns the status for the reply header (0 or -errno) and puts
 * the reply payload into out; one that answers by itself (READ) sets
 * c->replied.
 */
#ifndef MARUD_HANDLERS_H
#define MARUD_HANDLERS_H

#include <stdint.h>
#include <sys/uio.h>

#include "alloc.h"
#include "dir.h"
#include "proto.h"

struct conn;
struct server;

typedef int (*handler_fn)(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
			  uint32_t len, struct pbuf *out);

#define HANDLER(name)                                                              \
	int name(struct conn *c, const struct proto_hdr *h, const uint8_t *p, uint32_t len, \
		 struct pbuf *out)

/* handshake.c */
HANDLER(hdl_ping);
HANDLER(hdl_auth);
HANDLER(hdl_hello);
/* 1: c's session was made because the one its client asked to reclaim had ended. */
int hdl_session_reborn(const struct conn *c);
/* ns.c */
HANDLER(hdl_mkdir);
HANDLER(hdl_rmdir);
HANDLER(hdl_lookup);
HANDLER(hdl_getattr);
HANDLER(hdl_setattr);
HANDLER(hdl_rename);
HANDLER(hdl_unlink);
HANDLER(hdl_readdir);
HANDLER(hdl_exists);
/* version.c */
HANDLER(hdl_create);
HANDLER(hdl_reserve);
HANDLER(hdl_truncate);
HANDLER(hdl_publish);
HANDLER(hdl_abandon);
HANDLER(hdl_open);
HANDLER(hdl_release);
HANDLER(hdl_extents);
/* io.c */
HANDLER(hdl_read);
HANDLER(hdl_write);
/* hint.c */
HANDLER(hdl_hint);
/* link.c */
HANDLER(hdl_symlink);
HANDLER(hdl_readlink);
HANDLER(hdl_link);
HANDLER(hdl_mknod);
HANDLER(hdl_hintv);
HANDLER(hdl_hint_wait);
/* pin.c */
HANDLER(hdl_pin);
/* stats.c */
HANDLER(hdl_statfs);
/* rdma.c */
HANDLER(hdl_rkey);

/*
 * stats.c: the Prometheus text of STATS. served[op] != 0 for every op that
 * has a handler (its request counter is listed); dispatch.c, which knows the
 * table, passes it.
 */
int hdl_stats_text(struct server *srv, const unsigned char served[OP_MAX], struct pbuf *out);

/* ---- common.c ---- */

/* The name that follows a fixed request body of `body` bytes. */
static inline const char *name_after(const uint8_t *p, size_t body)
{
	return (const char *)p + body;
}

int hdl_put_attr(struct pbuf *out, const struct dir_attr *a);
/*
 * The attr + extents reply from what a directory call returned; frees l
 * either way and records a->ino as the version the reply describes.
 */
int hdl_reply_attr_extents(struct conn *c, const struct dir_attr *a, struct extent_list *l,
			   struct pbuf *out);
/* The same for a version the session holds, asking the directory (EXTENTS). */
int hdl_reply_extents(struct conn *c, uint64_t ino, int want_write, struct pbuf *out);
/*
 * Fill iov with the pool pieces of [off, off+n) of a version, at most max
 * entries. Returns the count and sets *covered; -EIO if the directory ever
 * handed out an extent outside the mapping.
 */
int hdl_extent_iov(struct server *srv, const struct extent_list *l, uint64_t off, uint64_t n,
		   struct iovec *iov, int max, uint64_t *covered);

#define IOV_BATCH	64

#endif
