/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/rdma/rdma_priv.h: the insides of marud's rdma data path, shared by
 * the files of daemon/rdma/ only (the only marud files that include the
 * verbs headers). One mutex, rdma_srv.lock, guards devices, sessions,
 * connections and windows; it is taken before the directory lock (never
 * under it) and held while a window is bound or invalidated, so a right
 * can never be handed out for memory whose holder is being ended.
 */
#ifndef MARUD_RDMA_PRIV_H
#define MARUD_RDMA_PRIV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdint.h>

#include "rdma.h"

#define RDMA_MAX_LISTEN	8
#define RDMA_MAX_DEV	4
#define RDMA_SQ_DEPTH	64
#define RDMA_BIND_MS	2000	/* a bind or drain that takes longer fences the QP */

/* One device: the pool registered once (rdma_mr.c). */
struct rdma_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;	/* the whole pool, iova = pool offset */
	int windows;		/* 1: type 2 memory windows */
};

/* One right: a window over one extent of one version (rkey.c). */
struct rwin {
	struct rwin *next;
	uint64_t ino;
	int rw;
	uint64_t off, len;
	struct ibv_mw *mw;	/* NULL in whole-pool mode */
	uint32_t rkey;
};

/* One client QP, attached to a session (rdma_listen.c). */
struct rconn {
	struct rconn *next;
	struct rdma_cm_id *id;
	struct rdma_dev *dev;
	struct ibv_cq *cq;
	struct ibv_comp_channel *cch;	/* cq's: rdma_rconn_wait() sleeps on it */
	struct rsess *rs;
	int fenced;		/* QP in ERR, drained and destroyed */
	char peer[64];
};

/* The rdma state of one session that asked for it in HELLO (rkey.c). */
struct rsess {
	struct rsess *next;
	struct session *sess;
	uint8_t token[16];
	struct rconn *rc;	/* the live QP, or NULL */
	struct rwin *wins;
};

struct rdma_stat {
	atomic_uint_fast64_t accepted, rejected, binds, revokes, fences;
	atomic_uint_fast64_t refused_rkey, bind_errors, quarantined_total;
	atomic_int_fast64_t windows, quarantined, conns;
};

struct rdma_srv {
	struct server *srv;
	pthread_mutex_t lock;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid[RDMA_MAX_LISTEN];
	unsigned int nlid;
	char host[64];		/* first listener's address, for HELLO */
	uint16_t port;
	struct rdma_dev dev[RDMA_MAX_DEV];
	unsigned int ndev;
	struct rsess *sess;
	struct rconn *conns;	/* every QP not yet destroyed */
	uint8_t *base;		/* the pool mapping */
	uint64_t size;
	uint64_t generation;
	int have_key;
	int whole_pool;		/* some device lacked windows: the pool is exposed */
	pthread_t thr;
	int running;
	int wake[2];
	struct rdma_stat st;
};

/* rdma_mr.c: the device of ctx with the pool registered; lock held. */
struct rdma_dev *rdma_dev_get(struct rdma_srv *r, struct ibv_context *ctx);
void rdma_devs_close(struct rdma_srv *r);

/* rkey.c; lock held */
struct rsess *rdma_rsess_by_token(struct rdma_srv *r, const uint8_t *token);
void rdma_rwin_revoke(struct rdma_srv *r, struct rsess *rs, uint64_t ino, int all);

/* quarantine.c: QP to ERR, drained, destroyed, rights gone; lock held. */
void rdma_rconn_fence(struct rdma_srv *r, struct rconn *rc, const char *why);
/* Wait for one completion of rc's CQ, bounded; 0 or -EIO/-ETIMEDOUT. */
int rdma_rconn_wait(struct rdma_srv *r, struct rconn *rc, uint64_t wr_id);
/* Destroy rc's CQ and its completion channel (its QP is gone). */
void rdma_rconn_cq_free(struct rconn *rc);

#endif
