// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/rdma/quarantine.c: fencing a client's QP so that no WRITE can land
 * any more. A WRITE the client gave up on (its call timed out) may still be
 * on the wire; the pages it may reach are the session's read-write rights
 * (in trust-pool mode: anything). They stay held, counted in the
 * quarantined-bytes gauge, while the QP is moved to the error state, its
 * completions drained, and its rights revoked: windows deallocated, extent
 * MRs deregistered (the NIC refuses their rkeys from then on, and neither
 * call returns while an access through them is under way); only then may
 * the caller let the directory free the memory. That part is quick and
 * runs under rdma_srv.lock, so no right is handed out for the memory
 * meanwhile. Destroying the QP is not: rdma_rxe's destroy waits for the
 * QP's references to drop (a type 2 window bound on it holds one, hence
 * windows first) and can take long, so the event thread does it after the
 * id's DISCONNECTED (rdma_rconn_destroy), holding no lock. Also revoking a
 * session's rights (rdma_rwin_revoke) and the bounded wait for marud's own
 * work requests (window binds: asleep on the CQ's completion channel, not
 * polling); rkey.c, which hands the rights out, and rdma_listen.c call down
 * into this file.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "rdma_priv.h"

void rdma_rconn_cq_free(struct rconn *rc)
{
	if (rc->cq)
		ibv_destroy_cq(rc->cq);
	rc->cq = NULL;
	if (rc->cch)
		ibv_destroy_comp_channel(rc->cch);
	rc->cch = NULL;
}

/*
 * Sleep on rc's completion channel until a completion may be there or
 * until end (monotonic ms): 0, -ETIMEDOUT, -EIO. wc and n get a completion that
 * came while arming (it fires no event).
 */
static int cq_sleep(struct rconn *rc, uint64_t end, struct ibv_wc *wc, int *n)
{
	struct pollfd pfd = { .fd = rc->cch->fd, .events = POLLIN };
	uint64_t now = mono_ms();
	struct ibv_cq *cq;
	void *ctx;

	if (now > end)
		return -ETIMEDOUT;
	if (ibv_req_notify_cq(rc->cq, 0))
		return -EIO;
	*n = ibv_poll_cq(rc->cq, 1, wc);
	if (*n)
		return *n < 0 ? -EIO : 0;
	if (poll(&pfd, 1, (int)(end - now) + 1) <= 0)
		return 0;	/* the caller polls once more, then times out */
	if (ibv_get_cq_event(rc->cch, &cq, &ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	return 0;
}

int rdma_rconn_wait(struct rdma_srv *r, struct rconn *rc, uint64_t wr_id)
{
	uint64_t end = mono_ms() + RDMA_BIND_MS;
	struct ibv_wc wc;
	int n, rcode;

	n = ibv_poll_cq(rc->cq, 1, &wc);
	for (;;) {
		if (n < 0)
			return -EIO;
		if (n == 1 && wc.wr_id == wr_id) {
			if (wc.status == IBV_WC_SUCCESS)
				return 0;
			log_warnx("rdma: %s: window bind failed: %s", rc->peer,
				  ibv_wc_status_str(wc.status));
			return -EIO;
		}
		n = 0;
		rcode = cq_sleep(rc, end, &wc, &n);
		if (rcode == -ETIMEDOUT)
			log_warnx("rdma: %s: window bind timed out", rc->peer);
		if (rcode)
			return rcode;
		if (!n)
			n = ibv_poll_cq(rc->cq, 1, &wc);
	}
}

/* Unlink and free the rights of ino (all: every right) of rs. */
void rdma_rwin_revoke(struct rdma_srv *r, struct rsess *rs, uint64_t ino, int all)
{
	struct rwin **pp = &rs->wins, *w;
	int rc;

	while ((w = *pp)) {
		if (!all && w->ino != ino) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		if (w->mw || w->mr) {
			/* a bound type 2 window dies with its deallocation */
			rc = w->mw ? ibv_dealloc_mw(w->mw) : ibv_dereg_mr(w->mr);
			if (rc)
				log_warn(rc, "rdma: revoking the rkey of version %llu",
					 (unsigned long long)w->ino);
			atomic_fetch_sub(&r->st.windows, 1);
			atomic_fetch_add(&r->st.revokes, 1);
		}
		free(w);
	}
}

static uint64_t rw_bytes(const struct rsess *rs)
{
	const struct rwin *w;
	uint64_t n = 0;

	for (w = rs ? rs->wins : NULL; w; w = w->next)
		if (w->rw)
			n += w->len;
	return n;
}

/* QP to ERR, then every outstanding WR flushed out of the CQ. */
static void qp_drain(struct rconn *rc)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[16];

	if (ibv_modify_qp(rc->id->qp, &attr, IBV_QP_STATE))
		log_warnx("rdma: %s: cannot move the QP to the error state", rc->peer);
	/* marud's only WRs are binds, each waited for: what is left is flushed */
	while (ibv_poll_cq(rc->cq, 16, wc) > 0)
		;
}

void rdma_rconn_fence(struct rdma_srv *r, struct rconn *rc, const char *why)
{
	struct rsess *rs = rc->rs;
	uint64_t q = rw_bytes(rs);

	if (rc->fenced)
		return;
	atomic_fetch_add(&r->st.quarantined, (int_fast64_t)q);
	atomic_fetch_add(&r->st.quarantined_total, q);
	qp_drain(rc);
	rc->fenced = 1;
	/* rights first: the QP's destroy is prompt once nothing refers to it */
	if (rs) {
		rdma_rwin_revoke(r, rs, 0, 1);
		rs->rc = NULL;
	}
	rc->rs = NULL;
	atomic_fetch_sub(&r->st.quarantined, (int_fast64_t)q);
	atomic_fetch_add(&r->st.fences, 1);
	atomic_fetch_sub(&r->st.conns, 1);
	log_info("rdma: %s: QP fenced (%s): %llu bytes were quarantined until its "
		 "completions drained and its rights were revoked", rc->peer, why,
		 (unsigned long long)q);
	rdma_disconnect(rc->id);
}

void rdma_rconn_destroy(struct rconn *rc)
{
	uint64_t t0 = mono_ms();

	if (rc->id->qp)
		rdma_destroy_qp(rc->id);
	rdma_rconn_cq_free(rc);
	if (rc->pd && rc->pd != rc->dev->pd)
		ibv_dealloc_pd(rc->pd);
	rc->pd = NULL;
	if (mono_ms() - t0 > 1000)
		log_info("rdma: %s: destroying the QP took %llu ms (no lock held)",
			 rc->peer, (unsigned long long)(mono_ms() - t0));
}
