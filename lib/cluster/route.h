/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/cluster/route.h: the routed client of a cluster (maru_client_new()
 * with a maru+etcd:// URI). It holds one ordinary client per pool of the
 * cluster and sends each call to the pool that owns the name (members.c's
 * placement); directories exist on every pool. The public entry points
 * (client.c ns.c link.c file_open.c stats.c pin.c events.c) call route_*()
 * when c->route is set; route*.c reach the one-pool calls only through
 * the struct route_ops client.c hands to route_client_new(), so calls run
 * one way: public entry -> route*.c -> (table) one-pool calls.
 *
 * Ids (marufs-cluster(7)): a file's id is its pool's id with the pool's
 * slot + 1 in the top 8 bits; a directory's id is the router's own (top
 * byte 0, MARU_ROOT_ID the root), mapped to its path.
 */
#ifndef MARU_ROUTE_H
#define MARU_ROUTE_H

#include <stdint.h>
#include <sys/types.h>

#include "maru/libmaru.h"

/* The one-pool calls the router uses, filled by client.c. */
struct route_ops {
	int (*client_new)(const struct maru_client_opts *o, struct maru_client **out);
	void (*client_free)(struct maru_client *c);
	int (*pool_info)(struct maru_client *c, struct maru_pool_info *out);
	uint64_t (*epoch)(struct maru_client *c);	/* its generation changes */
	int (*mkdir)(struct maru_client *c, uint64_t parent, const char *name,
		     uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out);
	int (*rmdir)(struct maru_client *c, uint64_t parent, const char *name);
	int (*lookup)(struct maru_client *c, uint64_t parent, const char *name,
		      struct maru_attr *out);
	int (*unlink)(struct maru_client *c, uint64_t parent, const char *name);
	int (*getattr)(struct maru_client *c, uint64_t ino, struct maru_attr *out);
	int (*setattr)(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
		       struct maru_attr *out);
	int (*rename_seq)(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			  const char *nn, unsigned int flags, uint64_t *seq);
	int (*readdir)(struct maru_client *c, uint64_t dir, uint64_t cookie,
		       maru_readdir_cb cb, void *arg);
	int (*symlink)(struct maru_client *c, uint64_t parent, const char *name,
		       const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out);
	int (*readlink)(struct maru_client *c, uint64_t ino, char *buf, size_t size);
	int (*link)(struct maru_client *c, uint64_t ino, uint64_t np, const char *nn,
		    struct maru_attr *out);
	int (*mknod)(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		     uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr *out);
	int (*file_create)(struct maru_client *c, uint64_t parent, const char *name,
			   uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
			   uint64_t size_hint, struct maru_file **out);
	int (*file_rewrite)(struct maru_client *c, uint64_t ino, unsigned int flags,
			    uint64_t size_hint, struct maru_file **out);
	int (*file_open)(struct maru_client *c, uint64_t parent, const char *name,
			 struct maru_file **out);
	int (*file_open_ino)(struct maru_client *c, uint64_t ino, struct maru_file **out);
	int (*statfs)(struct maru_client *c, struct maru_statfs *out);
	ssize_t (*stats_text)(struct maru_client *c, char *buf, size_t len);
	int (*pin_set)(struct maru_client *c, uint64_t ino, uint32_t seconds);
	int (*pin_get)(struct maru_client *c, uint64_t ino);
	uint32_t (*hint_actions)(struct maru_client *c);
	int (*hint)(struct maru_client *c, int action, const char *request,
		    const struct maru_hint_range *r, size_t n);
	int (*ns_usage)(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out);
	int (*events_open)(struct maru_client *c, uint64_t after, struct maru_events **out);
	int (*events_next)(struct maru_events *ev, struct maru_event *out, int timeout_ms);
	int (*events_ack)(struct maru_events *ev, uint64_t seq);
	int (*events_up)(struct maru_events *ev, uint64_t *losses);
	void (*events_close)(struct maru_events *ev);
	int (*lc_take)(struct maru_client *c, uint64_t ino, struct maru_file **out);
	void (*lc_drop)(struct maru_client *c, uint64_t ino);
	void (*lc_clear)(struct maru_client *c);
	void (*lc_expire)(struct maru_client *c);
	unsigned int (*lc_count)(struct maru_client *c);
};

/* 1 when uri names a cluster (maru+etcd://) */
int route_uri(const char *uri);

/* route.c */
int route_client_new(const struct maru_client_opts *o, const struct route_ops *ops,
		     struct maru_client **out);
void route_client_free(struct maru_client *c);
int route_pool_info(struct maru_client *c, struct maru_pool_info *out);
uint64_t route_epoch(struct maru_client *c, uint64_t id);
int route_pool_at(struct maru_client *c, unsigned int i, struct maru_cluster_pool *member,
		  struct maru_pool_info *info, int *state);

/* route_ns.c */
int route_mkdir(struct maru_client *c, uint64_t parent, const char *name,
		uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out);
int route_rmdir(struct maru_client *c, uint64_t parent, const char *name);
int route_lookup(struct maru_client *c, uint64_t parent, const char *name,
		 struct maru_attr *out);
int route_unlink(struct maru_client *c, uint64_t parent, const char *name);
int route_getattr(struct maru_client *c, uint64_t ino, struct maru_attr *out);
void route_publish_dir(struct maru_client *c, struct maru_client *sub, struct maru_attr *dir);
int route_setattr(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
		  struct maru_attr *out);
int route_symlink(struct maru_client *c, uint64_t parent, const char *name,
		  const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out);
int route_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size);
int route_link(struct maru_client *c, uint64_t ino, uint64_t np, const char *nn,
	       struct maru_attr *out);
