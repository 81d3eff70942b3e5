// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/qp.c: RC queue pairs of the software verbs device — the
 * RESET -> INIT -> RTR -> RTS (-> ERR) state machine with the attribute
 * masks each transition requires, posting sends and receives, memory window
 * bind and invalidate, and both halves of the data path: the requester that
 * turns a WR into a wire message and completes it when the answer arrives,
 * and the responder that checks rkey, rights, bounds and the MW's QP against
 * what this process registered before touching memory. Completions of one
 * send queue are delivered in posting order, as RC requires.
 */
#include "sv.h"
#include "softverbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SV_MAX_SGE 16
#define SV_MAX_INLINE 256
#define SV_MAX_WR 4096
#define SV_MAX_MSG (1ull << 31)

static struct sv_qp *sv_qp(struct ibv_qp *qp)
{
	return sv_container(qp, struct sv_qp, qp);
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
				       struct ibv_qp_init_attr *a)
{
	struct sv_qp *q;

	if (a->qp_type != IBV_QPT_RC || !a->send_cq || !a->recv_cq ||
	    a->cap.max_send_wr > SV_MAX_WR || a->cap.max_recv_wr > SV_MAX_WR ||
	    a->cap.max_send_sge > SV_MAX_SGE || a->cap.max_recv_sge > SV_MAX_SGE ||
	    a->cap.max_inline_data > SV_MAX_INLINE) {
		errno = a->srq ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	sv_lock();
	sv_init_locked();
	q->qp.context = pd->context;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.handle = sv.next_handle++;
	q->qp.qp_num = sv.next_qpn++ & 0xffffff;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	q->max_send_wr = a->cap.max_send_wr ? a->cap.max_send_wr : 1;
	q->max_recv_wr = a->cap.max_recv_wr ? a->cap.max_recv_wr : 1;
	q->max_sge = SV_MAX_SGE;
	q->max_inline = a->cap.max_inline_data;
	q->sq_sig_all = a->sq_sig_all;
	a->cap.max_send_wr = q->max_send_wr;
	a->cap.max_recv_wr = q->max_recv_wr;
	sv_list_init(&q->sq);
	sv_list_init(&q->rq);
	sv_list_init(&q->early);
	sv_list_add_tail(&sv.qps, &q->link);
	sv_unlock();
	return &q->qp;
}

static void sv_swr_complete(struct sv_qp *q, struct sv_swr *w)
{
	struct ibv_wc wc;

	if (!w->signaled && w->status == IBV_WC_SUCCESS)
		return;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = w->status;
	wc.opcode = w->opcode;
	wc.byte_len = w->byte_len;
	wc.qp_num = q->qp.qp_num;
	sv_cq_push(sv_container(q->qp.send_cq, struct sv_cq, cq), &wc, false);
}

static void sv_swr_free(struct sv_swr *w)
{
	sv_list_del(&w->link);
	free(w->sge);
	free(w);
}

/* Deliver the done head of the send queue; an error takes the QP down. */
static void sv_sq_drain(struct sv_qp *q)
{
	while (!sv_list_empty(&q->sq)) {
		struct sv_swr *w = sv_container(q->sq.next, struct sv_swr, link);
		bool failed;

		if (!w->done)
			break;
		sv_swr_complete(q, w);
		failed = w->status != IBV_WC_SUCCESS;
		sv_swr_free(w);
		q->sq_n--;
		if (failed && q->qp.state != IBV_QPS_ERR) {
			sv_qp_to_err(q, 0);
			return;
		}
	}
}

static void sv_rwr_flush(struct sv_qp *q, struct sv_rwr *r, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.status = st;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = q->qp.qp_num;
	sv_cq_push(sv_container(q->qp.recv_cq, struct sv_cq, cq), &wc, false);
}

static void sv_reply(struct sv_conn *c, uint32_t type, uint64_t seq,
		     enum ibv_wc_status st, const void *p, size_t len);

/* A waiting SEND dies with the QP; its sender sees the retries run out. */
static void sv_early_free(struct sv_inbound *in)
{
	if (in->conn && !in->conn->dead)
		sv_reply(in->conn, SV_MSG_ACK, in->seq, IBV_WC_RETRY_EXC_ERR, NULL, 0);
	sv_list_del(&in->link);
	free(in->data);
	free(in);
}

void sv_qp_to_err(struct sv_qp *q, int event)
{
	struct ibv_async_event ae;

	q->qp.state = IBV_QPS_ERR;
	sv_foreach(l, &q->sq) {
		struct sv_swr *w = sv_container(l, struct sv_swr, link);

		if (!w->done || w->status == IBV_WC_SUCCESS)
			w->status = IBV_WC_WR_FLUSH_ERR;
		w->done = true;
	}
	sv_sq_drain(q);
	sv_foreach(l, &q->rq) {
		struct sv_rwr *r = sv_container(l, struct sv_rwr, link);

		sv_rwr_flush(q, r, IBV_WC_WR_FLUSH_ERR);
		sv_list_del(&r->link);
		free(r->sge);
		free(r);
	}
	q->rq_n = 0;
	sv_foreach(l, &q->early)
		sv_early_free(sv_container(l, struct sv_inbound, link));
	if (event) {
		ae.element.qp = &q->qp;
		ae.event_type = (enum ibv_event_type)event;
		sv_async_push(q->qp.context, &ae);
	}
}

static void sv_qp_reset(struct sv_qp *q)
{
	sv_foreach(l, &q->sq) {
		sv_swr_free(sv_container(l, struct sv_swr, link));
	}
	sv_foreach(l, &q->rq) {
		struct sv_rwr *r = sv_container(l, struct sv_rwr, link);

		sv_list_del(&r->link);
		free(r->sge);
		free(r);
	}
	sv_foreach(l, &q->early)
		sv_early_free(sv_container(l, struct sv_inbound, link));
	q->sq_n = q->rq_n = 0;
	q->qp.state = IBV_QPS_RESET;
}

/* The first outstanding remote WR times out; the rest are flushed. */
void sv_qp_conn_lost(struct sv_qp *q)
{
	q->conn = NULL;
	sv_foreach(l, &q->sq) {
		struct sv_swr *w = sv_container(l, struct sv_swr, link);

		if (w->remote && !w->done) {
			w->done = true;
			w->status = IBV_WC_RETRY_EXC_ERR;
			break;
		}
	}
	sv_sq_drain(q);
}

enum {
	SV_INIT_MASK = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       IBV_QP_ACCESS_FLAGS,
	SV_RTR_MASK = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	SV_RTS_MASK = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
};

/* Is cur -> next legal with this mask (IB spec table of QP transitions)? */
static bool sv_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
			     int mask)
{
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return true;
	switch (cur) {
	case IBV_QPS_RESET:
		return next == IBV_QPS_INIT && (mask & SV_INIT_MASK) == SV_INIT_MASK;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT)
			return true;
		return next == IBV_QPS_RTR && (mask & SV_RTR_MASK) == SV_RTR_MASK;
	case IBV_QPS_RTR:
		return next == IBV_QPS_RTS && (mask & SV_RTS_MASK) == SV_RTS_MASK;
	case IBV_QPS_RTS:
		return next == IBV_QPS_RTS;
	default:
		return false;
	}
}

