// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/rdma/rdma_listen.c: the rdma:// listeners (librdmacm, RC QPs) and
 * their event thread. A client connects after an authenticated HELLO with
 * the session token and generation as private data (proto.h); the token
 * must name a session that asked for rdma in HELLO, the generation must be
 * ours, and with no key configured the peer must be loopback. The accepted
 * QP becomes the session's (an earlier one is fenced first). A disconnect
 * fences the QP (quarantine.c) under the lock, then, with the lock
 * dropped, destroys the QP, and the id after its events are acknowledged.
 * The event thread is also the one that registers the pool with a device
 * (rdma_mr.c), before it takes the lock. Also the rdma lines of STATS.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "pool.h"
#include "prom.h"
#include "rdma_priv.h"
#include "server_priv.h"

static int listen_one(struct rdma_srv *r, const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	struct rdma_cm_id *id;
	char ps[8];
	int rc;

	snprintf(ps, sizeof(ps), "%u", port);
	rc = getaddrinfo(host, ps, &hints, &ai);
	if (rc)
		return -EINVAL;
	rc = rdma_create_id(r->ch, &id, NULL, RDMA_PS_TCP);
	if (rc) {
		freeaddrinfo(ai);
		return -errno;
	}
	rc = rdma_bind_addr(id, ai->ai_addr);
	freeaddrinfo(ai);
	if (!rc)
		rc = rdma_listen(id, 64);
	if (rc) {
		rc = -errno;
		rdma_destroy_id(id);
		return rc;
	}
	r->lid[r->nlid++] = id;
	if (!r->port) {
		snprintf(r->host, sizeof(r->host), "%s", host);
		r->port = port;
	}
	log_info("listening on rdma://%s:%u", host, port);
	return 0;
}

static int srv_listen_all(struct rdma_srv *r, const struct config *cfg)
{
	char host[64];
	uint16_t port;
	unsigned int i;
	int rc;

	for (i = 0; i < cfg->nlisten; i++) {
		if (rdma_uri(cfg->listen[i], host, sizeof(host), &port) != 1)
			continue;
		if (r->nlid == RDMA_MAX_LISTEN)
			return -E2BIG;
		rc = listen_one(r, host, port);
		if (rc) {
			log_warn(-rc, "listen %s", cfg->listen[i]);
			return rc;
		}
	}
	return 0;
}

static int has_rdma_listen(const struct config *cfg)
{
	char host[64];
	uint16_t port;
	unsigned int i;

	for (i = 0; i < cfg->nlisten; i++)
		if (rdma_uri(cfg->listen[i], host, sizeof(host), &port) == 1)
			return 1;
	return 0;
}

int rdma_srv_open(struct server *srv, struct rdma_srv **out)
{
	struct rdma_srv *r;
	int rc;

	*out = NULL;
	if (!has_rdma_listen(&srv->cfg))
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->idle, NULL);
	r->srv = srv;
	r->base = srv->pool->base;
	r->size = srv->pool->size;
	r->generation = srv->generation;
	r->have_key = srv->have_key;
	r->cfg_rights = srv->cfg.rdma_rights;
	r->wake[0] = r->wake[1] = -1;
	r->ch = rdma_create_event_channel();
	rc = r->ch ? pipe2(r->wake, O_CLOEXEC) : -1;
	if (rc) {
		rc = errno ? -errno : -ENODEV;
		log_warn(-rc, "rdma: no event channel (is there an RDMA device?)");
		goto fail;
	}
	rc = srv_listen_all(r, &srv->cfg);
	if (rc)
		goto fail;
	rdma_devs_test(r);
	*out = r;
	return 0;
fail:
	rdma_srv_close(r);
	return rc;
}

/* ---- connection requests ---- */