int route_mknod(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr *out);
int route_exists(struct maru_client *c, uint64_t parent, const char *const *names,
		 size_t n, uint8_t *out);

/* route_io.c */
int route_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
		     const char *nn, unsigned int flags, uint64_t *seq);
int route_readdir(struct maru_client *c, uint64_t dir, uint64_t cookie,
		  maru_readdir_cb cb, void *arg);
int route_file_create(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
		      uint64_t size_hint, struct maru_file **out);
int route_file_rewrite(struct maru_client *c, uint64_t ino, unsigned int flags,
		       uint64_t size_hint, struct maru_file **out);
int route_file_open(struct maru_client *c, uint64_t parent, const char *name,
		    struct maru_file **out);
int route_file_open_ino(struct maru_client *c, uint64_t ino, struct maru_file **out);
int route_pin(struct maru_client *c, uint64_t ino, uint32_t seconds, int query);
/* the lease cache: each pool's client keeps its own (what = ROUTE_LC_*) */
enum { ROUTE_LC_TAKE, ROUTE_LC_DROP, ROUTE_LC_CLEAR, ROUTE_LC_EXPIRE, ROUTE_LC_COUNT };
int route_lease_cache(struct maru_client *c, int what, uint64_t ino, struct maru_file **out);

/* route_events.c: the pools' event streams merged */
struct route_events;
int route_events_open(struct maru_client *c, struct route_events **out);
int route_events_next(struct route_events *re, struct maru_event *out, int timeout_ms);
int route_events_ack(struct route_events *re, uint64_t seq);
int route_events_up(struct route_events *re, uint64_t *losses);
void route_events_close(struct route_events *re);

/* route_hint.c: hints to the pools holding their versions; usage summed */
uint32_t route_hint_actions(struct maru_client *c);
int route_hint(struct maru_client *c, int action, const char *request,
	       const struct maru_hint_range *v, size_t n);
int route_ns_usage(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out);

/* route_stats.c */
int route_statfs(struct maru_client *c, struct maru_statfs *out);
ssize_t route_stats_text(struct maru_client *c, char *buf, size_t len);

#endif