int sv_qp_set_state(struct sv_qp *q, enum ibv_qp_state st)
{
	if (st == IBV_QPS_ERR) {
		if (q->qp.state != IBV_QPS_ERR)
			sv_qp_to_err(q, 0);
		return 0;
	}
	if (st == IBV_QPS_RESET) {
		sv_qp_reset(q);
		return 0;
	}
	q->qp.state = st;
	return 0;
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			    int attr_mask)
{
	struct sv_qp *q = sv_qp(qp);
	int rc = 0;

	sv_lock();
	if (attr_mask & IBV_QP_STATE) {
		if (!sv_transition_ok(qp->state, attr->qp_state, attr_mask)) {
			rc = EINVAL;
			goto out;
		}
	} else if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_ERR) {
		rc = EINVAL;
		goto out;
	}
	if ((attr_mask & IBV_QP_PORT) && attr->port_num != 1) {
		rc = EINVAL;
		goto out;
	}
	if (attr_mask & IBV_QP_ACCESS_FLAGS)
		q->access = attr->qp_access_flags;
	if (attr_mask & IBV_QP_DEST_QPN)
		q->dest_qpn = attr->dest_qp_num;
	if (attr_mask & IBV_QP_STATE)
		rc = sv_qp_set_state(q, attr->qp_state);
