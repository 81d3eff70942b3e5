// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/rdma/selftest.c: what rights an RDMA provider really enforces,
 * asked of the device itself (marufs-design(7) §8). Each probe connects a
 * fresh pair of RC QPs on one device through rdma_cm to an address of that
 * device (a loopback connection inside marud: a listener on port 0 and a
 * client to it), registers a 3-page target on the passive side, checks
 * that a READ inside the right succeeds (else the probe says nothing), and
 * then posts the probe: the provider passes when it refuses it with an
 * error completion. A refused access errors both QPs, so every probe has
 * its own pair. The probes:
 *   - a WRITE through a read-only type 2 window (rights of a window);
 *   - a READ straddling the end of a window bound to the middle page, and
 *     one reading the page before it, inside the window's MR (bounds of a
 *     window: rdma_rxe fails these, it checks only the MR's range);
 *   - a WRITE through the rkey of a read-only MR over the middle page, and
 *     a READ straddling that MR's end (rights and bounds of an MR, what the
 *     one-MR-per-extent mode relies on).
 * Teardown goes in the order providers handle promptly: windows
 * deallocated first, then the QPs destroyed (rxe's destroy otherwise waits
 * for the windows' references to the QP).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "rdma_priv.h"

#define ST_PAGE	4096u
#define ST_MS	5000	/* one step; a probe is a few of them */

enum st_kind { ST_WINDOW, ST_MR };

struct st {
	struct rdma_event_channel *chl, *chc;
	struct rdma_cm_id *lid, *cid, *sid;
	struct ibv_pd *spd, *cpd;
	struct ibv_cq *scq, *ccq;
	struct ibv_mr *tmr, *cmr;
	struct ibv_mw *mw;
	uint8_t *tbuf, *cbuf;
	uint64_t raddr;		/* the right's first byte (iova = address) */
	uint32_t rkey;
	const char *step;	/* the setup step under way, for the log */
};

static int st_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		    struct rdma_cm_id **id)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int rc;

	if (poll(&p, 1, ST_MS) <= 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(ch, &ev))
		return errno ? -errno : -EIO;
	rc = ev->event == want ? 0 : -ECONNREFUSED;
	if (!rc && id)
		*id = ev->id;
	rdma_ack_cm_event(ev);
	return rc;
}

/* One completion of cq, bounded: its status, or -ETIMEDOUT. */
static int st_wc(struct ibv_cq *cq)
{
	struct timespec ts = { 0, 200 * 1000 };
	uint64_t end = mono_ms() + ST_MS;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && mono_ms() < end)
		nanosleep(&ts, NULL);
	if (n < 0)
		return -EIO;
	return n ? (int)wc.status : -ETIMEDOUT;
}

static int st_qp(struct rdma_cm_id *id, struct ibv_pd **pd, struct ibv_cq **cq)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };

	*pd = ibv_alloc_pd(id->verbs);
	*cq = *pd ? ibv_create_cq(id->verbs, 8, NULL, NULL, 0) : NULL;
	if (!*cq)
		return -ENOMEM;
	qa.send_cq = qa.recv_cq = *cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	return rdma_create_qp(id, *pd, &qa) ? (errno ? -errno : -EIO) : 0;
}

