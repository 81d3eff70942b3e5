/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/fake_etcd.h: a small etcd v3 JSON gateway on a
 * loopback TCP port, in the test process, for lib/cluster/etcd.c and
 * members.c: POST /v3/kv/put, /v3/kv/range (key or key..range_end, keys
 * and values base64, 64-bit integers as strings, an empty value left out
 * as etcd's gateway leaves it out), /v3/lease/grant, keepalive, revoke and
 * /v3/auth/authenticate, one connection at a time, each closed after its
 * answer, over TLS when given server credentials. A test can make it
 * misbehave: refuse with a gRPC code, answer raw text with an HTTP status,
 * answer late, close without answering, require a user and rotate the
 * token.
 */
#ifndef FAKE_ETCD_H
#define FAKE_ETCD_H

#include <pthread.h>
#include <stdint.h>

#define FE_KEYS		64

struct tls_creds;

struct fake_etcd {
	int lfd, stop_pipe[2];
	uint16_t port;
	pthread_t th;
	pthread_mutex_t mu;		/* everything below */
	char *key[FE_KEYS], *val[FE_KEYS];
	int64_t lease_of[FE_KEYS];
	int nkeys;
	int64_t revision;
	int64_t leases[16];		/* granted, not revoked; 0: free slot */
	int64_t next_lease;
	/* misbehaviour, for every request while set */
	int code;			/* refuse with this gRPC code */
	int http_status;		/* with raw: this status (0: 200) */
	const char *raw;		/* answer this text as is */
	int delay_ms;			/* answer this late */
	int close_early;		/* close without an answer */
	int no_lease_id;		/* grant answers without ID */
	size_t big;			/* answer a range with this many extra bytes */
	const char *user, *password;	/* non-NULL: auth on */
	struct tls_creds *tls;		/* non-NULL: https (lib/common/tls.c) */
	int token_no;			/* the valid token is "tok<no>" */
	/* what it saw */
	unsigned int requests, auths;
	char last_path[64];
	char last_auth[64];
	char last_range_end[256];	/* decoded */
};

void fe_start(struct fake_etcd *e);
void fe_stop(struct fake_etcd *e);
/* Put key=value (lease 0: none) as etcdctl would. */
void fe_put(struct fake_etcd *e, const char *key, const char *value, int64_t lease);
void fe_del(struct fake_etcd *e, const char *key);
/* "127.0.0.1:PORT" */
void fe_endpoint(const struct fake_etcd *e, char *buf, size_t cap);
unsigned int fe_requests(struct fake_etcd *e);
/* Set a misbehaviour field under the lock. */
void fe_set(struct fake_etcd *e, int *field, int v);

#endif