out:
	sv_unlock();
	return rc;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct sv_qp *q = sv_qp(qp);

	sv_lock();
	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	attr->qp_state = attr->cur_qp_state = qp->state;
	attr->qp_access_flags = (int)q->access;
	attr->dest_qp_num = q->dest_qpn;
	attr->port_num = 1;
	attr->path_mtu = IBV_MTU_4096;
	attr->cap.max_send_wr = q->max_send_wr;
	attr->cap.max_recv_wr = q->max_recv_wr;
	attr->cap.max_send_sge = attr->cap.max_recv_sge = q->max_sge;
	attr->cap.max_inline_data = q->max_inline;
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->cap = attr->cap;
	init_attr->qp_type = IBV_QPT_RC;
	init_attr->sq_sig_all = q->sq_sig_all;
	sv_unlock();
	return 0;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct sv_qp *q = sv_qp(qp);
	unsigned long slow;

	sv_lock();
	slow = sv.fault.destroy_qp_ms;
	/* rxe's destroy waits for the QP's references: a bound type 2 window holds one */
	sv_foreach(l, &sv.mws) {
		struct sv_mw *w = sv_container(l, struct sv_mw, link);

		if (w->bound && w->mw.type == IBV_MW_TYPE_2 && w->qpn == qp->qp_num)
			slow += sv.fault.destroy_bound_qp_ms;
	}
	sv_unlock();
	sv_fault_sleep(slow * 1000);
	sv_lock();
	sv_qp_reset(q);
	if (q->conn && q->conn->id && q->conn->id->id.qp == qp)
		q->conn->id->id.qp = NULL;
	sv_foreach(l, &sv.ids) {
		struct sv_id *i = sv_container(l, struct sv_id, link);

		if (i->id.qp == qp)
			i->id.qp = NULL;
	}
	sv_list_del(&q->link);
	sv_unlock();
	free(q);
	return 0;
}

/* Translate one local SGE (iova space of its lkey) to a host pointer. */
static uint8_t *sv_lkey_ptr(struct sv_qp *q, const struct ibv_sge *s,
			    unsigned int need)
{
	struct sv_mr *m = sv_mr_by_key(s->lkey);

	if (!m || m->mr.pd != q->qp.pd || (m->access & need) != need)
		return NULL;
	if (s->addr < m->iova || s->length > m->mr.length ||
	    s->addr - m->iova > m->mr.length - s->length)
		return NULL;
	return (uint8_t *)m->mr.addr + (s->addr - m->iova);
}

static uint64_t sv_sge_len(const struct ibv_sge *s, int n)
{
	uint64_t len = 0;

	for (int i = 0; i < n; i++)
		len += s[i].length;
	return len;
}

/* Gather a send's SGEs into buf; inline data bypasses lkeys. */
static enum ibv_wc_status sv_gather(struct sv_qp *q, const struct ibv_send_wr *wr,
				    uint8_t *buf)
{
	for (int i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *s = &wr->sg_list[i];
		const uint8_t *src;

		if (wr->send_flags & IBV_SEND_INLINE)
			src = (const uint8_t *)(uintptr_t)s->addr;
		else
			src = sv_lkey_ptr(q, s, 0);
		if (!src && s->length)
			return IBV_WC_LOC_PROT_ERR;
		if (s->length)
			memcpy(buf, src, s->length);
		buf += s->length;
	}
	return IBV_WC_SUCCESS;
}