static int peer_loopback(struct rdma_cm_id *id, char *name, size_t n)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	const struct sockaddr_in *in = (const void *)sa;

	snprintf(name, n, "rdma peer");
	if (!sa || sa->sa_family != AF_INET)
		return 0;
	snprintf(name, n, "rdma %u.%u.%u.%u:%u", ((uint8_t *)&in->sin_addr)[0],
		 ((uint8_t *)&in->sin_addr)[1], ((uint8_t *)&in->sin_addr)[2],
		 ((uint8_t *)&in->sin_addr)[3], ntohs(in->sin_port));
	return ((uint8_t *)&in->sin_addr)[0] == 127;
}

/* Why the request must be refused, or NULL; lock held. */
static const char *req_check(struct rdma_srv *r, const struct rdma_cm_event *ev,
			     struct rsess **rs, char *peer, size_t n)
{
	const struct proto_rdma_cm *pd = ev->param.conn.private_data;

	if (!peer_loopback(ev->id, peer, n) && !r->have_key)
		return "not loopback and no key configured";
	if (!pd || ev->param.conn.private_data_len < sizeof(*pd) ||
	    pd->magic != RDMA_CM_MAGIC)
		return "no session in the request";
	if (pd->generation != r->generation)
		return "another generation";
	*rs = rdma_rsess_by_token(r, pd->token);
	return *rs ? NULL : "unknown session (no authenticated HELLO asked for rdma)";
}

static int conn_qp(struct rdma_srv *r, struct rconn *rc)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .sq_sig_all = 0 };

	(void)r;
	/* extent MRs on the QP's own PD: no other client's QP can use them */
	rc->pd = rc->dev->rights == RIGHTS_MR ? ibv_alloc_pd(rc->id->verbs) : rc->dev->pd;
	if (!rc->pd)
		return -ENOMEM;
	rc->cch = ibv_create_comp_channel(rc->id->verbs);
	if (!rc->cch)
		return -ENOMEM;
	rc->cq = ibv_create_cq(rc->id->verbs, RDMA_SQ_DEPTH * 2, NULL, rc->cch, 0);
	if (!rc->cq) {
		rdma_rconn_cq_free(rc);
		return -ENOMEM;
	}
	qa.send_cq = qa.recv_cq = rc->cq;
	qa.cap.max_send_wr = RDMA_SQ_DEPTH;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(rc->id, rc->pd, &qa)) {
		int rcode = -errno;

		rdma_rconn_cq_free(rc);
		return rcode;
	}
	return 0;
}

static int accept_qp(struct rdma_srv *r, struct rconn *rc)
{
	struct rdma_conn_param p = { .responder_resources = 16, .initiator_depth = 0,
				     .rnr_retry_count = 7 };
	int err = conn_qp(r, rc);

	if (!err && rdma_accept(rc->id, &p))
		err = -errno;
	if (err)
		rdma_rconn_destroy(rc);
	return err;
}

/* 0: accepted; -1: refused (the caller destroys the id after the ack). */
static int on_request(struct rdma_srv *r, struct rdma_cm_event *ev)
{
	/* tested and registered first, without the lock (it can take seconds) */
	struct rdma_dev *dev = rdma_dev_get(r, ev->id->verbs, rdma_get_local_addr(ev->id));
	struct rsess *rs = NULL;
	struct rconn *rc;
	const char *why;
	char peer[64];
	int err;

	pthread_mutex_lock(&r->lock);
	why = req_check(r, ev, &rs, peer, sizeof(peer));
	if (!why && !dev)
		why = "the pool is not registered with this device";
	if (!why && dev->rights == RIGHTS_REFUSED)
		why = "the device enforces no rkey rights (rdma-rights = trust-pool "
		      "would serve it)";
	rc = why ? NULL : calloc(1, sizeof(*rc));
	if (!why && !rc)
		why = "out of memory";
	if (!why) {
		rc->id = ev->id;
		rc->dev = dev;
		snprintf(rc->peer, sizeof(rc->peer), "%s", peer);
		err = accept_qp(r, rc);
		if (err) {
			why = strerror(-err);
			free(rc);
		}
	}
	if (why) {
		atomic_fetch_add(&r->st.rejected, 1);
		pthread_mutex_unlock(&r->lock);
		log_warnx("rdma: %s: connection refused: %s", peer, why);
		rdma_reject(ev->id, NULL, 0);
		return -1;
	}
	if (rs->rc)
		rdma_rconn_fence(r, rs->rc, "the session connected a new QP");
	rs->rc = rc;
	rc->rs = rs;
	ev->id->context = rc;
	rc->next = r->conns;
	r->conns = rc;
	atomic_fetch_add(&r->st.accepted, 1);
	atomic_fetch_add(&r->st.conns, 1);
	pthread_mutex_unlock(&r->lock);
	log_debug("rdma: %s: QP accepted for a session", peer);
	return 0;
}

