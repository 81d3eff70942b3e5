/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/cluster/etcd.h: the few etcd v3 calls a cluster needs: marud keeps
 * its pool's membership record with leases, put and get
 * (daemon/cluster/member.c); libmaru's cluster client lists the records
 * under a prefix (lib/cluster/members.c). It talks to
 * etcd's JSON gateway (the grpc-gateway every etcd 3.4 server serves on its
 * client port, under /v3/) with libcurl and json-c, so TLS, proxies and
 * HTTP details are kept libraries' and etcd's own TLS and user/password
 * authentication carry over unchanged.
 *
 * Several endpoints may be given: a call tries the one that answered last,
 * then the others in turn, so losing one member of an etcd cluster changes
 * nothing. A call that no endpoint answers in time fails with -EHOSTUNREACH
 * (nobody answered) or -EAGAIN (a member answered but could not serve:
 * no leader, no quorum); etcd_error() then says what each said.
 * Not thread safe: one struct etcd is used by one thread.
 */
#ifndef MARUD_ETCD_H
#define MARUD_ETCD_H

#include <stdint.h>

#define ETCD_MAX_ENDPOINTS	8

struct etcd_opts {
	/* "host:port[,host:port...]": the etcd client URLs without scheme */
	const char *endpoints;
	const char *ca;		/* CA file: https to the endpoints; NULL http */
	const char *cert, *key;	/* client certificate (etcd --client-cert-auth) */
	const char *user;	/* etcd authentication; NULL: none */
	const char *password;
	unsigned int timeout_ms;	/* per endpoint and call */
	/* polled during a call: non-zero ends it at once (-ECANCELED) */
	const volatile int *stop;
};

struct etcd;

int etcd_new(const struct etcd_opts *o, struct etcd **out);
void etcd_free(struct etcd *e);
/* What the last failed call met, one line ("" after a success). */
const char *etcd_error(const struct etcd *e);

int etcd_lease_grant(struct etcd *e, unsigned int ttl_s, int64_t *id);
/* The lease's TTL renewed: *ttl_s what it has now; -ENOENT: it expired. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s);
int etcd_lease_revoke(struct etcd *e, int64_t id);
/* lease 0: a key that lives until deleted */
int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease);
/* *value malloc'd, NUL-terminated; *lease (may be NULL) the key's lease,
 * 0 none; -ENOENT: no such key */
int etcd_get(struct etcd *e, const char *key, char **value, int64_t *lease);

struct etcd_kv {
	char *key, *value;	/* NUL-terminated */
	int64_t lease;		/* 0: none */
};
/*
 * Every key under prefix, in key order: *kvs (etcd_kvs_free it) and *n;
 * *revision (may be NULL) the store's revision the list is of.
 */
int etcd_list(struct etcd *e, const char *prefix, struct etcd_kv **kvs, size_t *n,
	      int64_t *revision);
void etcd_kvs_free(struct etcd_kv *kvs, size_t n);

#endif