static enum ibv_wc_status sv_scatter(struct sv_qp *q, const struct ibv_sge *sge,
				     int nsge, const uint8_t *p, uint64_t len)
{
	for (int i = 0; i < nsge && len; i++) {
		uint32_t n = sge[i].length < len ? sge[i].length : (uint32_t)len;
		uint8_t *dst = sv_lkey_ptr(q, &sge[i], IBV_ACCESS_LOCAL_WRITE);

		if (!dst)
			return IBV_WC_LOC_PROT_ERR;
		memcpy(dst, p, n);
		p += n;
		len -= n;
	}
	return len ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

static uint32_t sv_key_index(uint32_t key)
{
	return key >> 8;
}

static enum ibv_wc_status sv_do_bind(struct sv_qp *q, struct sv_mw *w,
				     uint32_t rkey,
				     const struct ibv_mw_bind_info *bi)
{
	struct sv_mr *m = bi->mr ? sv_container(bi->mr, struct sv_mr, mr) : NULL;

	if (w->mw.pd != q->qp.pd || sv_key_index(rkey) != sv_key_index(w->mw.rkey))
		return IBV_WC_MW_BIND_ERR;
	if (w->mw.type == IBV_MW_TYPE_2 && (w->bound || !m))
		return IBV_WC_MW_BIND_ERR;
	if (m && (m->mr.pd != q->qp.pd || !(m->access & IBV_ACCESS_MW_BIND) ||
		  bi->addr < m->iova || bi->length > m->mr.length ||
		  bi->addr - m->iova > m->mr.length - bi->length))
		return IBV_WC_MW_BIND_ERR;
	if (m && (bi->mw_access_flags & IBV_ACCESS_REMOTE_WRITE) &&
	    !(m->access & IBV_ACCESS_LOCAL_WRITE))
		return IBV_WC_MW_BIND_ERR;
	if (w->bound && w->mr)
		w->mr->bound_mws--;
	w->bound = m != NULL;
	w->mr = m;
	w->key = rkey;
	w->addr = bi->addr;
	w->len = bi->length;
	w->access = bi->mw_access_flags;
	w->qpn = q->qp.qp_num;
	if (m)
		m->bound_mws++;
	return IBV_WC_SUCCESS;
}

static enum ibv_wc_status sv_invalidate(struct sv_qp *q, uint32_t rkey, bool remote)
{
	struct sv_mw *w = sv_mw_by_key(rkey);

	if (!w || !w->bound || w->mw.pd != q->qp.pd)
		return IBV_WC_MW_BIND_ERR;
	if (w->mw.type != IBV_MW_TYPE_2 ||
	    (remote && w->qpn != q->qp.qp_num))
		return IBV_WC_MW_BIND_ERR;
	w->mr->bound_mws--;
	w->bound = false;
	w->mr = NULL;
	return IBV_WC_SUCCESS;
}

static struct sv_swr *sv_swr_new(struct sv_qp *q, uint64_t wr_id,
				 unsigned int flags, enum ibv_wc_opcode op)
{
	struct sv_swr *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->wr_id = wr_id;
	w->opcode = op;
	w->signaled = q->sq_sig_all || (flags & IBV_SEND_SIGNALED);
	return w;
}

static void sv_swr_queue(struct sv_qp *q, struct sv_swr *w)
{
	sv_list_add_tail(&q->sq, &w->link);
	q->sq_n++;
	sv_sq_drain(q);
}

/* Is this data WR the one the drop_conn_after knob cuts the wire at? */
static bool sv_fault_drop(void)
{
	if (!sv.fault.drop_conn_after)
		return false;
	return ++sv.fault.n_data > sv.fault.drop_conn_after;
}

static bool sv_in_flight(struct sv_qp *q)
{
	sv_foreach(l, &q->sq) {
		struct sv_swr *w = sv_container(l, struct sv_swr, link);

		if (w->remote && !w->done && w->seq)
			return true;
	}
	return false;
}

/* drop_conn_after: the wire is cut once what went out was answered. */
static void sv_cut_check(struct sv_qp *q)
{
	if (q->conn && q->conn->cut_pending && !sv_in_flight(q))
		sv_conn_kill(q->conn);
}

/* Put a remote WR on the wire; a missing or cut wire times it out. */
static void sv_send_remote(struct sv_qp *q, struct sv_swr *w, struct sv_msg *m,
			   const void *payload, size_t len)
{
	w->remote = true;
	if (q->qp.state == IBV_QPS_ERR) {
		w->done = true;
		w->status = IBV_WC_WR_FLUSH_ERR;
		return;
	}
	if (!q->conn || q->conn->dead) {
		w->done = true;
		w->status = IBV_WC_RETRY_EXC_ERR;
		return;
	}
	if (q->conn->cut_pending || sv_fault_drop()) {
		q->conn->cut_pending = true;	/* held back, never sent */
		sv_cut_check(q);
		return;
	}
	w->seq = m->seq = ++q->next_seq;
	if (sv_conn_send(q->conn, m, payload, len, NULL, 0) < 0)
		sv_conn_kill(q->conn);
}

static enum ibv_wc_opcode sv_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

static int sv_post_data(struct sv_qp *q, struct ibv_send_wr *wr, struct sv_swr *w)
{
	struct sv_msg m = { 0 };
	uint64_t len = sv_sge_len(wr->sg_list, wr->num_sge);
	uint8_t *buf;

	if (len > SV_MAX_MSG || ((wr->send_flags & IBV_SEND_INLINE) && len > q->max_inline))
		return EINVAL;
	buf = malloc(len ? len : 1);
	if (!buf)
		return ENOMEM;
	w->byte_len = (uint32_t)len;
	w->status = sv_gather(q, wr, buf);
	if (w->status != IBV_WC_SUCCESS) {
		w->done = true;
		goto out;
	}
	m.type = (wr->opcode == IBV_WR_RDMA_WRITE ||
		  wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) ? SV_MSG_WRITE : SV_MSG_SEND;
	m.len = (uint32_t)len;
	m.addr = wr->wr.rdma.remote_addr;
	m.rkey = wr->wr.rdma.rkey;
	m.imm = wr->imm_data;
	if (wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		m.flags |= SV_F_IMM;
	if (wr->opcode == IBV_WR_SEND_WITH_INV)
		m.flags |= SV_F_INV;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		m.flags |= SV_F_SOLICITED;
	sv_send_remote(q, w, &m, buf, len);
out:
	free(buf);
	return 0;
}

static int sv_post_read(struct sv_qp *q, struct ibv_send_wr *wr, struct sv_swr *w)
{
	struct sv_msg m = { .type = SV_MSG_READ };
	uint64_t len = sv_sge_len(wr->sg_list, wr->num_sge);

	if (len > SV_MAX_MSG)
		return EINVAL;
	w->sge = calloc((size_t)wr->num_sge + 1, sizeof(*w->sge));
	if (!w->sge)
		return ENOMEM;
	memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sge));
	w->nsge = wr->num_sge;
	w->byte_len = (uint32_t)len;
	for (int i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length &&
		    !sv_lkey_ptr(q, &wr->sg_list[i], IBV_ACCESS_LOCAL_WRITE)) {
			w->done = true;
			w->status = IBV_WC_LOC_PROT_ERR;
			return 0;
		}
	}
	m.rlen = len;
	m.addr = wr->wr.rdma.remote_addr;
	m.rkey = wr->wr.rdma.rkey;
	sv_send_remote(q, w, &m, NULL, 0);
	return 0;
}

