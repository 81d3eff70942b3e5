/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/rdma_qp.c: the rdma data path's connection: whether a device
 * exists here and marud offered its rdma listener (probe), one RC QP to
 * that listener (rdma_cm, the session token as private data) with a pool
 * of registered staging buffers and a completion channel watched with
 * epoll (no polling while idle), connected at open and again, lazily,
 * after an error or in a new session; and the drop of a QP in error.
 * The session's facts come as a value at open, and later through the
 * client's facts callback (c->env): nothing here calls session.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include "config.h"
#include "datapath.h"

#if HAVE_RDMA
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "rdma_priv.h"

static const char no_offer[] = "marud offers no rdma listener to this connection "
			       "(no --listen rdma://, or not authenticated)";

int dp_rdma_probe(const struct session *s, const char **why)
{
	struct ibv_device **list;
	int n = 0;

	if (!s->rdma_port) {
		*why = no_offer;
		return -ENODEV;
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		*why = "cannot list RDMA devices";
		return -ENODEV;
	}
	ibv_free_device_list(list);
	if (n <= 0) {
		*why = "no RDMA device";
		return -ENODEV;
	}
	return 0;
}

static void qp_close(struct rdma_dp *d)
{
	if (!d->id)
		return;
	if (d->id->qp)
		rdma_destroy_qp(d->id);
	if (d->mr)
		ibv_dereg_mr(d->mr);
	if (d->cq)
		ibv_destroy_cq(d->cq);
	if (d->cch)
		ibv_destroy_comp_channel(d->cch);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	rdma_disconnect(d->id);
	rdma_destroy_id(d->id);
	free(d->stage);
	if (d->ep >= 0)
		close(d->ep);
	d->id = NULL;
	d->pd = NULL;
	d->cch = NULL;
	d->cq = NULL;
	d->mr = NULL;
	d->stage = NULL;
	d->ep = -1;
}

static int qp_resolve(struct maru_client *c, struct rdma_dp *d, const struct dp_facts *s)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	const char *host = s->rdma_host;
	struct addrinfo *ai;
	char port[16];
	int rc;

	if (!host[0] || !strcmp(host, "0.0.0.0"))
		host = c->addr.unix || !c->addr.host[0] ? "127.0.0.1" : c->addr.host;
	snprintf(port, sizeof(port), "%u", s->rdma_port);
	if (getaddrinfo(host, port, &hints, &ai))
		return -EHOSTUNREACH;
	rc = rdma_create_id(NULL, &d->id, NULL, RDMA_PS_TCP);
	if (!rc)
		rc = rdma_resolve_addr(d->id, NULL, ai->ai_addr, RESOLVE_MS);
	freeaddrinfo(ai);
	if (!rc)
		rc = rdma_resolve_route(d->id, RESOLVE_MS);
	return rc ? (errno ? -errno : -EHOSTUNREACH) : 0;
}

static int qp_verbs(struct rdma_dp *d, size_t stage_bytes)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };
	struct epoll_event ev = { .events = EPOLLIN };

	d->nbuf = (unsigned int)(stage_bytes / STAGE_BUF);
	if (d->nbuf == 0)
		d->nbuf = 1;
	d->pd = ibv_alloc_pd(d->id->verbs);
	d->cch = d->pd ? ibv_create_comp_channel(d->id->verbs) : NULL;
	d->cq = d->cch ? ibv_create_cq(d->id->verbs, (int)d->nbuf * 2 + 4, NULL, d->cch, 0) :
			 NULL;
	if (!d->cq || posix_memalign((void **)&d->stage, 4096, (size_t)d->nbuf * STAGE_BUF))
		return -ENOMEM;
	d->mr = ibv_reg_mr(d->pd, d->stage, (size_t)d->nbuf * STAGE_BUF,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!d->mr)
		return errno ? -errno : -ENOMEM;
	fcntl(d->cch->fd, F_SETFL, fcntl(d->cch->fd, F_GETFL) | O_NONBLOCK);
	d->ep = epoll_create1(EPOLL_CLOEXEC);
	if (d->ep < 0 || epoll_ctl(d->ep, EPOLL_CTL_ADD, d->cch->fd, &ev))
		return -errno;
	qa.send_cq = qa.recv_cq = d->cq;
	qa.cap.max_send_wr = d->nbuf + 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	return rdma_create_qp(d->id, d->pd, &qa) ? -errno : 0;
}

