/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/rdma_peer.c: marud's rdma side and a hand-built client
 * for the rdma data path's unit tests (see rdma_peer.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_peer.h"

static const struct proto_extent fx_ext[PEER_NEXT] = {
	{ 8192, 4096 }, { 65536, 8192 }, { 20480, 8192 },
};

static void peer_accept(struct rdma_peer *p, struct rdma_cm_event *ev)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_conn_param cp = { .responder_resources = 16, .initiator_depth = 1 };
	struct rdma_cm_id *id = ev->id;
	struct ibv_cq *cq;

	pthread_mutex_lock(&p->mu);
	if (!p->pd) {
		p->pd = ibv_alloc_pd(id->verbs);
		p->mr = ibv_reg_mr(p->pd, p->pool, PEER_POOL, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	}
	if (ev->param.conn.private_data_len >= sizeof(p->last))
		memcpy(&p->last, ev->param.conn.private_data, sizeof(p->last));
	cq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	a.send_cq = a.recv_cq = cq;
	if (!cq || rdma_create_qp(id, p->pd, &a) || rdma_accept(id, &cp) ||
	    p->nids == 16)
		abort();
	p->ids[p->nids] = id;
	p->cqs[p->nids++] = cq;
	p->connects++;
	pthread_mutex_unlock(&p->mu);
}

static void *peer_main(void *arg)
{
	struct rdma_peer *p = arg;
	struct pollfd pfd = { .fd = p->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	for (;;) {
		pthread_mutex_lock(&p->mu);
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		pthread_mutex_unlock(&p->mu);
		if (poll(&pfd, 1, 50) <= 0 || rdma_get_cm_event(p->ch, &ev))
			continue;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			peer_accept(p, ev);
		rdma_ack_cm_event(ev);
	}
}

void peer_start(struct rdma_peer *p)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	p->pool = aligned_alloc(4096, PEER_POOL);
	if (!p->pool)
		abort();
	for (uint64_t i = 0; i < PEER_POOL; i++)
		p->pool[i] = peer_pattern(i);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->ch = rdma_create_event_channel();
	if (!p->ch || rdma_create_id(p->ch, &p->lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(p->lid, (struct sockaddr *)&sin) || rdma_listen(p->lid, 8))
		abort();
	p->port = ntohs(rdma_get_src_port(p->lid));
	if (pthread_create(&p->thread, NULL, peer_main, p))
		abort();
}

int peer_connects(struct rdma_peer *p)
{
	int n;

	pthread_mutex_lock(&p->mu);
	n = p->connects;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void peer_stop(struct rdma_peer *p)
{
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	for (int i = 0; i < p->nids; i++) {
		rdma_destroy_qp(p->ids[i]);
		rdma_destroy_id(p->ids[i]);
		ibv_destroy_cq(p->cqs[i]);
	}
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	rdma_destroy_id(p->lid);
	rdma_destroy_event_channel(p->ch);
	free(p->pool);
	pthread_mutex_destroy(&p->mu);
}

/* ---- the client ---- */

uint64_t rdma_fx_where(uint64_t k)
{
	for (int i = 0; i < PEER_NEXT; i++) {
		if (k < fx_ext[i].len)
			return fx_ext[i].off + k;
		k -= fx_ext[i].len;
	}
	return UINT64_MAX;
}

static struct rdma_fx *the_fx;	/* the callbacks take the client only */

static void fx_facts(struct maru_client *c, struct dp_facts *out)
{
	*out = the_fx->facts;
}

/* marud's RKEY: the handle's extents at their pool addresses, with the MR's rkey. */
static int fx_call(struct maru_client *c, struct req *r)
{
	struct rdma_fx *x = the_fx;
	const struct proto_rkey_req *q = r->p1;
	struct proto_rkey_rep *h;
	struct proto_rkey *k;
	size_t len = sizeof(*h) + PEER_NEXT * sizeof(*k);

	if (r->op != OP_RKEY || q->ino != x->f.ino)
		return -EINVAL;
	x->rkey_calls++;
	h = calloc(1, len);
	if (!h)
		return -ENOMEM;
	h->count = PEER_NEXT;
	k = (struct proto_rkey *)(h + 1);
	for (int i = 0; i < PEER_NEXT; i++) {
		k[i].off = fx_ext[i].off;
		k[i].len = fx_ext[i].len;
		k[i].addr = (uintptr_t)x->p.pool + fx_ext[i].off;
		k[i].rkey = x->p.mr->rkey ^ x->rkey_xor;
	}
	r->rep = h;
	r->rlen = (uint32_t)len;
	return 0;
}

int rdma_fx_setup(struct rdma_fx *x)
{
	struct session s = { .rdma_port = 0 };
	const char *why = NULL;
	int rc;

	memset(x, 0, sizeof(*x));
	the_fx = x;
	peer_start(&x->p);
	snprintf(x->c.uri, sizeof(x->c.uri), "maru+unix:///test");
	x->c.opts.timeout_ms = 2000;
	x->c.opts.rdma_staging_bytes = 2u << 20;
	x->c.env.call = fx_call;
	x->c.env.facts = fx_facts;
	atomic_store(&x->c.last_ok_ms, mono_ms());
	pthread_rwlock_init(&x->c.dp_lock, NULL);
	s.rdma_port = x->p.port;
	s.generation = 7;
	s.epoch = 0;
	memset(s.token, 0x3c, sizeof(s.token));
	snprintf(s.rdma_host, sizeof(s.rdma_host), "127.0.0.1");
	dp_facts_of(&s, &x->facts);
	memcpy(x->ext, fx_ext, sizeof(x->ext));
	x->f.c = &x->c;
	x->f.ino = 42;
	x->f.ext = x->ext;
	x->f.next = PEER_NEXT;
	x->f.reserved = 4096 + 8192 + 8192;
	x->f.generation = 7;
	x->f.pending = 1;
	x->f.dirty_lo = UINT64_MAX;
	pthread_rwlock_init(&x->f.lock, NULL);
	rc = dp_rdma_ops.probe(&s, &why);
	if (!rc)
		rc = dp_rdma_ops.open(&x->c, &s, &why);
	if (!rc)
		x->c.dp = &dp_rdma_ops;
	return rc;
}

void rdma_fx_teardown(struct rdma_fx *x)
{
	if (x->f.held)
		x->f.held->forget(&x->f);
	dp_rdma_ops.close(&x->c);
	pthread_rwlock_destroy(&x->f.lock);
	pthread_rwlock_destroy(&x->c.dp_lock);
	peer_stop(&x->p);
	the_fx = NULL;
}