static int sv_post_local(struct sv_qp *q, struct ibv_send_wr *wr, struct sv_swr *w)
{
	w->done = true;
	if (q->qp.state == IBV_QPS_ERR) {
		w->status = IBV_WC_WR_FLUSH_ERR;
		return 0;
	}
	if (wr->opcode == IBV_WR_LOCAL_INV) {
		w->status = sv_invalidate(q, wr->invalidate_rkey, false);
		return 0;
	}
	if (!wr->bind_mw.mw || wr->bind_mw.mw->type != IBV_MW_TYPE_2)
		return EINVAL;
	w->status = sv_do_bind(q, sv_container(wr->bind_mw.mw, struct sv_mw, mw),
			       wr->bind_mw.rkey, &wr->bind_mw.bind_info);
	return 0;
}

static int sv_post_one(struct sv_qp *q, struct ibv_send_wr *wr)
{
	struct sv_swr *w;
	int rc;

	if (sv.fault.err_qp_after && ++sv.fault.n_post == sv.fault.err_qp_after + 1 &&
	    q->qp.state != IBV_QPS_ERR)
		sv_qp_to_err(q, IBV_EVENT_QP_FATAL);
	if (q->qp.state != IBV_QPS_RTS && q->qp.state != IBV_QPS_ERR)
		return EINVAL;
	if (q->sq_n >= q->max_send_wr)
		return ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge)
		return EINVAL;
	w = sv_swr_new(q, wr->wr_id, wr->send_flags, sv_wc_opcode(wr->opcode));
	if (!w)
		return ENOMEM;
	switch (wr->opcode) {
	case IBV_WR_SEND: case IBV_WR_SEND_WITH_IMM: case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE: case IBV_WR_RDMA_WRITE_WITH_IMM:
		rc = sv_post_data(q, wr, w);
		break;
	case IBV_WR_RDMA_READ:
		rc = sv_post_read(q, wr, w);
		break;
	case IBV_WR_BIND_MW: case IBV_WR_LOCAL_INV:
		rc = sv.mw_off ? EINVAL : sv_post_local(q, wr, w);
		break;
	default:
		rc = EINVAL;
	}
	if (rc) {
		free(w->sge);
		free(w);
		return rc;
	}
	sv_swr_queue(q, w);
	return 0;
}

