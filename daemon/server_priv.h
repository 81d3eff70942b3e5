/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/server_priv.h: the insides of marud's server, shared by the files
 * that make it up and by nothing else: struct server (owned by server.c,
 * which creates and frees it), struct listener (listen.c) and struct conn
 * (conn.c), plus the per-connection state dispatch.c and the handlers read
 * and set. Who may call whom runs one way:
 *
 *   server.c -> listen.c -> conn.c -> dispatch.c -> subscribe.c, handlers/
 *            -> wire.c (a connection's socket) -> proto
 *   listen.c, conn.c, handlers/handshake.c -> admit.c -> refusals.c, wire.c
 *
 * and everything at or below dispatch.c calls dir_*(), session_*(),
 * alloc_*() and the pool. The locks are documented by the files that own
 * them: conns_lock by conn.c, admit_lock by admit.c, the refusal log's by
 * refusals.c, subs_lock and sub.wlock by subscribe.c. None
 * is taken under another, and none is held across a dir_*() call.
 */
#ifndef MARUD_SERVER_PRIV_H
#define MARUD_SERVER_PRIV_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/un.h>

#include "conf.h"
#include "hist.h"
#include "proto.h"
#include "refusals.h"
#include "server.h"
#include "session.h"
#include "tenant.h"

struct listener {
	int fd;
	int is_unix;
	char uri[PATH_MAX];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

struct conn {
	struct server *srv;
	struct conn *prev, *next;	/* srv->conns_lock */
	int fd;
	int is_unix;
	char peer[128];
	struct session *sess;
	int authed;
	int auth_stage;
	struct tenant *tenant;	/* tenant.h: the key AUTH proved; NULL: admin */
	uint8_t nonce_c[32], nonce_s[32];
	uint8_t *buf;
	size_t cap;
	uint64_t unread;	/* request payload still in the socket (WRITE) */
	int replied;		/* the handler sent its own reply */
	int close;		/* drop the connection after this request */
	uint64_t cache_ino;	/* version whose attr+extents the reply holds */
	struct cache_reply *cached;
	uint8_t owner[SESSION_TOKEN_BYTES];	/* HELLO_F_EVENTS: whose stream */
	int has_owner;
	uint64_t owner_sid;	/* that session's directory id at HELLO, 0: none */
	int dirattr;		/* HELLO_F_DIRATTR: PUBLISH replies carry the dir's attr */
	unsigned int refusals;	/* refused version requests logged */
	uint64_t ext_id;	/* handlers/hint.c: its session's hint id, 0 none yet */
	/* wire.c: bytes read ahead (in[in_off..in_len)), replies held for one send */
	uint8_t *in;
	uint32_t in_off, in_len, in_cap;
	struct pbuf outq;
	int batch;		/* wire_reply() appends to outq instead of sending */
	int undeliverable;	/* this request's socket broke: its reply cannot arrive */
	struct conn_loop *loop;	/* conn.c: the loop serving it, NULL: its own thread */
	int fills;		/* conn.c: handed over for bulk pool work (frame_fills) */
	/* admit.c: the handshake (AUTH with a key, else HELLO) is not done yet */
	int hs_open;		/* the serving thread's: set at accept, cleared when done */
	int hs_listed;		/* on srv->hs_head's list (admit_lock) */
	struct conn *hs_prev, *hs_next;	/* admit_lock */
	uint64_t hs_since_ms;	/* accepted at (monotonic) */
	char src[64];		/* source address (no port), or "unix uid N" */
};

/*
 * conn.c: one event loop thread and its epoll set (level-triggered), and
 * its counters (written by its thread only; a cache line of their own, so
 * that the loops do not share one).
 */
struct conn_loop {
	struct server *srv;
	int ep;
	pthread_t th;
	atomic_uint_fast64_t passes;	/* epoll_wait()s that gave connections */
	atomic_uint_fast64_t sends;	/* reply sends at the end of a pass */
	atomic_uint_fast64_t ops[OP_MAX];	/* requests it ran, by op (STATS adds srv->ops) */
} __attribute__((aligned(64)));

#define CONN_LOOPS_MAX	8

/* The name queries whose hits and misses STATS counts. */
enum { CACHE_Q_LOOKUP, CACHE_Q_EXISTS, CACHE_Q_OPEN, CACHE_Q_COUNT };

struct httpd;
#define REBORN_KEEP	64

struct sub;
struct ack_wait;
struct rdma_srv;
struct member;

struct server {
	struct config cfg;
	struct pool *pool;
	struct alloc *alloc;
	struct dir *dir;
	struct persist *persist;	/* warm restart (daemon/persist/), or NULL */
	struct ext *ext;		/* region extension (daemon/ext/), or NULL */
	atomic_uint_fast64_t hints_refused, hints_over_limit;
	struct sessions *sessions;
	struct rdma_srv *rdma;		/* rdma/: NULL without an rdma:// listener */
	struct member *member;		/* cluster/: NULL outside a cluster */
	uint64_t generation;
	int have_key;
	struct tls_creds *tls;		/* srvtls.c: TCP clients speak TLS, or NULL */
	uint8_t key[CONFIG_KEY_BYTES];	/* the administrator key (unscoped) */
	struct tenants tenants;		/* tenant.h: scoped keys of the key file */

	/* listen.c */
	struct listener listeners[CONFIG_MAX_LISTEN];
	unsigned int nlisteners;
	int wake[2];
	pthread_t accept_thread;
	int accepting;

	/* conn.c */
	pthread_mutex_t conns_lock;
	pthread_cond_t conns_cond;	/* CLOCK_MONOTONIC: a connection ended */
	struct conn *conns;
	atomic_uint nconns;		/* written under conns_lock */
	struct conn_loop loops[CONN_LOOPS_MAX];
	unsigned int nloops;		/* running; new connections go round-robin */
	atomic_uint next_loop;
	int loops_wake;			/* eventfd in every loop's set: stop */

	/* admit.c: unauthenticated connections, oldest first */
	pthread_mutex_t admit_lock;
	struct conn *hs_head, *hs_tail;
	atomic_uint nhandshake;		/* listed; written under admit_lock */
	atomic_uint ndropping;		/* closed by admit.c, not yet ended */
	atomic_uint hs_timeout_ms, hs_max, hs_per_source;
	atomic_uint_fast64_t hs_expired, hs_evicted, hs_refused;
	struct refusals refusals;

	/* handlers/handshake.c: sessions made after a reclaim failed (tokens) */
	pthread_mutex_t reborn_lock;
	uint8_t reborn[REBORN_KEEP][SESSION_TOKEN_BYTES];
	unsigned int reborn_next;

	/* subscribe.c */
	pthread_mutex_t subs_lock;
	pthread_cond_t subs_cond;	/* CLOCK_MONOTONIC: an ACK came, a sub left */
	struct sub *subs;
	atomic_uint nacking;		/* listed subs that acknowledge, not dropped */
	struct ack_wait *waits;		/* lock-holding changes waiting for acks */
	atomic_uint ack_publish_ms, ack_ms;
	atomic_uint_fast64_t ack_timeouts;
	atomic_uint_fast64_t ack_drops, ack_rejoins;	/* subscribers dropped, back */

	atomic_int stopping;
	atomic_int reset;		/* the memory was reset: restart in place */
	atomic_uint max_conns;
	atomic_uint max_frame;
	atomic_uint_fast64_t ops[OP_MAX];	/* off the loops; each loop counts its own */
	atomic_uint_fast64_t bytes_read, bytes_written, rejected_conns;
	atomic_uint_fast64_t conn_handoffs;	/* loop -> a connection's own thread */

	/* Issue 25 (dispatch.c, handlers/stats.c, metrics.c): request latency by
	 * op, lookup/exists/open hits and misses, the /metrics endpoint. */
	struct hist op_hist[OP_MAX];
	atomic_uint_fast64_t cache_hits[CACHE_Q_COUNT], cache_misses[CACHE_Q_COUNT];
	struct httpd *metrics;
};

#endif
