// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/common.c: what several handlers share: a version's
 * attributes and extents in their wire form (proto_attr, proto_extent), the
 * attr+extents reply that CREATE, RESERVE, TRUNCATE, OPEN and EXTENTS give
 * (from the extents their directory call returned; EXTENTS, and dispatch.c
 * when a replayed reply was too large to keep, ask for them), and
 * a version's bytes in pool memory as an iovec. No lock of its own.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "handlers.h"
#include "pool.h"
#include "server_priv.h"
#include "session.h"

static void attr_to_wire(const struct dir_attr *a, uint32_t nextents, struct proto_attr *w)
{
	memset(w, 0, sizeof(*w));
	w->ino = a->ino;
	w->parent = a->parent;
	w->size = a->size;
	w->reserved = a->reserved;
	w->atime_ns = a->atime_ns;
	w->mtime_ns = a->mtime_ns;
	w->ctime_ns = a->ctime_ns;
	w->xxh3 = a->xxh3;
	w->mode = a->mode;
	w->uid = a->uid;
	w->gid = a->gid;
	w->nlink = a->nlink;
	w->state = a->state;
	w->leases = a->leases;
	w->nextents = nextents;
	w->rdev = a->rdev;
}

int hdl_put_attr(struct pbuf *out, const struct dir_attr *a)
{
	struct proto_attr w;

	attr_to_wire(a, 0, &w);
	return proto_buf_put(out, &w, sizeof(w));
}

static int put_attr_extents(struct pbuf *out, const struct dir_attr *a,
			    const struct extent_list *l)
{
	struct proto_attr w;
	uint32_t i;
	int rc;

	attr_to_wire(a, l->n, &w);
	rc = proto_buf_reserve(out, sizeof(w) + (size_t)l->n * sizeof(struct proto_extent));
	if (rc)
		return rc;
	proto_buf_put(out, &w, sizeof(w));
	for (i = 0; i < l->n; i++) {
		struct proto_extent e = { .off = l->v[i].off, .len = l->v[i].len };

		proto_buf_put(out, &e, sizeof(e));
	}
	return 0;
}

int hdl_reply_attr_extents(struct conn *c, const struct dir_attr *a, struct extent_list *l,
			   struct pbuf *out)
{
	int rc = put_attr_extents(out, a, l);

	alloc_extent_list_free(l);
	c->cache_ino = a->ino;
	return rc;
}

int hdl_reply_extents(struct conn *c, uint64_t ino, int want_write, struct pbuf *out)
{
	struct extent_list l = { 0 };
	struct dir_attr a;
	int rc;

	rc = dir_extents(c->srv->dir, session_dir(c->sess), ino, want_write, &l, &a);
	return rc ? rc : hdl_reply_attr_extents(c, &a, &l, out);
}

int hdl_extent_iov(struct server *srv, const struct extent_list *l, uint64_t off, uint64_t n,
		   struct iovec *iov, int max, uint64_t *covered)
{
	int k = 0;

	*covered = 0;
	while (n && k < max) {
		uint64_t po, len = alloc_extent_list_at(l, off, &po);

		if (!len)
			break;
		len = len < n ? len : n;
		if (po < srv->pool->data_off || po + len > srv->pool->size || po + len < po)
			return -EIO;
		iov[k].iov_base = srv->pool->base + po;
		iov[k].iov_len = len;
		k++;
		off += len;
		n -= len;
		*covered += len;
	}
	return k;
}