int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sv_qp *q = sv_qp(qp);
	int rc = 0;

	sv_lock();
	for (; wr; wr = wr->next) {
		rc = sv_post_one(q, wr);
		if (rc) {
			*bad = wr;
			break;
		}
	}
	sv_unlock();
	return rc;
}

/* Type 1 windows: ibv_bind_mw() binds through the send queue too. */
int sv_bind_mw1(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	struct sv_qp *q = sv_qp(qp);
	struct sv_swr *w;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int rc = 0;

	sv_lock();
	if (qp->state != IBV_QPS_RTS || q->sq_n >= q->max_send_wr) {
		rc = qp->state != IBV_QPS_RTS ? EINVAL : ENOMEM;
		goto out;
	}
	w = sv_swr_new(q, b->wr_id, b->send_flags, IBV_WC_BIND_MW);
	if (!w) {
		rc = ENOMEM;
		goto out;
	}
	w->done = true;
	w->status = sv_do_bind(q, sv_container(mw, struct sv_mw, mw), rkey,
			       &b->bind_info);
	if (w->status == IBV_WC_SUCCESS)
		mw->rkey = rkey;
	sv_swr_queue(q, w);
out:
	sv_unlock();
	return rc;
}

static void sv_match_early(struct sv_qp *q);

int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sv_qp *q = sv_qp(qp);
	int rc = 0;

	sv_lock();
	for (; wr; wr = wr->next) {
		struct sv_rwr *r;

		if (qp->state == IBV_QPS_RESET || wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > q->max_sge) {
			rc = EINVAL;
		} else if (q->rq_n >= q->max_recv_wr) {
			rc = ENOMEM;
		} else if (!(r = calloc(1, sizeof(*r))) ||
			   !(r->sge = calloc((size_t)wr->num_sge + 1, sizeof(*r->sge)))) {
			free(r);
			rc = ENOMEM;
		}
		if (rc) {
			*bad = wr;
			break;
		}
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*r->sge));
		if (qp->state == IBV_QPS_ERR) {
			sv_rwr_flush(q, r, IBV_WC_WR_FLUSH_ERR);
			free(r->sge);
			free(r);
			continue;
		}
		sv_list_add_tail(&q->rq, &r->link);
		q->rq_n++;
	}
	sv_match_early(q);
	sv_unlock();
	return rc;
}

/* ---- responder ---- */

static void sv_reply(struct sv_conn *c, uint32_t type, uint64_t seq,
		     enum ibv_wc_status st, const void *p, size_t len)
{
	struct sv_msg m = { .type = type, .seq = seq, .status = (int32_t)st,
			    .len = (uint32_t)len };

	if (sv_conn_send(c, &m, p, len, NULL, 0) < 0)
		sv_conn_kill(c);
}

