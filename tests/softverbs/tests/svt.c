// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/tests/svt.c: the shared test helpers of svt.h. The peer
 * is a responder process with its own emulated NIC: it listens on
 * 127.0.0.1, accepts connections, registers memory and binds windows when
 * told, and checks its own memory so the parent can see what the wire did.
 * No real RDMA hardware is involved.
 */
#include "svt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SVT_MAX 8

struct svt_srv {
	int sock;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct rdma_cm_id *conn[SVT_MAX];
	int nconn;
	struct ibv_mr *mr[SVT_MAX];
	int nmr;
	struct ibv_mw *mw[SVT_MAX];
	uint32_t mw_rkey[SVT_MAX];
	int nmw;
};

void svt_fill(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

int svt_get_event(struct rdma_event_channel *ch, int timeout_ms,
		  struct rdma_cm_event **ev)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int n = poll(&pfd, 1, timeout_ms);

	if (n <= 0)
		return n == 0 ? -ETIMEDOUT : -errno;
	return rdma_get_cm_event(ch, ev) ? -errno : 0;
}

int svt_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	int rc = svt_get_event(ch, 5000, &ev);

	if (rc)
		return rc;
	rc = ev->event == type ? 0 : -(int)ev->event - 1000;
	rdma_ack_cm_event(ev);
	return rc;
}

int svt_wait_wc(struct ibv_cq *cq, int timeout_ms, struct ibv_wc *wc)
{
	for (int waited = 0; waited <= timeout_ms; waited++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? -EIO : 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

int svt_post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		  struct ibv_mr *mr, size_t off, size_t len, uint64_t raddr,
		  uint32_t rkey, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr + off,
			       .length = (uint32_t)len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = flags }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* ---- responder side (child process) ---- */

static int srv_qp(struct svt_srv *s, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = { .send_cq = s->cq, .recv_cq = s->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 4, .max_recv_sge = 4 } };

	return rdma_create_qp(id, s->pd, &a);
}

static int srv_accept(struct svt_srv *s, const struct svt_cmd *c, struct svt_reply *r)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct rdma_conn_param p = { .private_data = "srv-hello",
				     .private_data_len = 10 };
	int rc = svt_get_event(s->ch, 5000, &ev);

	if (rc || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return rc ? rc : -EPROTO;
	id = ev->id;
	if (ev->param.conn.private_data_len)
		memcpy(r->pdata, ev->param.conn.private_data,
		       ev->param.conn.private_data_len < 32 ?
		       ev->param.conn.private_data_len : 32);
	rdma_ack_cm_event(ev);
	if (c->a == 1)
		return rdma_reject(id, "srv-no", 7) ? -errno : 0;
	if (srv_qp(s, id) || rdma_accept(id, &p))
		return -errno;
	rc = svt_expect(s->ch, RDMA_CM_EVENT_ESTABLISHED);
	if (rc)
		return rc;
	r->idx = (uint64_t)s->nconn;
	s->conn[s->nconn++] = id;
	return 0;
}

static int srv_reg(struct svt_srv *s, const struct svt_cmd *c, struct svt_reply *r)
{
	uint8_t *buf = aligned_alloc(4096, (c->a + 4095) & ~4095ull);
	struct ibv_mr *mr;

	if (!buf || s->nmr == SVT_MAX)
		return -ENOMEM;
	memset(buf, 0, c->a);
	mr = ibv_reg_mr(s->pd, buf, c->a, (int)c->b);
	if (!mr)
		return -errno;
	r->addr = (uintptr_t)buf;
	r->rkey = mr->rkey;
	r->idx = (uint64_t)s->nmr;
	s->mr[s->nmr++] = mr;
	return 0;
}

static int srv_check(struct svt_srv *s, const struct svt_cmd *c)
{
	struct ibv_mr *mr = s->mr[c->a];
	uint8_t *want = malloc(mr->length);
	int rc;

	if (!want)
		return -ENOMEM;
	svt_fill(want, mr->length, c->b);
	rc = memcmp(want, mr->addr, mr->length) ? -EILSEQ : 0;
	free(want);
	return rc;
}

static int srv_wait(struct svt_srv *s, uint64_t wr_id)
{
	struct ibv_wc wc;
	int rc = svt_wait_wc(s->cq, 5000, &wc);

	if (rc)
		return rc;
	if (wc.wr_id != wr_id)
		return -EPROTO;
	return wc.status == IBV_WC_SUCCESS ? 0 : -(int)wc.status - 2000;
}

