/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ns.h: the FUSE handlers of the pool's namespace (ns.c), for ops.c's
 * table. Each has the fuse_lowlevel_ops signature of its name.
 */
#ifndef MARUFS_NS_H
#define MARUFS_NS_H

#include "mount.h"

void ns_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ns_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void ns_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void ns_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ns_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi);
void ns_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void ns_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void ns_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void ns_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ns_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);
void ns_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void ns_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void ns_statfs(fuse_req_t req, fuse_ino_t ino);
void ns_access(fuse_req_t req, fuse_ino_t ino, int mask);
/* Shared by ns.c and link.c. */
struct ev_expect;
struct pending;
void ns_fill_entry(struct mfs *m, struct fuse_entry_param *e, const struct maru_attr *a);
void ns_reply_entry(fuse_req_t req, uint64_t parent, const char *name,
		       struct fuse_entry_param *e, struct pending *p);
/* Wait for the event of this mount's own change (counted in .maru/stats). */
void ns_wait_own(struct mfs *m, struct ev_expect *w);

#endif