/* Check an incoming rkey against this process's MRs and bound MWs. */
static enum ibv_wc_status sv_rkey_ptr(struct sv_qp *q, const struct sv_msg *m,
				      uint64_t len, unsigned int need, uint8_t **host)
{
	struct sv_mr *mr = sv_mr_by_key(m->rkey);
	struct sv_mw *w;

	*host = NULL;
	if (!(q->access & need))
		return IBV_WC_REM_INV_REQ_ERR;
	if (!len)
		return IBV_WC_SUCCESS;
	if (mr) {
		if (mr->mr.pd != q->qp.pd || !(mr->access & need) ||
		    m->addr < mr->iova || len > mr->mr.length ||
		    m->addr - mr->iova > mr->mr.length - len)
			return IBV_WC_REM_ACCESS_ERR;
		*host = (uint8_t *)mr->mr.addr + (m->addr - mr->iova);
		return IBV_WC_SUCCESS;
	}
	w = sv_mw_by_key(m->rkey);
	if (!w || !w->bound || w->mw.pd != q->qp.pd || !(w->access & need) ||
	    (w->mw.type == IBV_MW_TYPE_2 && w->qpn != q->qp.qp_num))
		return IBV_WC_REM_ACCESS_ERR;
	/* SOFTVERBS_MW_BOUNDS=0: as rdma_rxe (6.1, 6.12), only the MR's range */
	if (sv.mw_bounds_off ?
	    (m->addr < w->mr->iova || len > w->mr->mr.length ||
	     m->addr - w->mr->iova > w->mr->mr.length - len) :
	    (m->addr < w->addr || len > w->len || m->addr - w->addr > w->len - len))
		return IBV_WC_REM_ACCESS_ERR;
	*host = (uint8_t *)w->mr->mr.addr + (m->addr - w->mr->iova);
	return IBV_WC_SUCCESS;
}

