/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/compat.c: the MARU_0.1 versions of the calls whose structs grew in
 * MARU_0.2 (struct maru_attr, maru_pool_info, maru_setattr, maru_statfs
 * and maru_event gained their size field first). A binary built against
 * MARU_0.1's libmaru.h is bound to
 * these by the symbol versions in libmaru.sym; each calls the current
 * function into the current struct and copies the fields the old, smaller
 * layout has.
 *
 * In libmaru.so (MARU_SHARED) such a call has two versions of one name,
 * so neither may be the plain name: lib/meson.build renames the current
 * definitions to NAME_impl there (-DNAME=NAME_impl), and this file gives
 * NAME@@MARU_0.2 (the default new binaries bind to) and NAME@MARU_0.1.
 * The static copy the unit tests link has the plain names and the *_v1
 * functions without versions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#ifdef MARU_SHARED
/*
 * .symver directives rather than __attribute__((symver)): clang, which the
 * sanitizer build uses, does not know the attribute; both know the directive.
 */
#define V1(name)	__asm__(".symver " #name "_v1, " #name "@MARU_0.1");
#define V2(name)	__asm__(".symver " #name "_v2, " #name "@@MARU_0.2");
#else
#define V1(name)
#endif

void compat_attr_to_v1(const struct maru_attr *a, struct maru_attr_v1 *o)
{
	*o = (struct maru_attr_v1){
		.ino = a->ino, .parent = a->parent, .size = a->size,
		.reserved = a->reserved, .mode = a->mode, .uid = a->uid, .gid = a->gid,
		.nlink = a->nlink, .state = a->state, .leases = a->leases,
		.xxh3 = a->xxh3, .atime = a->atime, .mtime = a->mtime,
		.ctime = a->ctime, .rdev = a->rdev,
	};
}

void compat_setattr_from_v1(const struct maru_setattr_v1 *o, struct maru_setattr *sa)
{
	*sa = (struct maru_setattr){
		.sa_size = sizeof(*sa), .mask = o->mask, .mode = o->mode, .uid = o->uid,
		.gid = o->gid, .atime = o->atime, .mtime = o->mtime,
	};
}

void compat_event_to_v1(const struct maru_event *e, struct maru_event_v1 *o)
{
	o->seq = e->seq;
	o->time_ns = e->time_ns;
	o->type = e->type;
	o->flags = e->flags;
	o->ino = e->ino;
	o->parent = e->parent;
	o->parent2 = e->parent2;
	memcpy(o->name, e->name, sizeof(o->name));
	memcpy(o->name2, e->name2, sizeof(o->name2));
	memcpy(o->path, e->path, sizeof(o->path));
	memcpy(o->path2, e->path2, sizeof(o->path2));
}

/* rc of a call that filled a; a copied to o when both are there. */
static int attr_out(int rc, const struct maru_attr *a, struct maru_attr_v1 *o)
{
	if (o && (rc == 0 || a->attr_size))
		compat_attr_to_v1(a, o);
	return rc;
}

V1(maru_client_pool_info)
int maru_client_pool_info_v1(struct maru_client *c, struct maru_pool_info_v1 *out)
{
	struct maru_pool_info pi;
	int rc;

	if (!out)
		return maru_client_pool_info(c, NULL);
	rc = maru_client_pool_info(c, &pi);
	if (rc)
		return rc;
	memcpy(out->uuid, pi.uuid, sizeof(out->uuid));
	out->generation = pi.generation;
	out->size = pi.size;
	out->align = pi.align;
	out->data_off = pi.data_off;
	memcpy(out->path, pi.path, sizeof(out->path));
	memcpy(out->uri, pi.uri, sizeof(out->uri));
	out->data_path = pi.data_path;
	out->coherence = pi.coherence;
	return 0;
}

V1(maru_mkdir)
int maru_mkdir_v1(struct maru_client *c, uint64_t parent, const char *name,
		  uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };

	return attr_out(maru_mkdir(c, parent, name, mode, uid, gid, out ? &a : NULL), &a, out);
}

V1(maru_lookup)
int maru_lookup_v1(struct maru_client *c, uint64_t parent, const char *name,
		   struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };

	return attr_out(maru_lookup(c, parent, name, out ? &a : NULL), &a, out);
}

V1(maru_getattr)
int maru_getattr_v1(struct maru_client *c, uint64_t ino, struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };

	return attr_out(maru_getattr(c, ino, out ? &a : NULL), &a, out);
}

V1(maru_setattr)
int maru_setattr_v1(struct maru_client *c, uint64_t ino, const struct maru_setattr_v1 *sa,
		    struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };
	struct maru_setattr s;

	if (!sa)
		return -EINVAL;
	compat_setattr_from_v1(sa, &s);
	return attr_out(maru_setattr(c, ino, &s, out ? &a : NULL), &a, out);
}

