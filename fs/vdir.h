/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/vdir.h: the virtual .maru/ directory (vdir.c). Its inodes are a
 * reserved top range; ops.c hands every request about them, and every name
 * request in them or for ".maru" in the root, to vdir_ops instead of the
 * pool's handlers.
 */
#ifndef MARUFS_VDIR_H
#define MARUFS_VDIR_H

#include <string.h>

#include "mount.h"

#define VIRT_INO_BASE	(UINT64_MAX - 16)
#define VIRT_INO_DIR	(VIRT_INO_BASE + 0)
#define VIRT_INO_STATS	(VIRT_INO_BASE + 1)
#define VIRT_INO_EVENTS	(VIRT_INO_BASE + 2)
#define VIRT_INO_POOL	(VIRT_INO_BASE + 3)
#define VIRT_INO_HINTS	(VIRT_INO_BASE + 4)	/* write-only: hints.c */
#define VIRT_DIR_NAME	".maru"

static inline int ino_is_virt(uint64_t ino)
{
	return ino >= VIRT_INO_BASE;
}

/* A name request about (parent, name) is .maru/'s. */
static inline int vdir_claims(uint64_t parent, const char *name)
{
	return ino_is_virt(parent) ||
	       (parent == FUSE_ROOT_ID && strcmp(name, VIRT_DIR_NAME) == 0);
}

/* The request handlers of .maru/ (those it does not set are never routed). */
extern const struct fuse_lowlevel_ops vdir_ops;

/* The text of .maru/pool (tests). */
int vdir_pool_text(struct mfs *m, const struct maru_pool_info *pi, char *buf, size_t cap);

#endif
