/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/cluster/route_priv.h: the insides of a routed client (route.h),
 * shared by route*.c only. route_ids.c owns the tables (the pools by
 * slot, the directories by id and path) and the lazy connection of a
 * pool's client; route.c the life of the router and the walk that finds a
 * directory's id on one pool; route_ns.c, route_io.c and route_stats.c the
 * calls.
 *
 * Lock: struct route.lock guards the tables; no call to a pool is made
 * with it held. connect_lock serialises connecting a pool's client.
 */
#ifndef MARU_ROUTE_PRIV_H
#define MARU_ROUTE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "maru/libmaru.h"
#include "htab.h"
#include "route.h"

#define ROUTE_POOLS	64		/* slots: pools ever seen by one client */
#define ROUTE_TAG_SHIFT	56
#define ROUTE_LOCAL_MASK ((1ULL << ROUTE_TAG_SHIFT) - 1)
#define ROUTE_RETRY_MS	1000		/* a pool that failed to connect: wait */
#define ROUTE_MEMBERS_MS 200		/* pools' states read again after this */
#define ROUTE_AWAY_MS	5000		/* a pool out of reach: skipped for */
#define ROUTE_FORM_S	30		/* members.c's: founders joined within */
#define ROUTE_SETTLE_S	600		/* members.c's default settle_s */

enum { ROUTE_ACTIVE = 0, ROUTE_DRAINING = 1, ROUTE_GONE = 2 };

struct route;

struct route_pool {
	struct route *r;		/* for the generation callback */
	unsigned int slot;
	struct maru_cluster_pool rec;	/* its record as last read */
	struct maru_client *c;		/* set once connected, freed at the end */
	int state;			/* ROUTE_* */
	uint64_t retry_ms;		/* no new connect before (monotonic) */
	atomic_uint_fast64_t away_ms;	/* found out of reach: until then */
	int64_t back_s;			/* time() it came back after gone, or 0 */
};

/* A directory: its path from the root ("" root, "a/b") and its id per pool. */
struct route_dir {
	char *path;
	uint64_t id;
	uint64_t local[ROUTE_POOLS];	/* 0: not known yet */
};

struct route {
	struct maru_client *self;
	const struct route_ops *ops;
	struct maru_cluster *cl;
	struct maru_client_opts opts;	/* for each pool's client; uri per pool */
	char *key_file, *tls_ca, *tls_cert, *tls_key;
	char uri[MARU_PATH_MAX];
	char name[32];
	/* etcd's TLS and user, from the URI's query (route.c) */
	char *query;
	const char *etcd_ca, *etcd_cert, *etcd_key, *etcd_user;
	char etcd_password[128];
	pthread_mutex_t lock;
	pthread_mutex_t connect_lock;
	struct route_pool pool[ROUTE_POOLS];
	unsigned int npool;
	struct route_dir **dir;		/* id - 1 -> directory; NULL: removed */
	size_t ndir, dircap;
	struct htab by_path;		/* the directories by path */
	int by_path_ok;
	atomic_uint_fast64_t gen;
	atomic_uint_fast64_t members_ms;	/* route_members() last read them */
	atomic_uint_fast64_t renames_local, renames_moved, bytes_moved, prev_hits;
};

static inline uint64_t route_tag(unsigned int slot, uint64_t local)
{
	return ((uint64_t)(slot + 1) << ROUTE_TAG_SHIFT) | local;
}

/* the slot of a file id, -1 for a directory id */
static inline int route_slot_of(uint64_t ino)
{
	return (int)(ino >> ROUTE_TAG_SHIFT) - 1;
}

/* route_ids.c: directories */
int route_dirs_init(struct route *r);
void route_dirs_fini(struct route *r);
int route_dir_path(struct route *r, uint64_t id, char *buf, size_t len);
uint64_t route_dir_intern(struct route *r, const char *path);
uint64_t route_dir_find(struct route *r, const char *path);
void route_dir_drop(struct route *r, const char *path);
uint64_t route_dir_local_get(struct route *r, uint64_t id, unsigned int slot);
void route_dir_local_set(struct route *r, uint64_t id, unsigned int slot, uint64_t local);
/* the router id of the directory pool slot knows as local, 0 if none known */
uint64_t route_dir_of_local(struct route *r, unsigned int slot, uint64_t local);
/* the slot of a pool's client, -1 if it is none of this router's */
int route_slot_of_client(struct route *r, const struct maru_client *sub);
void route_dir_forget_slot(struct route *r, unsigned int slot);
int route_join(const char *dir, const char *name, char *buf, size_t len);

/* route_ids.c: pools */
int route_members(struct route *r, unsigned int *slots, unsigned int max);
int route_owner(struct route *r, const char *path, int *owner, int *prev);
int route_sub(struct route *r, unsigned int slot, struct maru_client **out);
int route_unreachable(int rc);
void route_pool_heard(struct route *r, int slot, int rc);
int route_pool_away(struct route *r, unsigned int slot);

/* route_ns.c */
int route_name_path(struct route *r, uint64_t parent, const char *name, char *dir,
		    char *path);
int route_find(struct route *r, uint64_t parent, const char *name, const char *path,
	       int *slot, struct maru_attr *a);
int route_new_at(struct route *r, uint64_t parent, const char *path, int *slot,
		 struct maru_client **sub, uint64_t *local);

/* route.c */
int route_dir_on(struct route *r, uint64_t id, unsigned int slot, int create,
		 uint64_t *local);
void route_fix_attr(struct route *r, unsigned int slot, uint64_t parent, const char *path,
		    struct maru_attr *a);

/*
 * The pool in slot and its own id of directory parent, for a call there;
 * a directory that pool lacks is -ENOTDIR (the callers say -ENOENT).
 */
static inline int route_at(struct route *r, int slot, uint64_t parent,
			   struct maru_client **sub, uint64_t *local)
{
	int rc = route_dir_on(r, parent, (unsigned int)slot, 0, local);

	return rc ? rc : route_sub(r, (unsigned int)slot, sub);
}

#endif