static int qp_connect(struct rdma_dp *d, const struct dp_facts *s)
{
	struct proto_rdma_cm pd = { .magic = RDMA_CM_MAGIC, .generation = s->generation };
	struct rdma_conn_param p = { .private_data = &pd, .private_data_len = sizeof(pd),
				     .initiator_depth = 16, .responder_resources = 0,
				     .retry_count = 7, .rnr_retry_count = 7 };

	memcpy(pd.token, s->token, sizeof(pd.token));
	if (rdma_connect(d->id, &p))
		return errno == ECONNREFUSED || errno == EINVAL ? -ECONNREFUSED :
		       (errno ? -errno : -ECONNREFUSED);
	return 0;
}

/* Connect a QP for the session of facts s; d->lock held. */
static int qp_open(struct maru_client *c, struct rdma_dp *d, const struct dp_facts *s,
		   const char **why)
{
	int rc;

	if (!s->rdma_port) {
		*why = no_offer;
		return -ENODEV;
	}
	d->ep = -1;
	rc = qp_resolve(c, d, s);
	*why = "cannot resolve marud's rdma address";
	if (!rc) {
		rc = qp_verbs(d, c->opts.rdma_staging_bytes ? c->opts.rdma_staging_bytes :
				 STAGE_DEFAULT);
		*why = "cannot set up the QP, CQ or staging buffers";
	}
	if (!rc) {
		rc = qp_connect(d, s);
		*why = "marud refused the rdma connection";
	}
	if (rc) {
		qp_close(d);
		return rc;
	}
	/* numbered per client, never reused: a handle's rkeys name their QP */
	d->qp_gen = atomic_fetch_add(&c->st.rdma.qp_connects, 1) + 1;
	d->generation = s->generation;
	d->epoch = s->epoch;
	return 0;
}

int dp_rdma_qp_ready(struct maru_client *c, struct rdma_dp *d)
{
	const char *why = NULL;
	struct dp_facts s;
	int rc;

	c->env.facts(c, &s);
	if (d->id && d->epoch == s.epoch)
		return 0;
	qp_close(d);
	rc = qp_open(c, d, &s, &why);
	if (rc)
		clog_warnx(c, "%s: rdma: cannot connect: %s: %s", c->uri, why, strerror(-rc));
	return rc;
}

int dp_rdma_open(struct maru_client *c, const struct session *s, const char **why)
{
	struct dp_facts f;
	struct rdma_dp *d;
	int rc;

	dp_rdma_close(c);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->ep = -1;
	dp_facts_of(s, &f);
	pthread_mutex_lock(&d->lock);
	rc = qp_open(c, d, &f, why);
	pthread_mutex_unlock(&d->lock);
	if (rc) {
		pthread_mutex_destroy(&d->lock);
		free(d);
		return rc;
	}
	c->rdma = d;
	if (s->rdma_flags & RDMA_F_WHOLE_POOL)
		clog_warnx(c, "%s: data=rdma: marud's device has no memory windows: "
			   "the whole pool is exposed to rdma clients", c->uri);
	return 0;
}

void dp_rdma_close(struct maru_client *c)
{
	struct rdma_dp *d = c->rdma;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	qp_close(d);
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_destroy(&d->lock);
	free(d);
	c->rdma = NULL;
}

void dp_rdma_qp_fail(struct maru_client *c, struct rdma_dp *d)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[16];

	if (!d->id)
		return;
	atomic_fetch_add(&c->st.rdma.qp_errors, 1);
	ibv_modify_qp(d->id->qp, &a, IBV_QP_STATE);
	while (ibv_poll_cq(d->cq, 16, wc) > 0)
		;
	qp_close(d);
}

int dp_rdma_cq_wait(struct rdma_dp *d, struct ibv_wc *wc, uint64_t deadline)
{
	struct epoll_event ev;
	struct ibv_cq *cq;
	void *ctx;
	int n, ms;

	for (;;) {
		n = ibv_poll_cq(d->cq, 1, wc);
		if (n)
			return n < 0 ? -EIO : 0;
		if (ibv_req_notify_cq(d->cq, 0))
			return -EIO;
		/* a CQE that came before arming does not fire: poll once more */
		n = ibv_poll_cq(d->cq, 1, wc);
		if (n)
			return n < 0 ? -EIO : 0;
		ms = (int)(deadline > mono_ms() ? deadline - mono_ms() : 0);
		if (ms == 0 || epoll_wait(d->ep, &ev, 1, ms) == 0)
			return -ETIMEDOUT;
		if (ibv_get_cq_event(d->cch, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
	}
}
#endif
