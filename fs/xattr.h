/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/xattr.h: the user.maru.* extended attributes (xattr.c), as FUSE
 * handlers for ops.c's table: each replies to req.
 */
#ifndef MARUFS_XATTR_H
#define MARUFS_XATTR_H

#include "mount.h"

void xattr_get(fuse_req_t req, uint64_t ino, const char *name, size_t size);
void xattr_set(fuse_req_t req, uint64_t ino, const char *name, const char *value,
	       size_t size, int flags);
void xattr_list(fuse_req_t req, uint64_t ino, size_t size);
void xattr_remove(fuse_req_t req, uint64_t ino, const char *name);

#endif
