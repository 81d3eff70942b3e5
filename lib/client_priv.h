/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/client_priv.h: the insides of struct maru_client and struct maru_file,
 * shared by the libmaru sources only. conn.c owns the session state and the
 * socket pool and is the only place that talks to marud for a client; every
 * public call builds one request and hands it to client_call().
 *
 * Lock order (outermost first):
 *   maru_file.lock (rwlock)  ->  maru_client.hello_lock  ->  maru_client.lock
 *   maru_client.dp_lock (rwlock) is taken alone, around pool-mapping access,
 *   or inside maru_file.lock.
 * No libmaru lock is held while the generation callback runs.
 */
#ifndef MARU_CLIENT_PRIV_H
#define MARU_CLIENT_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "maru/libmaru.h"
#include "proto.h"
#include "addr.h"
#include "clock.h"

struct dp_ops;

/* One socket of the pool; fd < 0 when closed. */
struct conn {
	int fd;
	int busy;
	uint64_t epoch;		/* session epoch it was attached under */
};

/* What the last HELLO told us; guarded by maru_client.lock. */
struct session {
	uint8_t token[16];
	uint8_t uuid[16];
	uint64_t generation;
	uint64_t epoch;		/* bumped on every new session */
	uint64_t pool_size, pool_align, data_off;
	uint32_t max_frame;
	uint32_t send_max;	/* marud's max-frame: what our frames may carry */
	uint32_t backend;
	int established;
	char pool_path[PROTO_PATH_MAX];
};

/* Per data path transfer counters (index: enum maru_data_path). */
struct dp_counters {
	atomic_uint_fast64_t rd_bytes, rd_ops, wr_bytes, wr_ops;
};

struct client_stats {
	struct dp_counters dp[4];
	atomic_uint_fast64_t requests, reconnects, timeouts, new_sessions;
};

/* The shared mapping of the pool (shm data path). */
struct shm_map {
	uint8_t *base;
	uint64_t size;
	uint8_t uuid[16];
	char path[PROTO_PATH_MAX];
};

struct maru_client {
	struct maru_addr addr;
	struct maru_client_opts opts;
	char uri[MARU_PATH_MAX];
	char name[32];
	uint8_t key[32];
	int has_key;

	pthread_mutex_t lock;		/* session, conns, files, down */
	pthread_cond_t cond;		/* a socket became idle */
	pthread_mutex_t hello_lock;	/* one connect + HELLO at a time */
	struct session s;
	struct conn *conns;
	unsigned int nconns;
	int down;			/* an outage was logged */
	atomic_uint_fast64_t next_reqid;
	atomic_uint_fast64_t last_ok_ms;	/* marud last answered (monotonic) */

	maru_generation_cb gen_cb;	/* notifier: under lock */
	void *gen_arg;
	pthread_t notifier;
	pthread_cond_t notify_cond;
	int notify_stop, notify_pending;
	uint64_t notify_old, notify_new;

	pthread_rwlock_t dp_lock;	/* dp and map */
	const struct dp_ops *dp;
	struct shm_map *map;

	struct maru_file *files;	/* open handles, for client_free */
	struct client_stats st;
};

struct maru_file {
	struct maru_client *c;
	pthread_rwlock_t lock;		/* readers: pread; writers: the rest */
	uint64_t ino;
	uint64_t epoch;			/* session epoch of the handle */
	uint64_t generation;
	_Atomic int pending;
	int dead;			/* marud already dropped it */
	struct proto_attr attr;		/* size/reserved below override it */
	uint64_t size, reserved;
	struct proto_extent *ext;
	uint32_t next;
	uint64_t dirty_lo, dirty_hi;	/* written range since the last sync */
	struct maru_file *prev, *next_file;
};

/* A request to marud: payload p1 (header-sized body + names), then p2 (bulk). */
struct req {
	uint16_t op;
	const void *p1;
	size_t n1;
	const void *p2;
	size_t n2;
	void *rbuf;		/* reply payload goes here if non-NULL ... */
	size_t rcap;		/* ... and fits; else malloc'd into rep */
	void *rep;		/* out: reply payload (rbuf or malloc'd) */
	uint32_t rlen;		/* out */
	int32_t status;		/* out: marud's status */
	uint64_t gen;		/* out: generation the request was sent with */
	uint64_t rgen;		/* out: generation of the reply */
};

/* conn.c */
int client_connect_first(struct maru_client *c);
int client_call(struct maru_client *c, struct req *r);
void req_done(struct req *r);
void client_close_conns(struct maru_client *c);
void client_ping(struct maru_client *c);
/*
 * 0 if marud answered this client less than CLIENT_LIVE_MS ago (asking it
 * once more if not), so the session cannot have ended meanwhile; else
 * -ETIMEDOUT. The shm path calls it before touching pool memory.
 */
#define CLIENT_LIVE_MS	1000
int client_live(struct maru_client *c);
int conn_send_recv(int fd, uint32_t max_frame, struct proto_hdr *h, struct req *r);
int conn_hello(int fd, const struct maru_client *c, uint32_t flags,
	       const uint8_t *token, struct proto_hello_rep *rep);
int conn_set_timeout(int fd, unsigned int ms);

/* client.c */
uint64_t client_session_update(struct maru_client *c, const struct proto_hello_rep *rep);
void client_file_link(struct maru_client *c, struct maru_file *f);
void client_file_unlink(struct maru_client *c, struct maru_file *f);

/* auth.c */
int auth_load_key(const char *path, uint8_t key[32]);
int auth_exchange(int fd, const uint8_t key[32]);

/* ns.c / file.c helpers */
int name_check(const char *name, size_t *len);
void attr_from_proto(const struct proto_attr *p, struct maru_attr *out);
int file_grow(struct maru_file *f, uint64_t need);
int file_check(struct maru_file *f, int want_pending);

#endif
