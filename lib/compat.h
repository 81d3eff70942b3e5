/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/compat.h: the MARU_0.1 layouts of the structs that grew in MARU_0.2
 * and the calls that still fill them (compat.c). The ABI test pins these
 * layouts as well: they are what old binaries were built with.
 */
#ifndef MARU_COMPAT_H
#define MARU_COMPAT_H

#include "maru/libmaru.h"

/* struct maru_attr before attr_size. */
struct maru_attr_v1 {
	uint64_t ino;
	uint64_t parent;
	uint64_t size;
	uint64_t reserved;
	uint32_t mode;
	uint32_t uid, gid;
	uint32_t nlink;
	uint32_t state;
	uint32_t leases;
	uint64_t xxh3;
	struct timespec atime, mtime, ctime;
	uint32_t rdev;
};

/* struct maru_pool_info before info_size. */
struct maru_pool_info_v1 {
	uint8_t uuid[16];
	uint64_t generation;
	uint64_t size;
	uint64_t align;
	uint64_t data_off;
	char path[MARU_PATH_MAX];
	char uri[MARU_PATH_MAX];
	enum maru_data_path data_path;
	enum maru_coherence coherence;
};

void attr_to_v1(const struct maru_attr *a, struct maru_attr_v1 *o);

int maru_client_pool_info_v1(struct maru_client *c, struct maru_pool_info_v1 *out);
int maru_mkdir_v1(struct maru_client *c, uint64_t parent, const char *name,
		  uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr_v1 *out);
int maru_lookup_v1(struct maru_client *c, uint64_t parent, const char *name,
		   struct maru_attr_v1 *out);
int maru_getattr_v1(struct maru_client *c, uint64_t ino, struct maru_attr_v1 *out);
int maru_setattr_v1(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
		    struct maru_attr_v1 *out);
int maru_symlink_v1(struct maru_client *c, uint64_t parent, const char *name,
		    const char *target, uint32_t uid, uint32_t gid, struct maru_attr_v1 *out);
int maru_link_v1(struct maru_client *c, uint64_t ino, uint64_t newparent,
		 const char *newname, struct maru_attr_v1 *out);
int maru_mknod_v1(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		  uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr_v1 *out);
int maru_file_attr_v1(struct maru_file *f, struct maru_attr_v1 *out);
int maru_file_publish_dir_v1(struct maru_file *f, struct maru_attr_v1 *dir);

#ifdef MARU_SHARED
int maru_client_pool_info_v2(struct maru_client *c, struct maru_pool_info *out);
int maru_mkdir_v2(struct maru_client *c, uint64_t parent, const char *name,
		  uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out);
int maru_lookup_v2(struct maru_client *c, uint64_t parent, const char *name,
		   struct maru_attr *out);
int maru_getattr_v2(struct maru_client *c, uint64_t ino, struct maru_attr *out);
int maru_setattr_v2(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
		    struct maru_attr *out);
int maru_symlink_v2(struct maru_client *c, uint64_t parent, const char *name,
		    const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out);
int maru_link_v2(struct maru_client *c, uint64_t ino, uint64_t newparent,
		 const char *newname, struct maru_attr *out);
int maru_mknod_v2(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		  uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr *out);
int maru_file_attr_v2(struct maru_file *f, struct maru_attr *out);
int maru_file_publish_dir_v2(struct maru_file *f, struct maru_attr *dir);
#endif

#endif
