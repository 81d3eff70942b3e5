/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_fixture.h: a routed client (lib/cluster/
 * route*.c) for the route_*_test files. The membership is real (members.c
 * reading pool records from fake_etcd.c over loopback); the pools are
 * faked by a struct route_ops whose one-pool calls act on a small
 * in-memory tree per pool, counted per pool, so a test sees which pool
 * each call reached. Files handed out (create, open) are opaque pointers
 * into that tree: nothing reads or writes their bytes.
 */
#ifndef ROUTE_FIXTURE_H
#define ROUTE_FIXTURE_H

#include <pthread.h>
#include <stdint.h>

#include "maru/libmaru.h"
#include "fake_etcd.h"
#include "route.h"

#define RF_POOLS	3
#define RF_ENTS		256
#define RF_EVQ		32

struct rf_ent {
	int used;
	uint64_t parent, ino;
	char name[64];
	uint32_t mode, state;
	char target[128];
};

struct rf_pool {
	char uuid[40];
	char uri[64];			/* maru://127.0.0.1:PORT */
	int down;			/* client_new fails */
	int64_t since;			/* its record's */
	struct rf_ent e[RF_ENTS];
	uint64_t next_ino;
	unsigned int calls, connects, lc_clears;
	uint32_t pinned;
	uint32_t hint_actions;		/* what its region extension takes */
	unsigned int hints;		/* hint calls that reached it */
	struct maru_hint_range hint[8];	/* the last one's ranges (its ids) */
	size_t nhint;
	char rmdir_race[32];		/* its next rmdir finds this name made meanwhile */
	uint64_t quota;			/* its tenant quota; usage: 10 x index + 1 */
	char stats[512];		/* its Prometheus text */
	struct maru_event evq[RF_EVQ];	/* events it will hand out */
	int evn, evhead, ev_open;
	uint64_t acked;			/* the last seq acknowledged */
};

struct rf {
	struct fake_etcd e;
	pthread_mutex_t mu;		/* the pools */
	struct rf_pool pool[RF_POOLS];
	int npool;
	struct maru_cluster *cl;	/* the test's own view, for owners */
	struct maru_client *c;		/* the routed client */
	struct route_ops ops;
};

/*
 * Start etcd with n pools (records put, all formed together), open c;
 * the pools in bitmask down refuse to connect.
 */
void rf_setup(struct rf *f, int n, unsigned int down);
void rf_teardown(struct rf *f);
/* Put pool i's record again with state ("active", "draining"). */
void rf_put(struct rf *f, int i, const char *state);
/*
 * A pool joins (its record put with since, seconds since the epoch);
 * waits until both the routed client and the test's view see it. Its index.
 */
int rf_join(struct rf *f, int64_t since);
/* The pool index owning path (its placement now). */
int rf_owner(struct rf *f, const char *path);
/* A name "PREFIXk" in directory dir ("" root) owned by pool i, into buf. */
void rf_name_on(struct rf *f, const char *dir, const char *prefix, int i, char *buf,
		size_t len);
/*
 * A root name ("movedK") owned by pool joined and placed before the join
 * on another pool, whose index goes to *prev.
 */
void rf_moved_name(struct rf *f, int joined, char *buf, size_t len, int *prev);
/* The entry named name in directory ino of pool i, or NULL. */
struct rf_ent *rf_find(struct rf *f, int i, uint64_t parent, const char *name);
/* Add a file (mode S_IFREG...) or directory to pool i; its ino. */
uint64_t rf_add(struct rf *f, int i, uint64_t parent, const char *name, uint32_t mode);
unsigned int rf_calls(struct rf *f, int i);
/* Queue an event on pool i's stream. */
void rf_event(struct rf *f, int i, const struct maru_event *e);

#endif