/*
 * The id is gone for good: fence (if not yet), unlist, and wait (the lock
 * dropped meanwhile) until no RKEY registers on its PD; lock held.
 */
static void conn_gone(struct rdma_srv *r, struct rconn *rc)
{
	struct rconn **pp;

	if (!rc->fenced)
		rdma_rconn_fence(r, rc, "disconnected");
	for (pp = &r->conns; *pp && *pp != rc; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = rc->next;
	while (rc->busy)
		pthread_cond_wait(&r->idle, &r->lock);
}

/* One CM event; returns the id to destroy once the event is acked, or NULL. */
static struct rdma_cm_id *on_event(struct rdma_srv *r, struct rdma_cm_event *ev)
{
	struct rconn *rc = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return on_request(r, ev) ? ev->id : NULL;
	case RDMA_CM_EVENT_ESTABLISHED:
		return NULL;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (!rc)
			return NULL;
		pthread_mutex_lock(&r->lock);
		conn_gone(r, rc);
		pthread_mutex_unlock(&r->lock);
		rdma_rconn_destroy(rc);
		ev->id->context = NULL;
		free(rc);
		return ev->id;
	default:
		return NULL;
	}
}

static void *event_main(void *arg)
{
	struct rdma_srv *r = arg;
	struct pollfd pf[2] = { { .fd = r->ch->fd, .events = POLLIN },
				{ .fd = r->wake[0], .events = POLLIN } };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *gone;
	unsigned int i;

	/* a listener bound to a device: register the pool now, not at the first QP */
	for (i = 0; i < r->nlid; i++)
		if (r->lid[i]->verbs)
			rdma_dev_get(r, r->lid[i]->verbs, NULL);
	for (;;) {
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		if (!(pf[0].revents & POLLIN) || rdma_get_cm_event(r->ch, &ev))
			continue;
		gone = on_event(r, ev);
		rdma_ack_cm_event(ev);
		if (gone)
			rdma_destroy_id(gone);
	}
	return NULL;
}

int rdma_srv_start(struct rdma_srv *r)
{
	int rc;

	if (!r)
		return 0;
	rc = -pthread_create(&r->thr, NULL, event_main, r);
	if (!rc)
		r->running = 1;
	return rc;
}

/* Every connection left (marud stops): fence and destroy; no event thread. */
static void conns_drop(struct rdma_srv *r)
{
	struct rconn *rc;

	while ((rc = r->conns)) {
		pthread_mutex_lock(&r->lock);
		conn_gone(r, rc);
		pthread_mutex_unlock(&r->lock);
		rdma_rconn_destroy(rc);
		rdma_destroy_id(rc->id);
		free(rc);
	}
}

void rdma_srv_close(struct rdma_srv *r)
{
	unsigned int i;

	if (!r)
		return;
	if (r->running) {
		if (write(r->wake[1], "x", 1) < 0)
			log_warn(errno, "rdma: waking the event thread");
		pthread_join(r->thr, NULL);
		r->running = 0;
	}
	conns_drop(r);
	for (i = 0; i < r->nlid; i++)
		rdma_destroy_id(r->lid[i]);
	while (r->sess) {
		struct rsess *rs = r->sess;

		r->sess = rs->next;
		rdma_rwin_revoke(r, rs, 0, 1);
		free(rs);
	}
	rdma_devs_close(r);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	if (r->wake[0] >= 0)
		close(r->wake[0]);
	if (r->wake[1] >= 0)
		close(r->wake[1]);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->idle);
	free(r);
}

