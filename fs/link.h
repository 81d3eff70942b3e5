/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/link.h: the FUSE handlers of names that are not plain files (link.c),
 * for ops.c's table: symlinks, hard links, FIFOs/sockets/devices. Each has
 * the fuse_lowlevel_ops signature of the request it answers.
 */
#ifndef MARUFS_LINK_H
#define MARUFS_LINK_H

#include "mount.h"

void link_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void link_readlink(fuse_req_t req, fuse_ino_t ino);
/* LINK: one more name of a published version. */
void link_hardlink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
/* MKNOD of anything but a regular file (ns_mknod's). */
void link_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);

#endif