V1(maru_statfs)
int maru_statfs_v1(struct maru_client *c, struct maru_statfs_v1 *out)
{
	struct maru_statfs s;
	int rc;

	if (!out)
		return -EINVAL;
	rc = maru_statfs(c, &s);
	if (rc == 0)
		*out = (struct maru_statfs_v1){
			.capacity = s.capacity, .free = s.free, .evictable = s.evictable,
			.used = s.used, .pending = s.pending, .orphaned = s.orphaned,
			.names = s.names, .dirs = s.dirs, .block = s.block,
		};
	return rc;
}

V1(maru_events_next)
int maru_events_next_v1(struct maru_events *ev, struct maru_event_v1 *out, int timeout_ms)
{
	struct maru_event *e;
	int rc;

	if (!out)
		return -EINVAL;
	/* 8 KiB and more: not on the caller's stack twice */
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	rc = maru_events_next(ev, e, timeout_ms);
	if (rc == 1)
		compat_event_to_v1(e, out);
	free(e);
	return rc;
}

V1(maru_symlink)
int maru_symlink_v1(struct maru_client *c, uint64_t parent, const char *name,
		    const char *target, uint32_t uid, uint32_t gid, struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };

	return attr_out(maru_symlink(c, parent, name, target, uid, gid, out ? &a : NULL),
			&a, out);
}

V1(maru_link)
int maru_link_v1(struct maru_client *c, uint64_t ino, uint64_t newparent,
		 const char *newname, struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };

	return attr_out(maru_link(c, ino, newparent, newname, out ? &a : NULL), &a, out);
}

V1(maru_mknod)
int maru_mknod_v1(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		  uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };

	return attr_out(maru_mknod(c, parent, name, mode, rdev, uid, gid, out ? &a : NULL),
			&a, out);
}

V1(maru_file_attr)
int maru_file_attr_v1(struct maru_file *f, struct maru_attr_v1 *out)
{
	struct maru_attr a = { 0 };

	return attr_out(maru_file_attr(f, out ? &a : NULL), &a, out);
}

V1(maru_file_publish_dir)
int maru_file_publish_dir_v1(struct maru_file *f, struct maru_attr_v1 *dir)
{
	struct maru_attr a = { 0 };
	int rc = maru_file_publish_dir(f, dir ? &a : NULL);

	/* the directory as sent, or ino 0 when it was not (as before) */
	if (dir)
		compat_attr_to_v1(&a, dir);
	return rc;
}

#ifdef MARU_SHARED
/* The defaults: the current calls (NAME, renamed NAME_impl) as NAME@@MARU_0.2. */
V2(maru_client_pool_info)
int maru_client_pool_info_v2(struct maru_client *c, struct maru_pool_info *out)
{
	return maru_client_pool_info(c, out);
}

V2(maru_mkdir)
int maru_mkdir_v2(struct maru_client *c, uint64_t parent, const char *name,
		  uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	return maru_mkdir(c, parent, name, mode, uid, gid, out);
}

V2(maru_lookup)
int maru_lookup_v2(struct maru_client *c, uint64_t parent, const char *name,
		   struct maru_attr *out)
{
	return maru_lookup(c, parent, name, out);
}

V2(maru_getattr)
int maru_getattr_v2(struct maru_client *c, uint64_t ino, struct maru_attr *out)
{
	return maru_getattr(c, ino, out);
}

V2(maru_setattr)
int maru_setattr_v2(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
		    struct maru_attr *out)
{
	return maru_setattr(c, ino, sa, out);
}

V2(maru_symlink)
int maru_symlink_v2(struct maru_client *c, uint64_t parent, const char *name,
		    const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	return maru_symlink(c, parent, name, target, uid, gid, out);
}

V2(maru_link)
int maru_link_v2(struct maru_client *c, uint64_t ino, uint64_t newparent,
		 const char *newname, struct maru_attr *out)
{
	return maru_link(c, ino, newparent, newname, out);
}

V2(maru_mknod)
int maru_mknod_v2(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		  uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	return maru_mknod(c, parent, name, mode, rdev, uid, gid, out);
}

V2(maru_file_attr)
int maru_file_attr_v2(struct maru_file *f, struct maru_attr *out)
{
	return maru_file_attr(f, out);
}

V2(maru_file_publish_dir)
int maru_file_publish_dir_v2(struct maru_file *f, struct maru_attr *dir)
{
	return maru_file_publish_dir(f, dir);
}

V2(maru_statfs)
int maru_statfs_v2(struct maru_client *c, struct maru_statfs *out)
{
	return maru_statfs(c, out);
}

V2(maru_events_next)
int maru_events_next_v2(struct maru_events *ev, struct maru_event *out, int timeout_ms)
{
	return maru_events_next(ev, out, timeout_ms);
}
#endif
