// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/ns.c: the namespace handlers: MKDIR, RMDIR, LOOKUP,
 * GETATTR, SETATTR, RENAME (replying the seq of its event), UNLINK, READDIR
 * (entries packed to fit one frame) and EXISTS (one byte per name, all in one
 * call). Each is one directory call and a reply built from its result; no
 * lock of its own.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "server_priv.h"
#include "session.h"

#define READDIR_MAX	4096

HANDLER(hdl_mkdir)
{
	const struct proto_name_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_mkdir(c->srv->dir, r->parent, name_after(p, sizeof(*r)), r->namelen,
		       r->mode, r->uid, r->gid, &a);
	return rc ? rc : hdl_put_attr(out, &a);
}

HANDLER(hdl_rmdir)
{
	const struct proto_name_req *r = (const void *)p;

	return dir_rmdir(c->srv->dir, r->parent, name_after(p, sizeof(*r)), r->namelen);
}

HANDLER(hdl_lookup)
{
	const struct proto_name_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_lookup(c->srv->dir, session_dir(c->sess), r->parent,
			name_after(p, sizeof(*r)), r->namelen, &a);
	return rc ? rc : hdl_put_attr(out, &a);
}

HANDLER(hdl_getattr)
{
	const struct proto_ino_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_getattr(c->srv->dir, session_dir(c->sess), r->ino, &a);
	return rc ? rc : hdl_put_attr(out, &a);
}

HANDLER(hdl_setattr)
{
	const struct proto_setattr_req *r = (const void *)p;
	struct dir_setattr sa = {
		.mask = r->mask, .mode = r->mode, .uid = r->uid, .gid = r->gid,
		.atime_ns = r->atime_ns, .mtime_ns = r->mtime_ns,
	};
	struct dir_attr a;
	int rc;

	rc = dir_setattr(c->srv->dir, session_dir(c->sess), r->ino, &sa, &a);
	return rc ? rc : hdl_put_attr(out, &a);
}

HANDLER(hdl_rename)
{
	const struct proto_rename_req *r = (const void *)p;
	const char *oldname = name_after(p, sizeof(*r));
	struct proto_rename_rep rep = { 0 };
	int rc;

	rc = dir_rename_ev(c->srv->dir, session_dir(c->sess), r->oldparent, oldname,
			   r->oldlen, r->newparent, oldname + r->oldlen, r->newlen,
			   r->flags, &rep.seq);
	return rc ? rc : proto_buf_put(out, &rep, sizeof(rep));
}

HANDLER(hdl_unlink)
{
	const struct proto_name_req *r = (const void *)p;

	return dir_unlink(c->srv->dir, session_dir(c->sess), r->parent,
			  name_after(p, sizeof(*r)), r->namelen);
}

struct readdir_ctx {
	struct pbuf *out;
	uint32_t count;
	int rc;
};

static int readdir_put(void *arg, const struct dir_dirent *de)
{
	struct readdir_ctx *x = arg;
	struct proto_dirent w = {
		.ino = de->ino, .cookie = de->cookie, .mode = de->mode,
		.state = de->state, .namelen = (uint16_t)de->nlen,
	};

	x->rc = proto_buf_put(x->out, &w, sizeof(w));
	if (!x->rc)
		x->rc = proto_buf_put(x->out, de->name, de->nlen);
	if (!x->rc)
		x->rc = proto_buf_align8(x->out);
	if (x->rc)
		return 1;
	x->count++;
	return 0;
}

HANDLER(hdl_readdir)
{
	const struct proto_readdir_req *r = (const void *)p;
	struct proto_readdir_rep rep = { 0 };
	struct readdir_ctx x = { .out = out };
	/* Worst case per entry: header + 255 name bytes, aligned. */
	uint32_t fit = (atomic_load(&c->srv->max_frame) - sizeof(rep)) /
		       (sizeof(struct proto_dirent) + 256);
	uint32_t max = r->max_entries;
	int eof = 0, rc;

	if (max == 0 || max > READDIR_MAX)
		max = READDIR_MAX;
	if (max > fit)
		max = fit;
	rc = proto_buf_put(out, &rep, sizeof(rep));
	if (rc)
		return rc;
	/* Returns the count delivered: success is >= 0. */
	rc = dir_readdir(c->srv->dir, session_dir(c->sess), r->dir, r->cookie, max,
			 readdir_put, &x, &eof);
	if (rc >= 0)
		rc = x.rc;
	if (rc)
		return rc;
	rep.count = x.count;
	rep.eof = (uint32_t)eof;
	memcpy(out->data, &rep, sizeof(rep));
	return 0;
}

/* The names of an EXISTS request; -EPROTO if one runs past the payload. */
static int exists_names(const uint8_t *p, uint32_t len, uint32_t count,
			struct dir_name *names)
{
	size_t off = sizeof(struct proto_exists_req);
	uint32_t i;

	for (i = 0; i < count; i++) {
		uint16_t nlen;

		/* proto_req_check vetted the lengths; stay in bounds anyway. */
		if (off + sizeof(nlen) > len)
			return -EPROTO;
		memcpy(&nlen, p + off, sizeof(nlen));
		off += sizeof(nlen);
		if (off + nlen > len)
			return -EPROTO;
		names[i].name = (const char *)p + off;
		names[i].nlen = nlen;
		off += nlen;
	}
	return 0;
}

/* Every name answered in one directory lock hold. */
HANDLER(hdl_exists)
{
	const struct proto_exists_req *r = (const void *)p;
	struct dir_name *names;
	int rc;

	/* each name takes at least its 2-byte length */
	if (len < sizeof(*r) || r->count > (len - sizeof(*r)) / sizeof(uint16_t))
		return -EPROTO;
	names = calloc(r->count ? r->count : 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	rc = exists_names(p, len, r->count, names);
	if (!rc)
		rc = proto_buf_reserve(out, r->count);
	if (!rc)
		rc = dir_exists_n(c->srv->dir, r->parent, names, r->count,
				  out->data + out->len);
	if (!rc)
		out->len += r->count;
	free(names);
	return rc;
}
