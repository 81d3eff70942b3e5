/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/rdma/rdma_priv.h: the insides of marud's rdma data path, shared by
 * the files of daemon/rdma/ only (the only marud files that include the
 * verbs headers). One mutex, rdma_srv.lock, guards sessions, connections
 * and windows; it is taken before the directory lock (never under it) and
 * held while a window is bound or invalidated, so a right can never be
 * handed out for memory whose holder is being ended. Nothing slow runs
 * under it: the pool is registered by the event thread alone, which is
 * also the only writer of dev[] (before it publishes a QP using one); a
 * fenced QP is destroyed by the event thread after the lock is dropped,
 * once no RKEY registers an extent MR on its PD (rconn.busy, with the
 * lock dropped too; the right is checked again before one is granted).
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

/*
 * How the rights of an rkey are enforced on a device (rdma_mr.c decides,
 * from the self-test and the rdma-rights setting).
 */
enum rdma_rights {
	RIGHTS_UNKNOWN = 0,	/* no device tested yet */
	RIGHTS_WINDOWS,		/* a type 2 window per extent, over one pool MR */
	RIGHTS_MR,		/* an MR per extent, on the QP's own PD */
	RIGHTS_POOL,		/* trusted: one remote MR over the whole pool */
	RIGHTS_REFUSED,		/* nothing enforceable: rdma clients refused */
};

/* The self-test's answers: 1 refused (enforced), 0 allowed, <0 not tested. */
struct rdma_check {
	int win_rights, win_bounds, mr_rights, mr_bounds;
};

/* rdma-rights (config): what rdma_rights_decide may choose. */
#define RDMA_CFG_AUTO		0	/* windows if they hold, else MRs, else refuse */
#define RDMA_CFG_EXTENT_MR	1	/* MRs if they hold, else refuse */
#define RDMA_CFG_TRUST_POOL	2	/* one MR over the pool, every client trusted */

/* A device tested at start, by name (contexts may come and go). */
struct rdma_tested {
	char name[64];
	enum rdma_rights rights;
	struct rdma_check chk;
};

/* One device: the pool registered once, if its mode needs it (rdma_mr.c). */
struct rdma_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;	/* the whole pool, iova = pool offset, or NULL */
	int windows;		/* 1: rights by type 2 memory windows */
	enum rdma_rights rights;
};

/* One right: a window over one extent of one version (rkey.c). */
struct rwin {
	struct rwin *next;
	uint64_t ino;
	int rw;
	uint64_t off, len;
	struct ibv_mw *mw;	/* RIGHTS_WINDOWS */
	struct ibv_mr *mr;	/* RIGHTS_MR: just this extent */
	uint32_t rkey;
};

/* One client QP, attached to a session (rdma_listen.c). */
struct rconn {
	struct rconn *next;
	struct rdma_cm_id *id;
	struct rdma_dev *dev;
	struct ibv_pd *pd;	/* the QP's: dev->pd, or its own (RIGHTS_MR) */
	struct ibv_cq *cq;
	struct ibv_comp_channel *cch;	/* cq's: rdma_rconn_wait() sleeps on it */
	struct rsess *rs;
	int fenced;		/* QP in ERR, drained, rights revoked */
	int busy;		/* RKEYs registering on pd without the lock */
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
	atomic_uint_fast64_t mr_regs, mr_reg_us, pool_reg_us;
	atomic_int_fast64_t windows, quarantined, conns;
};

struct rdma_srv {
	struct server *srv;
	pthread_mutex_t lock;
	pthread_cond_t idle;	/* some rconn's busy dropped to 0 */
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
	int cfg_rights;		/* RDMA_CFG_* */
	enum rdma_rights rights;	/* the first device's: HELLO says it */
	struct rdma_tested tested[RDMA_MAX_DEV];
	unsigned int ntested;
	pthread_t thr;
	int running;
	int wake[2];
	struct rdma_stat st;
};

/*
 * rdma_mr.c: the device of ctx, tested (addr: one of its addresses, used
 * if it was not tested at start) and with the pool registered if its mode
 * needs it. Event thread only, lock NOT held (registration is slow).
 */
struct rdma_dev *rdma_dev_get(struct rdma_srv *r, struct ibv_context *ctx,
			      const struct sockaddr *addr);
/* At start: test the devices behind every listener (and, for a wildcard
 * listener, behind every local IPv4 address). */
void rdma_devs_test(struct rdma_srv *r);
void rdma_devs_close(struct rdma_srv *r);
const char *rdma_rights_name(enum rdma_rights m);
uint32_t rdma_rights_flags(enum rdma_rights m);
/* One MR over [off, +len) of the pool for a right on pd (RIGHTS_MR). */
struct ibv_mr *rdma_extent_mr(struct rdma_srv *r, struct ibv_pd *pd, uint64_t off,
			      uint64_t len, int rw);

/* selftest.c: probe the device behind addr; 0 or -errno (nothing ran). */
int rdma_selftest(const struct sockaddr *addr, int windows, const char *dev,
		  struct rdma_check *out);

/* rkey.c; lock held */
struct rsess *rdma_rsess_by_token(struct rdma_srv *r, const uint8_t *token);
void rdma_rwin_revoke(struct rdma_srv *r, struct rsess *rs, uint64_t ino, int all);

/*
 * quarantine.c: QP to ERR, drained, rights gone (windows deallocated, MRs
 * deregistered), disconnected; lock held, nothing slow. The QP itself is
 * destroyed later by rdma_rconn_destroy(), without the lock.
 */
void rdma_rconn_fence(struct rdma_srv *r, struct rconn *rc, const char *why);
/* Destroy a fenced rc's QP, CQ and own PD; lock NOT held. */
void rdma_rconn_destroy(struct rconn *rc);
/* Wait for one completion of rc's CQ, bounded; 0 or -EIO/-ETIMEDOUT. */
int rdma_rconn_wait(struct rdma_srv *r, struct rconn *rc, uint64_t wr_id);
/* Destroy rc's CQ and its completion channel (its QP is gone). */
void rdma_rconn_cq_free(struct rconn *rc);

#endif
