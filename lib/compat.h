/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/compat.h: the MARU_0.1 layouts of the structs that grew in MARU_0.2
 * and the calls that still take or fill them (compat.c). The ABI test pins these
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

/* struct maru_setattr before sa_size. */
struct maru_setattr_v1 {
	uint32_t mask;
	uint32_t mode, uid, gid;
	struct timespec atime, mtime;
};

/* struct maru_statfs before statfs_size. */
struct maru_statfs_v1 {
	uint64_t capacity;
	uint64_t free;
	uint64_t evictable;
	uint64_t used;
	uint64_t pending;
	uint64_t orphaned;
	uint64_t names;
	uint64_t dirs;
	uint64_t block;
};

/* struct maru_event before event_size. */
struct maru_event_v1 {
	uint64_t seq;
	uint64_t time_ns;
	uint32_t type;
	uint32_t flags;
	uint64_t ino;
	uint64_t parent, parent2;
	char name[MARU_NAME_MAX + 1], name2[MARU_NAME_MAX + 1];
	char path[MARU_PATH_MAX], path2[MARU_PATH_MAX];
};

void compat_attr_to_v1(const struct maru_attr *a, struct maru_attr_v1 *o);
void compat_setattr_from_v1(const struct maru_setattr_v1 *o, struct maru_setattr *sa);
void compat_event_to_v1(const struct maru_event *e, struct maru_event_v1 *o);

int maru_client_pool_info_v1(struct maru_client *c, struct maru_pool_info_v1 *out);
int maru_mkdir_v1(struct maru_client *c, uint64_t parent, const char *name,
		  uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr_v1 *out);
int maru_lookup_v1(struct maru_client *c, uint64_t parent, const char *name,
		   struct maru_attr_v1 *out);
int maru_getattr_v1(struct maru_client *c, uint64_t ino, struct maru_attr_v1 *out);
int maru_setattr_v1(struct maru_client *c, uint64_t ino, const struct maru_setattr_v1 *sa,
		    struct maru_attr_v1 *out);
int maru_statfs_v1(struct maru_client *c, struct maru_statfs_v1 *out);
int maru_events_next_v1(struct maru_events *ev, struct maru_event_v1 *out, int timeout_ms);
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
int maru_statfs_v2(struct maru_client *c, struct maru_statfs *out);
int maru_events_next_v2(struct maru_events *ev, struct maru_event *out, int timeout_ms);
#endif

#endif
