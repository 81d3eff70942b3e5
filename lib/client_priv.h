/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/client_priv.h: the insides of struct maru_client and struct maru_file,
 * shared by the libmaru sources only; what each file does with them is in
 * its own header. Calls run one way: the public API (client.c ns.c file.c
 * events.c stats.c map.c) -> session.c / transport.c -> auth.c frame.c ->
 * the data paths in dp/ (through struct dp_ops) -> pool_locate.c.
 * cancel.c (the thread's struct maru_cancel) is a leaf transport.c waits
 * through. transport.c is the only place that talks to marud for a client; every
 * public call builds one request and hands it to transport_call(). A data
 * path that needs marud (tcp's frames, rdma's RKEY) or the session's facts
 * reaches them through c->env, callbacks client.c gives the client when it
 * makes it: no data path calls back up by name.
 *
 * Lock order (outermost first):
 *   maru_file.lock (rwlock)  ->  maru_client.dp_lock (rwlock)  ->
 *   maru_client.hello_lock  ->  maru_client.lock
 *   dp_lock is held for reading around a transfer of a data path with
 *   state of its own (the shm mapping, the rdma QP), for writing while
 *   session.c opens or closes one; the rdma path's own lock comes after it.
 *   splice_src.lock (splice.c, inside dp_lock) and lease_cache.lock
 *   (lease_cache.c) are leaves.
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
#include "clog.h"
#include "hist.h"

struct dp_ops;
struct maru_client;
struct lease_cache;
struct splice_src;
struct pool_map;
struct rdma_dp;
struct rdma_keys;
struct req;
struct shm_dp;
struct tcp_dp;
struct tcp_stream;
struct tls_creds;

/* One socket of the pool; fd < 0 when closed. */
struct conn {
	int fd;
	int busy;
	uint64_t epoch;		/* session epoch it was attached under */
	unsigned int tmo_ms;	/* its SO_RCVTIMEO/SO_SNDTIMEO now (transport.c) */
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
	uint32_t hint_actions;	/* HELLO: what marud's region extension takes */
	int established;
	uint32_t rdma_port, rdma_flags;	/* 0: marud offered no rdma path */
	char rdma_host[64];
	char pool_path[PROTO_PATH_MAX];
};

/*
 * The session's facts a data path may need after it was opened (rdma, to
 * connect again after an error or in a new session; tcp, the frame size).
 */
struct dp_facts {
	uint64_t epoch, generation;
	uint8_t token[16];
	uint32_t send_max;
	uint32_t rdma_port, rdma_flags;
	char rdma_host[64];
};

/*
 * What the data paths need from above, as callbacks (client.c fills them
 * with transport_call and session_facts when it makes the client), so that
 * no file of dp/ names a function of session.c or transport.c.
 */
struct dp_env {
	/* One request to marud on the control sockets: tcp's READ/WRITE, rdma's RKEY. */
	int (*call)(struct maru_client *c, struct req *r);
	/* A copy of the current session's facts. */
	void (*facts)(struct maru_client *c, struct dp_facts *out);
};

/* Per data path transfer counters (index: enum maru_data_path). */
struct dp_counters {
	atomic_uint_fast64_t rd_bytes, rd_ops, wr_bytes, wr_ops;
};

/* The rdma data path's own counters (dp/rdma*.c; kinds: enum rdma_err). */
enum rdma_err { RDMA_ERR_REMOTE_ACCESS, RDMA_ERR_RETRY, RDMA_ERR_FLUSH, RDMA_ERR_LOCAL,
		RDMA_ERR_TIMEOUT, RDMA_ERR_OTHER, RDMA_ERR_KINDS };
struct rdma_counters {
	/* qp_connects also numbers the QPs: rkeys are bound to one */
	atomic_uint_fast64_t wrs_read, wrs_write, qp_connects, qp_errors, rkey_calls;
	atomic_int_fast64_t in_flight;
	atomic_uint_fast64_t err[RDMA_ERR_KINDS];
};

/*
 * The tcp data path's pipelined transfers (dp/tcp*.c): READ and WRITE
 * frames sent (the round trips a transfer cost), its own sockets, and the
 * bytes it holds read ahead or written behind (bounded by stream_bytes).
 */
struct tcp_counters {
	atomic_uint_fast64_t rd_frames, wr_frames, dials, pipe_errors, refused, recovered;
	/* frames sent with nothing else outstanding: each waits a whole round
	 * trip (in line, every frame; streamed, the first of a window) */
	atomic_uint_fast64_t rd_trips, wr_trips;
	atomic_int_fast64_t held;
};

struct client_stats {
	/* issue 25: each request's round trip by op (transport.c), each
	 * transfer's time by path and direction (file.c; [path][write]) */
	struct hist call_lat[OP_MAX];
	struct hist dp_lat[4][2];
	struct dp_counters dp[4];
	struct rdma_counters rdma;
	struct tcp_counters tcp;
	atomic_uint_fast64_t poisoned;	/* file.c: pending versions a failed write abandoned */
	atomic_uint_fast64_t requests, reconnects, timeouts, new_sessions;
	atomic_uint_fast64_t cancels;	/* calls ended by their thread's cancel token */
	atomic_uint_fast64_t spin_replies, spin_misses;	/* transport.c reply_wait */
};

struct maru_client {
	struct maru_addr addr;
	struct maru_client_opts opts;
	char uri[MARU_PATH_MAX];
	char name[32];
	uint8_t key[32];
	int has_key;
	struct tls_creds *tls;		/* tlsdial.c: TCP sockets speak TLS, or NULL */
	atomic_uint tls_ktls;		/* sessions the kernel carried (tlsdial.c) */
	atomic_uint tls_sessions;
	char tls_desc[96];		/* the last session's parameters, under lock */
	char tls_said[160];		/* the last handshake failure logged, under lock */
	char key_name[64];		/* scoped key (keyfile.h): its name; "": admin */

	pthread_mutex_t lock;		/* session, conns, files, down */
	pthread_cond_t cond;		/* a socket became idle */
	pthread_mutex_t hello_lock;	/* one connect + HELLO at a time */
	struct session s;
	struct conn *conns;
	unsigned int nconns;
	int down;			/* an outage was logged */
	atomic_uint_fast64_t next_reqid;
	atomic_uint_fast64_t last_ok_ms;	/* marud last answered (monotonic) */
	atomic_uint_fast64_t down_since_ms;	/* transport.c: first failure of an outage; 0: up */
	atomic_uint_fast64_t last_fail_ms;	/* transport.c: a call last waited out its bound */
	atomic_int in_flight;		/* requests sent and not yet answered */
	atomic_int spin_skip;		/* requests left that must not poll */

	maru_generation_cb gen_cb;	/* notifier: under lock */
	void *gen_arg;
	pthread_t notifier;
	pthread_cond_t notify_cond;
	int notify_stop, notify_pending;
	uint64_t notify_old, notify_new;
	atomic_uint_fast64_t gen_epoch;	/* maru_client_epoch(): generation changes told */

	struct dp_env env;		/* set once by client.c; read-only after */
	pthread_rwlock_t dp_lock;	/* dp, map, shm, rdma */
	const struct dp_ops *dp;
	struct pool_map *map;		/* dp/shm.c: the pool mapped here, or NULL */
	struct shm_dp *shm;		/* dp/shm.c: its pages populated, or NULL */
	atomic_int remap;		/* the pool moved: choose the data path again */
	struct rdma_dp *rdma;		/* dp/rdma*.c: its QP and staging, or NULL */
	struct tcp_dp *tcp;		/* dp/tcp_pipe.c: idle pipelined sockets, or NULL */

	struct maru_file *files;	/* open handles, for client_free */
	struct client_stats st;
	struct splice_src *splice;	/* splice.c: the splice descriptor */
	struct lease_cache *lc;		/* lease_cache.c; NULL: none */
	/*
	 * Issue 24, the cluster mount (lib/cluster/route.h): a routed client
	 * has route set and no session of its own; each of its pools' clients
	 * has up (the routed client) and slot, the pool's tag in file ids.
	 */
	struct route *route;
	struct maru_client *up;
	unsigned int slot;
};

/* A file id as the caller sees it: tagged with its pool on a routed client. */
static inline uint64_t client_ino(const struct maru_client *c, uint64_t ino)
{
	return c->up ? ((uint64_t)(c->slot + 1) << 56) | ino : ino;
}

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
	/* the data path that keeps state on this handle (its forget drops it) */
	const struct dp_ops *held;
	struct rdma_keys *rk;		/* dp/rdma_keys.c: rkeys of this version */
	/* dp/tcp.c: read ahead or written behind on this handle (CAS-set) */
	struct tcp_stream *_Atomic ts;
	/*
	 * -errno once a transfer to this pending version failed (the first
	 * error): it is never published, and every later write, sync and
	 * publish returns it (file.c abandons the version at publish).
	 */
	_Atomic int poison;
	/* xxh3 of bytes [0, hashed) of a pending version, taken while the data
	 * path copied them (file.c decides, the data path feeds it); NULL once
	 * the bytes went in out of order, or someone may write them directly */
	struct hash_stream *hs;
	uint64_t hashed;
	_Atomic int hash_off;		/* never (again) stream-hash this handle */
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
	int asked_again;	/* transport.c: a PUBLISH asked again after a restart */
};

#endif
