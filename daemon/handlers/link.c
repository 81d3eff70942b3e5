// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/link.c: the handlers of the names that are not plain
 * files: SYMLINK, READLINK, LINK (a hard link: one more name of a published
 * version) and MKNOD (FIFOs, sockets, device nodes). Each is one directory
 * call (daemon/dir/link.c) and a reply built from its result.
 */
#include <errno.h>
#include <string.h>

#include "handlers.h"
#include "server_priv.h"
#include "session.h"

HANDLER(hdl_symlink)
{
	const struct proto_symlink_req *r = (const void *)p;
	const char *name = name_after(p, sizeof(*r));
	struct dir_attr a;
	int rc;

	rc = dir_symlink(c->srv->dir, session_dir(c->sess), r->parent, name, r->namelen,
			 name + r->namelen, r->targetlen, r->uid, r->gid, &a);
	return rc ? rc : hdl_put_attr(out, &a);
}

HANDLER(hdl_readlink)
{
	const struct proto_ino_req *r = (const void *)p;
	char buf[PROTO_PATH_MAX];
	int rc;

	rc = dir_readlink(c->srv->dir, r->ino, buf, sizeof(buf));
	return rc < 0 ? rc : proto_buf_put(out, buf, (size_t)rc);
}

HANDLER(hdl_link)
{
	const struct proto_link_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_link(c->srv->dir, session_dir(c->sess), r->ino, r->newparent,
		      name_after(p, sizeof(*r)), r->namelen, &a);
	return rc ? rc : hdl_put_attr(out, &a);
}

HANDLER(hdl_mknod)
{
	const struct proto_mknod_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_mknod(c->srv->dir, session_dir(c->sess), r->parent,
		       name_after(p, sizeof(*r)), r->namelen, r->mode, r->rdev, r->uid,
		       r->gid, &a);
	return rc ? rc : hdl_put_attr(out, &a);
}