static int srv_mw_bind(struct svt_srv *s, const struct svt_cmd *c, struct svt_reply *r)
{
	struct ibv_mr *mr = s->mr[c->a];
	struct ibv_qp *qp = s->conn[c->b]->qp;
	struct ibv_mw *mw = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr = { .wr_id = 77, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int rc;

	if (!mw)
		return -errno;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)mr->addr;
	wr.bind_mw.bind_info.length = mr->length;
	wr.bind_mw.bind_info.mw_access_flags = c->c;
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc)
		return -rc;
	rc = srv_wait(s, 77);
	if (rc)
		return rc;
	r->rkey = wr.bind_mw.rkey;
	r->addr = (uintptr_t)mr->addr;
	r->idx = (uint64_t)s->nmw;
	s->mw_rkey[s->nmw] = r->rkey;
	s->mw[s->nmw++] = mw;
	return 0;
}

static int srv_mw_inv(struct svt_srv *s, const struct svt_cmd *c)
{
	struct ibv_send_wr wr = { .wr_id = 78, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int rc;

	wr.invalidate_rkey = s->mw_rkey[c->a];
	rc = ibv_post_send(s->conn[c->b]->qp, &wr, &bad);
	return rc ? -rc : srv_wait(s, 78);
}

static int srv_do(struct svt_srv *s, const struct svt_cmd *c, struct svt_reply *r)
{
	switch (c->op) {
	case SVT_ACCEPT: return srv_accept(s, c, r);
	case SVT_REG: return srv_reg(s, c, r);
	case SVT_DEREG: return ibv_dereg_mr(s->mr[c->a]) ? -EBUSY : 0;
	case SVT_CHECK: return srv_check(s, c);
	case SVT_FILL:
		svt_fill(s->mr[c->a]->addr, s->mr[c->a]->length, c->b);
		return 0;
	case SVT_MW_BIND: return srv_mw_bind(s, c, r);
	case SVT_MW_INV: return srv_mw_inv(s, c);
	case SVT_EVENT: return svt_expect(s->ch, (enum rdma_cm_event_type)c->a);
	default: return -EINVAL;
	}
}

static int srv_setup(struct svt_srv *s, uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->ch = rdma_create_event_channel();
	if (!s->ch || rdma_create_id(s->ch, &s->lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(s->lid, (struct sockaddr *)&sin) ||
	    rdma_listen(s->lid, 8))
		return -1;
	s->pd = ibv_alloc_pd(s->lid->verbs);
	s->cq = s->pd ? ibv_create_cq(s->lid->verbs, 256, NULL, NULL, 0) : NULL;
	*port = ntohs(rdma_get_src_port(s->lid));
	return s->cq ? 0 : -1;
}

static int srv_main(int sock)
{
	struct svt_srv s = { .sock = sock };
	struct svt_cmd c;
	struct svt_reply r = { 0 };

	r.rc = srv_setup(&s, (uint16_t *)&r.idx);
	if (send(sock, &r, sizeof(r), 0) != sizeof(r) || r.rc)
		return 1;
	while (recv(sock, &c, sizeof(c), 0) == sizeof(c) && c.op != SVT_EXIT) {
		memset(&r, 0, sizeof(r));
		r.rc = srv_do(&s, &c, &r);
		if (send(sock, &r, sizeof(r), 0) != sizeof(r))
			return 1;
	}
	return 0;
}

int svt_peer_start(struct svt_peer *p)
{
	struct svt_reply r;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		close(sv[0]);
		/* cmocka's handlers would resume its test loop in the child */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		alarm(60);
		_exit(srv_main(sv[1]));
	}
	close(sv[1]);
	p->sock = sv[0];
	if (svt_peer_recv(p, &r) || r.rc)
		return -EIO;
	p->port = (uint16_t)r.idx;
	return 0;
}

int svt_peer_send(struct svt_peer *p, int op, uint64_t a, uint64_t b, uint32_t c)
{
	struct svt_cmd cmd = { .op = op, .a = a, .b = b, .c = c };

	return send(p->sock, &cmd, sizeof(cmd), 0) == sizeof(cmd) ? 0 : -EIO;
}

int svt_peer_recv(struct svt_peer *p, struct svt_reply *r)
{
	struct pollfd pfd = { .fd = p->sock, .events = POLLIN };

	if (poll(&pfd, 1, 10000) != 1)
		return -ETIMEDOUT;
	return recv(p->sock, r, sizeof(*r), 0) == sizeof(*r) ? 0 : -EIO;
}

int svt_peer_cmd(struct svt_peer *p, int op, uint64_t a, uint64_t b, uint32_t c,
		 struct svt_reply *r)
{
	int rc = svt_peer_send(p, op, a, b, c);

	return rc ? rc : svt_peer_recv(p, r);
}

/* Returns the child's exit status, or -1 if it did not exit cleanly. */
int svt_peer_stop(struct svt_peer *p)
{
	int st;

	svt_peer_send(p, SVT_EXIT, 0, 0, 0);
	close(p->sock);
	if (waitpid(p->pid, &st, 0) != p->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- requester side ---- */

int svt_ep_init(struct svt_ep *e, const char *ip, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 4, .max_recv_sge = 4 } };

	memset(e, 0, sizeof(*e));
	inet_pton(AF_INET, ip, &sin.sin_addr);
	e->ch = rdma_create_event_channel();
	if (!e->ch || rdma_create_id(e->ch, &e->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(e->id, NULL, (struct sockaddr *)&sin, 1000) ||
	    svt_expect(e->ch, RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(e->id, 1000) ||
	    svt_expect(e->ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return -1;
	e->pd = ibv_alloc_pd(e->id->verbs);
	e->cc = ibv_create_comp_channel(e->id->verbs);
	e->cq = ibv_create_cq(e->id->verbs, 256, e, e->cc, 0);
	if (!e->pd || !e->cc || !e->cq)
		return -1;
	a.send_cq = a.recv_cq = e->cq;
	return rdma_create_qp(e->id, e->pd, &a);
}

int svt_ep_connect(struct svt_ep *e, const void *pdata, uint8_t len,
		   struct rdma_cm_event **ev)
{
	struct rdma_conn_param p = { .private_data = pdata, .private_data_len = len,
				     .responder_resources = 4, .initiator_depth = 4,
				     .retry_count = 7, .rnr_retry_count = 7 };

	if (rdma_connect(e->id, &p))
		return -errno;
	return svt_get_event(e->ch, 5000, ev);
}

/* Connect e to peer, which accepts: both ends are ESTABLISHED after. */
int svt_connect(struct svt_ep *e, uint16_t port, struct svt_peer *peer)
{
	struct rdma_cm_event *ev;
	struct svt_reply r;
	int rc;

	if (svt_ep_init(e, "127.0.0.1", port) ||
	    svt_peer_send(peer, SVT_ACCEPT, 0, 0, 0))
		return -1;
	rc = svt_ep_connect(e, "cli", 4, &ev);
	if (rc)
		return rc;
	rc = ev->event == RDMA_CM_EVENT_ESTABLISHED ? 0 : -EPROTO;
	rdma_ack_cm_event(ev);
	if (svt_peer_recv(peer, &r) || r.rc)
		return -EIO;
	return rc;
}

void svt_ep_fini(struct svt_ep *e)
{
	if (e->id && e->id->qp)
		rdma_destroy_qp(e->id);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->cc)
		ibv_destroy_comp_channel(e->cc);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	memset(e, 0, sizeof(*e));
}

/* Listen, connect and accept in one thread: every step is an event. */
int svt_loop_open(struct svt_loop *l)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_event *ev;

	memset(l, 0, sizeof(*l));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->sch = rdma_create_event_channel();
	if (!l->sch || rdma_create_id(l->sch, &l->lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(l->lid, (struct sockaddr *)&sin) || rdma_listen(l->lid, 4) ||
	    svt_ep_init(&l->cli, "127.0.0.1", ntohs(rdma_get_src_port(l->lid))) ||
	    rdma_connect(l->cli.id, &p) || svt_get_event(l->sch, 5000, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return -1;
	l->sid = ev->id;
	rdma_ack_cm_event(ev);
	l->scq = ibv_create_cq(l->sid->verbs, 64, NULL, NULL, 0);
	a.send_cq = a.recv_cq = l->scq;
	if (!l->scq || rdma_create_qp(l->sid, NULL, &a) || rdma_accept(l->sid, &p))
		return -1;
	if (svt_expect(l->cli.ch, RDMA_CM_EVENT_ESTABLISHED) ||
	    svt_expect(l->sch, RDMA_CM_EVENT_ESTABLISHED))
		return -1;
	return 0;
}

void svt_loop_close(struct svt_loop *l)
{
	svt_ep_fini(&l->cli);
	if (l->sid) {
		rdma_destroy_qp(l->sid);
		rdma_destroy_id(l->sid);
	}
	if (l->scq)
		ibv_destroy_cq(l->scq);
	if (l->lid)
		rdma_destroy_id(l->lid);
	if (l->sch)
		rdma_destroy_event_channel(l->sch);
}