/* The client side up to a sent connect request. */
static int st_dial(struct st *t, const struct sockaddr_in *dst)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 3, .rnr_retry_count = 3 };
	int rc;

	t->step = "resolve address";
	if (rdma_create_id(t->chc, &t->cid, NULL, RDMA_PS_TCP))
		return -errno;
	if (rdma_resolve_addr(t->cid, NULL, (struct sockaddr *)dst, ST_MS))
		return -errno;
	rc = st_event(t->chc, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	t->step = "resolve route";
	if (!rc && rdma_resolve_route(t->cid, ST_MS))
		rc = -errno;
	if (!rc)
		rc = st_event(t->chc, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	t->step = "client QP";
	if (!rc)
		rc = st_qp(t->cid, &t->cpd, &t->ccq);
	if (!rc) {
		t->cmr = ibv_reg_mr(t->cpd, t->cbuf, ST_PAGE, IBV_ACCESS_LOCAL_WRITE);
		rc = t->cmr ? 0 : -ENOMEM;
	}
	t->step = "connect";
	if (!rc && rdma_connect(t->cid, &p))
		rc = -errno;
	return rc;
}

/* The passive side's target: a read-only window or MR over the middle page. */
static int st_target(struct st *t, enum st_kind kind)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int rc;

	t->raddr = (uintptr_t)t->tbuf + ST_PAGE;
	if (kind == ST_MR) {
		t->tmr = ibv_reg_mr(t->spd, t->tbuf + ST_PAGE, ST_PAGE, IBV_ACCESS_REMOTE_READ);
		if (!t->tmr)
			return -ENOMEM;
		t->rkey = t->tmr->rkey;
		return 0;
	}
	t->tmr = ibv_reg_mr(t->spd, t->tbuf, 3 * ST_PAGE, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_MW_BIND);
	t->mw = t->tmr ? ibv_alloc_mw(t->spd, IBV_MW_TYPE_2) : NULL;
	if (!t->mw)
		return -ENOMEM;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = t->mw;
	wr.bind_mw.rkey = ibv_inc_rkey(t->mw->rkey);
	wr.bind_mw.bind_info.mr = t->tmr;
	wr.bind_mw.bind_info.addr = t->raddr;
	wr.bind_mw.bind_info.length = ST_PAGE;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	if (ibv_post_send(t->sid->qp, &wr, &bad))
		return -EIO;
	rc = st_wc(t->scq);
	if (rc)
		return rc < 0 ? rc : -EIO;
	t->rkey = wr.bind_mw.rkey;
	return 0;
}

/* Both sides connected, the target ready. */
static int st_setup(struct st *t, const struct sockaddr *addr, enum st_kind kind)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .rnr_retry_count = 3 };
	struct sockaddr_in sa;
	int rc;

	t->step = "listen";
	t->chl = rdma_create_event_channel();
	t->chc = rdma_create_event_channel();
	if (!t->chl || !t->chc)
		return -ENODEV;
	memcpy(&sa, addr, sizeof(sa));
	sa.sin_port = 0;
	if (rdma_create_id(t->chl, &t->lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(t->lid, (struct sockaddr *)&sa) || rdma_listen(t->lid, 1))
		return errno ? -errno : -EIO;
	sa.sin_port = rdma_get_src_port(t->lid);
	rc = st_dial(t, &sa);
	if (!rc) {
		t->step = "connect request";
		rc = st_event(t->chl, RDMA_CM_EVENT_CONNECT_REQUEST, &t->sid);
	}
	if (!rc)
		rc = st_qp(t->sid, &t->spd, &t->scq);
	if (!rc && rdma_accept(t->sid, &p))
		rc = -errno;
	/*
	 * Active side first: librdmacm moves its QP to RTS and sends the RTU
	 * while the user takes the connect response (inside
	 * rdma_get_cm_event), and only that RTU establishes the passive side.
	 */
	if (!rc) {
		t->step = "established (active side)";
		rc = st_event(t->chc, RDMA_CM_EVENT_ESTABLISHED, NULL);
	}
	if (!rc) {
		t->step = "established (passive side)";
		rc = st_event(t->chl, RDMA_CM_EVENT_ESTABLISHED, NULL);
	}
	if (!rc) {
		t->step = kind == ST_MR ? "target MR" : "window bind";
		rc = st_target(t, kind);
	}
	return rc;
}

static void st_teardown(struct st *t)
{
	if (t->mw)
		ibv_dealloc_mw(t->mw);
	if (t->sid && t->sid->qp)
		rdma_destroy_qp(t->sid);
	if (t->cid && t->cid->qp)
		rdma_destroy_qp(t->cid);
	if (t->scq)
		ibv_destroy_cq(t->scq);
	if (t->ccq)
		ibv_destroy_cq(t->ccq);
	if (t->tmr)
		ibv_dereg_mr(t->tmr);
	if (t->cmr)
		ibv_dereg_mr(t->cmr);
	if (t->sid)
		rdma_destroy_id(t->sid);
	if (t->cid)
		rdma_destroy_id(t->cid);
	if (t->lid)
		rdma_destroy_id(t->lid);
	if (t->spd)
		ibv_dealloc_pd(t->spd);
	if (t->cpd)
		ibv_dealloc_pd(t->cpd);
	if (t->chl)
		rdma_destroy_event_channel(t->chl);
	if (t->chc)
		rdma_destroy_event_channel(t->chc);
}