static void sv_resp_read(struct sv_qp *q, struct sv_conn *c, const struct sv_msg *m)
{
	uint8_t *host;
	enum ibv_wc_status st = sv_rkey_ptr(q, m, m->rlen, IBV_ACCESS_REMOTE_READ, &host);

	if (st != IBV_WC_SUCCESS) {
		sv_reply(c, SV_MSG_READ_RESP, m->seq, st, NULL, 0);
		sv_qp_to_err(q, IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	sv_reply(c, SV_MSG_READ_RESP, m->seq, st, host, m->rlen);
}

static void sv_recv_done(struct sv_qp *q, struct sv_rwr *r, const struct sv_inbound *in,
			 enum ibv_wc_status st)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.status = st;
	wc.opcode = (in->flags & SV_F_IMM) && !in->data ? IBV_WC_RECV_RDMA_WITH_IMM :
							   IBV_WC_RECV;
	wc.byte_len = in->len;
	wc.qp_num = q->qp.qp_num;
	wc.src_qp = q->dest_qpn;
	if (in->flags & SV_F_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = in->imm;
	} else if (in->flags & SV_F_INV) {
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = in->imm;
	}
	sv_cq_push(sv_container(q->qp.recv_cq, struct sv_cq, cq), &wc,
		   (in->flags & SV_F_SOLICITED) != 0);
}

/* Consume one posted receive for an inbound SEND or WRITE_WITH_IMM. */
static void sv_deliver(struct sv_qp *q, struct sv_rwr *r, struct sv_inbound *in)
{
	enum ibv_wc_status st = IBV_WC_SUCCESS, rst = IBV_WC_SUCCESS;

	if (in->data)
		st = sv_scatter(q, r->sge, r->nsge, in->data, in->len);
	if (st == IBV_WC_LOC_LEN_ERR)
		rst = IBV_WC_REM_INV_REQ_ERR;
	else if (st != IBV_WC_SUCCESS)
		rst = IBV_WC_REM_OP_ERR;
	if (st == IBV_WC_SUCCESS && (in->flags & SV_F_INV) &&
	    sv_invalidate(q, in->imm, true) != IBV_WC_SUCCESS)
		st = rst = IBV_WC_REM_OP_ERR;
	sv_list_del(&r->link);
	q->rq_n--;
	sv_recv_done(q, r, in, st);
	free(r->sge);
	free(r);
	if (in->conn && !in->conn->dead)
		sv_reply(in->conn, SV_MSG_ACK, in->seq, rst, NULL, 0);
	if (st != IBV_WC_SUCCESS)
		sv_qp_to_err(q, 0);
}

static void sv_match_early(struct sv_qp *q)
{
	while (!sv_list_empty(&q->early) && !sv_list_empty(&q->rq) &&
	       q->qp.state != IBV_QPS_ERR) {
		struct sv_inbound *in = sv_container(q->early.next, struct sv_inbound, link);

		sv_list_del(&in->link);
		sv_list_init(&in->link);
		sv_deliver(q, sv_container(q->rq.next, struct sv_rwr, link), in);
		free(in->data);
		free(in);
	}
}

static void sv_resp_inbound(struct sv_qp *q, struct sv_conn *c, const struct sv_msg *m,
			    const uint8_t *p, bool has_data)
{
	struct sv_inbound *in = calloc(1, sizeof(*in));

	if (!in || (has_data && !(in->data = malloc(m->len ? m->len : 1)))) {
		free(in);
		sv_reply(c, SV_MSG_ACK, m->seq, IBV_WC_REM_OP_ERR, NULL, 0);
		return;
	}
	in->conn = c;
	in->seq = m->seq;
	in->flags = m->flags;
	in->imm = m->imm;
	in->len = m->len;
	if (has_data)
		memcpy(in->data, p, m->len);
	sv_list_add_tail(&q->early, &in->link);
	sv_match_early(q);
}

static void sv_resp_write(struct sv_qp *q, struct sv_conn *c, const struct sv_msg *m,
			  const uint8_t *p)
{
	uint8_t *host;
	enum ibv_wc_status st = sv_rkey_ptr(q, m, m->len, IBV_ACCESS_REMOTE_WRITE, &host);

	if (st != IBV_WC_SUCCESS) {
		sv_reply(c, SV_MSG_ACK, m->seq, st, NULL, 0);
		sv_qp_to_err(q, IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	if (m->len)
		memcpy(host, p, m->len);
	if (m->flags & SV_F_IMM) {
		sv_resp_inbound(q, c, m, NULL, false);
		return;
	}
	sv_reply(c, SV_MSG_ACK, m->seq, st, NULL, 0);
}

static struct sv_swr *sv_swr_by_seq(struct sv_qp *q, uint64_t seq)
{
	sv_foreach(l, &q->sq) {
		struct sv_swr *w = sv_container(l, struct sv_swr, link);

		if (w->remote && !w->done && w->seq == seq)
			return w;
	}
	return NULL;
}

static void sv_req_answer(struct sv_qp *q, const struct sv_msg *m, const uint8_t *p)
{
	struct sv_swr *w = sv_swr_by_seq(q, m->seq);

	if (!w)
		return;		/* flushed while the answer was in flight */
	w->done = true;
	w->status = (enum ibv_wc_status)m->status;
	if (m->type == SV_MSG_READ_RESP && w->status == IBV_WC_SUCCESS)
		w->status = sv_scatter(q, w->sge, w->nsge, p, m->len);
	sv_sq_drain(q);
	sv_cut_check(q);
}

void sv_qp_handle_data(struct sv_conn *c, const struct sv_msg *m, const uint8_t *p)
{
	struct sv_qp *q = c->id && c->id->id.qp ? sv_qp(c->id->id.qp) : NULL;
	bool live = q && (q->qp.state == IBV_QPS_RTR || q->qp.state == IBV_QPS_RTS);

	if (m->type == SV_MSG_ACK || m->type == SV_MSG_READ_RESP) {
		if (q)
			sv_req_answer(q, m, p);
		return;
	}
	if (!live) {	/* a dead responder drops packets: the peer times out */
		sv_reply(c, m->type == SV_MSG_READ ? SV_MSG_READ_RESP : SV_MSG_ACK,
			 m->seq, IBV_WC_RETRY_EXC_ERR, NULL, 0);
		return;
	}
	if (m->type == SV_MSG_READ)
		sv_resp_read(q, c, m);
	else if (m->type == SV_MSG_WRITE)
		sv_resp_write(q, c, m, p);
	else
		sv_resp_inbound(q, c, m, p, true);
}

SV_EXPORT int softverbs_qp_error(struct ibv_qp *qp)
{
	sv_lock();
	if (qp->state != IBV_QPS_ERR)
		sv_qp_to_err(sv_qp(qp), IBV_EVENT_QP_FATAL);
	sv_unlock();
	return 0;
}
