/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ioctl.h: the zero-copy ioctls of an open file (ioctl.c), a FUSE
 * handler for ops.c's table.
 */
#ifndef MARUFS_IOCTL_H
#define MARUFS_IOCTL_H

#include "mount.h"

void ioctl_handle(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, struct fuse_file_info *fi,
		  unsigned int flags, const void *in, size_t in_size, size_t out_size);

#endif