static int st_post(struct st *t, enum ibv_wr_opcode op, int64_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)t->cbuf, .length = len,
			       .lkey = t->cmr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = t->raddr + (uint64_t)off;
	wr.wr.rdma.rkey = t->rkey;
	if (ibv_post_send(t->cid->qp, &wr, &bad))
		return -EIO;
	return st_wc(t->ccq);
}

/*
 * One probe: 1 refused (the provider enforces it), 0 it went through,
 * -errno when the probe could not be made (no answer either way).
 */
static int st_probe(const struct sockaddr *addr, enum st_kind kind,
		    enum ibv_wr_opcode op, int64_t off, uint32_t len, uint8_t *bufs)
{
	struct st t = { .tbuf = bufs, .cbuf = bufs + 3 * ST_PAGE };
	int rc = st_setup(&t, addr, kind);

	if (rc)
		log_info("rdma: self-test: connecting its queue pairs: %s (step %s)",
			 strerror(-rc), t.step);
	if (!rc) {
		/* the control: inside the right, a READ works */
		rc = st_post(&t, IBV_WR_RDMA_READ, 0, 64);
		if (rc > 0)
			rc = -EPROTO;
	}
	if (!rc) {
		rc = st_post(&t, op, off, len);
		rc = rc == IBV_WC_SUCCESS ? 0 : rc > 0 ? 1 : rc;
	}
	st_teardown(&t);
	return rc;
}

static const char *st_word(int v)
{
	return v == 1 ? "refused" : v == 0 ? "ALLOWED" : "not tested";
}

int rdma_selftest(const struct sockaddr *addr, int windows, const char *dev,
		  struct rdma_check *out)
{
	uint8_t *bufs = aligned_alloc(ST_PAGE, 4 * ST_PAGE);
	uint64_t t0 = mono_ms();

	out->win_rights = out->win_bounds = out->mr_rights = out->mr_bounds = -1;
	if (!bufs)
		return -ENOMEM;
	memset(bufs, 0x5a, 4 * ST_PAGE);
	/* a connection that times out once will again: no more probes then */
	if (windows) {
		out->win_rights = st_probe(addr, ST_WINDOW, IBV_WR_RDMA_WRITE, 0, 64, bufs);
		if (out->win_rights != -ETIMEDOUT)
			out->win_bounds = st_probe(addr, ST_WINDOW, IBV_WR_RDMA_READ,
						   ST_PAGE - 64, 128, bufs);
		if (out->win_bounds == 1)
			out->win_bounds = st_probe(addr, ST_WINDOW, IBV_WR_RDMA_READ,
						   -(int64_t)ST_PAGE, 64, bufs);
	}
	if (out->win_rights != -ETIMEDOUT && out->win_bounds != -ETIMEDOUT)
		out->mr_rights = st_probe(addr, ST_MR, IBV_WR_RDMA_WRITE, 0, 64, bufs);
	if (out->mr_rights != -ETIMEDOUT && out->mr_rights != -1)
		out->mr_bounds = st_probe(addr, ST_MR, IBV_WR_RDMA_READ, ST_PAGE - 64,
					  128, bufs);
	free(bufs);
	log_info("rdma: self-test of %s (%llu ms): a WRITE through a read-only window "
		 "%s, a READ outside a window's extent %s; a WRITE through a read-only MR "
		 "%s, a READ outside an MR %s", dev, (unsigned long long)(mono_ms() - t0),
		 st_word(out->win_rights), st_word(out->win_bounds), st_word(out->mr_rights),
		 st_word(out->mr_bounds));
	/* nothing answered: the first probe's error says why */
	if (out->mr_rights < 0 && out->win_rights < 0)
		return windows ? out->win_rights : out->mr_rights;
	return 0;
}