/* ---- stats ---- */

/* Whether an rkey marud hands out can reach beyond its extent. */
static int rdma_pool_exposed(const struct rdma_srv *r)
{
	unsigned int i;

	for (i = 0; i < r->ntested; i++)
		if (r->tested[i].rights == RIGHTS_POOL)
			return 1;
	return r->rights == RIGHTS_POOL;
}

int rdma_stats(struct rdma_srv *r, struct pbuf *out)
{
	const struct rdma_stat *s;
	struct prom p = PROM_INIT;
	int rc;

	if (!r)
		return 0;
	s = &r->st;
	prom_gauge(&p, "marud_rdma_pool_exposed", "1: rkeys are not bounded to their "
		   "extent (trust-pool: one MR exposes the whole pool to every rdma client)",
		   (uint64_t)rdma_pool_exposed(r));
	prom_gauge(&p, "marud_rdma_rights", "how rkey rights are enforced: 1 memory "
		   "windows, 2 one MR per extent, 3 trust-pool (not enforced), 4 refused "
		   "(no rdma client served), 0 no device tested yet", (uint64_t)r->rights);
	prom_gauge_signed(&p, "marud_rdma_window_bounds_enforced", "the self-test's "
			  "answer: 1 a window refused an access outside its extent, 0 it "
			  "did not (rdma_rxe), -1 not tested", r->ntested ?
			  r->tested[0].chk.win_bounds : -1);
	prom_counter(&p, "marud_rdma_pool_registration_us_total", "time spent "
		     "registering the pool (event thread, no lock held)",
		     atomic_load(&s->pool_reg_us));
	prom_counter(&p, "marud_rdma_extent_mrs_total", "MRs registered for one "
		     "extent's right (extent-mr mode)", atomic_load(&s->mr_regs));
	prom_counter(&p, "marud_rdma_extent_mr_us_total", "time spent registering "
		     "them", atomic_load(&s->mr_reg_us));
	prom_gauge_signed(&p, "marud_rdma_qps", "client QPs attached", atomic_load(&s->conns));
	prom_gauge_signed(&p, "marud_rdma_windows", "live rkeys (windows bound, or extent MRs)",
			  atomic_load(&s->windows));
	prom_gauge_signed(&p, "marud_rdma_quarantined_bytes", "bytes held until a QP "
			  "is fenced", atomic_load(&s->quarantined));
	prom_counter(&p, "marud_rdma_quarantined_bytes_total", "bytes ever held for a fence",
		     atomic_load(&s->quarantined_total));
	prom_counter(&p, "marud_rdma_fences_total", "QPs moved to error, drained, "
		     "their rights revoked", atomic_load(&s->fences));
	prom_counter(&p, "marud_rdma_binds_total", "rkeys granted (windows bound, or "
		     "extent MRs)", atomic_load(&s->binds));
	prom_counter(&p, "marud_rdma_revokes_total", "rkeys revoked (windows "
		     "deallocated, extent MRs deregistered)",
		     atomic_load(&s->revokes));
	prom_counter(&p, "marud_rdma_accepted_total", "QPs accepted", atomic_load(&s->accepted));
	prom_counter(&p, "marud_rdma_rejected_total", "connection requests refused",
		     atomic_load(&s->rejected));
	prom_counter(&p, "marud_rdma_rkey_refused_total", "RKEY asked for a version "
		     "not held so", atomic_load(&s->refused_rkey));
	prom_counter(&p, "marud_rdma_bind_errors_total", "window binds that failed",
		     atomic_load(&s->bind_errors));
	rc = p.err ? p.err : proto_buf_put(out, p.buf, p.len);
	prom_fini(&p);
	return rc;
}
