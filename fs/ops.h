/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ops.h: marufs's fuse_lowlevel_ops table (ops.c).
 */
#ifndef MARUFS_OPS_H
#define MARUFS_OPS_H

#include "mount.h"

void ops_init(struct fuse_lowlevel_ops *ops);

#endif
