/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/rdma.c: the rdma data path: client-driven one-sided transfers.
 * After a HELLO in which marud offered its rdma listener, the client
 * connects one RC QP there (rdma_cm, the session token as private data) and
 * registers a pool of staging buffers. A read is RDMA READs from the
 * version's extents into staging buffers, then copies to the caller; a
 * write copies into staging buffers, then RDMA WRITEs into the pending
 * version's extents. The remote keys come from RKEY (per version: read-only
 * for a lease, read-write for the own pending version) and are cached on
 * the handle for the QP they were bound on. A transfer is split into one WR
 * per staging buffer, all in flight at once; completions arrive through a
 * completion channel watched with epoll (no polling while idle), bounded by
 * the client's timeout. Any error completion or a timeout fails the call
 * with -EIO (a log line names the operation and the reason), moves the QP
 * to the error state, drains it and drops it, and connects a new one
 * before it returns (marud fences the old QP first). A write that failed
 * poisons its handle: sync (so publish) fails. A write feeds file.c's
 * publish digest (f->hs) from each staging buffer right after the copy, so
 * marud need not read the version to hash it. Transfers of a client run one at a time (dp_rdma.lock). Only this file
 * of libmaru includes the verbs headers; file.c decides everything else.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "client_priv.h"
#include "config.h"
#include "datapath.h"
#include "log.h"

#if HAVE_RDMA
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "failpoint.h"
#include "frame.h"
#include "hash.h"
#include "transport.h"

#define STAGE_BUF	(1u << 20)
#define STAGE_DEFAULT	(8u << 20)
#define RESOLVE_MS	2000

struct rdma_dp {
	pthread_mutex_t lock;		/* one transfer at a time; all below */
	struct rdma_cm_id *id;		/* NULL: not connected */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *stage;
	unsigned int nbuf;
	int ep;
	uint64_t qp_gen;		/* bumped per QP: rkeys are bound to one */
	uint64_t generation;		/* marud's, when connected */
	uint64_t epoch;			/* session epoch, when connected */
};

struct rdma_keys {
	uint64_t qp_gen;
	int rw;
	int poisoned;			/* a write failed: never publish this */
	uint32_t n;
	struct proto_rkey *k;
};

/* One WR's piece: n bytes at remote (addr, rkey) <-> user bytes at u. */
struct piece {
	uint64_t addr;
	uint32_t rkey;
	uint32_t n;
	uint8_t *u;
};

int rdma_probe(const char **why)
{
	struct ibv_device **list;
	int n = 0;

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

/* ---- the QP ---- */

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

static int qp_resolve(struct maru_client *c, struct rdma_dp *d, const struct session *s)
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

static int qp_connect(struct rdma_dp *d, const struct session *s)
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

/* Connect a QP for the current session; d->lock held. */
static int qp_open(struct maru_client *c, struct rdma_dp *d, const char **why)
{
	struct session s;
	int rc;

	pthread_mutex_lock(&c->lock);
	s = c->s;
	pthread_mutex_unlock(&c->lock);
	if (!s.rdma_port) {
		*why = "marud offers no rdma listener to this connection "
		       "(no --listen rdma://, or not authenticated)";
		return -ENODEV;
	}
	d->ep = -1;
	rc = qp_resolve(c, d, &s);
	*why = "cannot resolve marud's rdma address";
	if (!rc) {
		rc = qp_verbs(d, c->opts.rdma_staging_bytes ? c->opts.rdma_staging_bytes :
				 STAGE_DEFAULT);
		*why = "cannot set up the QP, CQ or staging buffers";
	}
	if (!rc) {
		rc = qp_connect(d, &s);
		*why = "marud refused the rdma connection";
	}
	if (rc) {
		qp_close(d);
		return rc;
	}
	d->qp_gen++;
	atomic_fetch_add(&c->st.rdma.qp_connects, 1);
	d->generation = s.generation;
	d->epoch = s.epoch;
	return 0;
}

/* The QP of this session, connected again if needed; d->lock held. */
static int qp_ready(struct maru_client *c, struct rdma_dp *d)
{
	const char *why = NULL;
	uint64_t epoch = __atomic_load_n(&c->s.epoch, __ATOMIC_ACQUIRE);
	int rc;

	if (d->id && d->epoch == epoch)
		return 0;
	qp_close(d);
	rc = qp_open(c, d, &why);
	if (rc)
		clog_warnx(c, "%s: rdma: cannot connect: %s: %s", c->uri, why, strerror(-rc));
	return rc;
}

int rdma_dp_open(struct maru_client *c, const char **why)
{
	struct rdma_dp *d = c->rdma;
	int rc;

	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return -ENOMEM;
		pthread_mutex_init(&d->lock, NULL);
		d->ep = -1;
		c->rdma = d;
	}
	pthread_mutex_lock(&d->lock);
	qp_close(d);
	rc = qp_open(c, d, why);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void rdma_dp_close(struct maru_client *c)
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

void rdma_file_forget(struct maru_file *f)
{
	if (f->rk) {
		free(f->rk->k);
		free(f->rk);
		f->rk = NULL;
	}
}

/* ---- completions ---- */

/* QP to ERR, every outstanding WR flushed, the QP dropped; d->lock held. */
static void qp_fail(struct maru_client *c, struct rdma_dp *d)
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

/* Wait (epoll on the completion channel) for one CQE; 0, -ETIMEDOUT. */
static int cq_wait(struct maru_client *c, struct rdma_dp *d, struct ibv_wc *wc,
		   uint64_t deadline)
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

/* ---- transfers ---- */

static const char *op_name(int write)
{
	return write ? "RDMA WRITE" : "RDMA READ";
}

static int post_piece(struct rdma_dp *d, const struct piece *p, unsigned int slot,
		      int write, struct hash_stream *hs)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(d->stage + (size_t)slot * STAGE_BUF),
			       .length = p->n, .lkey = d->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = p->addr;
	wr.wr.rdma.rkey = p->rkey;
	if (write) {
		if (p->u) {
			memcpy(d->stage + (size_t)slot * STAGE_BUF, p->u, p->n);
			/* pieces are posted in file order: PUBLISH's digest */
			if (hs)
				hash_stream_update(hs, d->stage + (size_t)slot * STAGE_BUF, p->n);
		} else
			memset(d->stage + (size_t)slot * STAGE_BUF, 0, p->n);
	}
	return ibv_post_send(d->id->qp, &wr, &bad) ? -EIO : 0;
}

/* Cut [off, off+len) of f into pieces of at most STAGE_BUF, one per extent run. */
struct cutter {
	struct maru_client *c;
	const struct maru_file *f;
	uint32_t i;		/* extent index */
	uint64_t base;		/* file offset of extent i */
	uint64_t off, left;
	uint8_t *u;
};

static int cut_next(struct cutter *ct, struct piece *p)
{
	const struct maru_file *f = ct->f;
	uint64_t in, n;

	/* the keys' lengths: a lease's last one may be shorter (keys_match) */
	while (ct->i < f->rk->n && ct->base + f->rk->k[ct->i].len <= ct->off)
		ct->base += f->rk->k[ct->i++].len;
	if (ct->i >= f->rk->n) {
		clog_warnx(ct->c, "%s: version %llu: [%llu, +%llu) beyond its %u extents",
			   ct->c->uri, (unsigned long long)f->ino, (unsigned long long)ct->off,
			   (unsigned long long)ct->left, f->rk->n);
		return -EIO;
	}	/* never a short transfer: the caller checked bounds */
	in = ct->off - ct->base;
	n = f->rk->k[ct->i].len - in;
	if (n > ct->left)
		n = ct->left;
	if (n > STAGE_BUF)
		n = STAGE_BUF;
	p->addr = f->rk->k[ct->i].addr + in;
	p->rkey = f->rk->k[ct->i].rkey;
	p->n = (uint32_t)n;
	p->u = ct->u;
	ct->off += n;
	ct->left -= n;
	if (ct->u)
		ct->u += n;
	return 0;
}

/* The kind an error completion is counted as in the stats. */
static enum rdma_err wc_kind(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
		return RDMA_ERR_REMOTE_ACCESS;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return RDMA_ERR_RETRY;
	case IBV_WC_WR_FLUSH_ERR:
		return RDMA_ERR_FLUSH;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
		return RDMA_ERR_LOCAL;
	default:
		return RDMA_ERR_OTHER;
	}
}

static int wc_done(struct maru_client *c, struct maru_file *f, const struct ibv_wc *wc,
		   int write)
{
	if (wc->status == IBV_WC_SUCCESS)
		return 0;
	atomic_fetch_add(&c->st.rdma.err[wc_kind(wc->status)], 1);
	clog_warnx(c, "%s: %s of version %llu failed: %s", c->uri, op_name(write),
		   (unsigned long long)f->ino, ibv_wc_status_str(wc->status));
	return -EIO;
}

/*
 * Every piece of [off, off+len) in flight, up to one per staging buffer;
 * a read copies each completed buffer out. d->lock held.
 */
static int transfer(struct maru_client *c, struct rdma_dp *d, struct maru_file *f,
		    uint8_t *u, size_t len, uint64_t off, int write, struct hash_stream *hs)
{
	struct cutter ct = { .c = c, .f = f, .off = off, .left = len, .u = u };
	struct piece slots[64];
	unsigned int nb = d->nbuf < 64 ? d->nbuf : 64, used = 0, i;
	uint64_t deadline = mono_ms() + c->opts.timeout_ms;
	struct ibv_wc wc;
	int rc = 0;

	memset(slots, 0, sizeof(slots));
	while (!rc && (ct.left || used)) {
		while (!rc && ct.left && used < nb) {
			/* a free staging buffer: slots[].n == 0 */
			for (i = 0; i < nb && slots[i].n; i++)
				;
			rc = cut_next(&ct, &slots[i]);
			if (!rc)
				rc = post_piece(d, &slots[i], i, write, hs);
			if (!rc) {
				used++;
				atomic_fetch_add(&c->st.rdma.in_flight, 1);
				atomic_fetch_add(write ? &c->st.rdma.wrs_write :
						 &c->st.rdma.wrs_read, 1);
			}
		}
		if (rc || !used)
			break;
		if (write && FAILPOINT("libmaru.rdma.write.posted"))
			deadline = mono_ms();
		rc = cq_wait(c, d, &wc, deadline);
		if (rc == -ETIMEDOUT) {
			atomic_fetch_add(&c->st.rdma.err[RDMA_ERR_TIMEOUT], 1);
			clog_warnx(c, "%s: %s of version %llu timed out after %u ms", c->uri,
				   op_name(write), (unsigned long long)f->ino,
				   c->opts.timeout_ms);
		}
		if (!rc) {
			/* a completion, good or bad, frees its WR */
			used--;
			atomic_fetch_sub(&c->st.rdma.in_flight, 1);
			rc = wc_done(c, f, &wc, write);
		}
		if (!rc && wc.wr_id < nb) {
			struct piece *p = &slots[wc.wr_id];

			if (!write)
				memcpy(p->u, d->stage + (size_t)wc.wr_id * STAGE_BUF, p->n);
			p->n = 0;
		}
	}
	/* the caller errors the QP: what is still posted is flushed with it */
	atomic_fetch_sub(&c->st.rdma.in_flight, (int_fast64_t)used);
	return rc;
}

/*
 * The keys fit f: a pending version's cover exactly its extents (they only
 * grow, at the tail, with the handle's reserve calls); a lease's may be a
 * prefix of the handle's, the last one shorter, because PUBLISH trims the
 * reserved tail past the size and its reply carries no extents. Either way
 * they must cover the handle's size.
 */
static int keys_match(const struct rdma_keys *k, const struct maru_file *f, int rw)
{
	uint64_t bytes = 0;
	uint32_t i;

	if (rw ? k->n != f->next : k->n > f->next)
		return 0;
	for (i = 0; i < k->n; i++) {
		if (k->k[i].off != f->ext[i].off || k->k[i].len > f->ext[i].len)
			return 0;
		if (k->k[i].len != f->ext[i].len && (rw || i + 1 < k->n))
			return 0;
		bytes += k->k[i].len;
	}
	return bytes >= f->size;
}

/* The rkeys of f for the current QP, asked for again when missing; d->lock held. */
static int keys_ready(struct maru_client *c, struct rdma_dp *d, struct maru_file *f,
		      int rw)
{
	struct proto_rkey_req q = { .ino = f->ino, .flags = rw ? RKEY_F_WRITE : 0 };
	struct req r = { .op = OP_RKEY, .p1 = &q, .n1 = sizeof(q) };
	const struct proto_rkey_rep *h;
	struct rdma_keys *k = f->rk;
	int rc;

	if (k && k->qp_gen == d->qp_gen && k->rw == rw && keys_match(k, f, rw))
		return 0;
	atomic_fetch_add(&c->st.rdma.rkey_calls, 1);
	rc = transport_call(c, &r);
	if (rc) {
		clog_warnx(c, "%s: RKEY of version %llu (%s) refused: %s", c->uri,
			   (unsigned long long)f->ino, rw ? "pending" : "lease", strerror(-rc));
		return rc;
	}
	h = r.rep;
	if (r.rlen < sizeof(*h) || h->count > f->next ||
	    r.rlen != sizeof(*h) + h->count * sizeof(*k->k)) {
		clog_warnx(c, "%s: RKEY of version %llu: %u extents, the handle has %u (%s)",
			   c->uri, (unsigned long long)f->ino, r.rlen < sizeof(*h) ? 0 : h->count,
			   f->next, rw ? "pending" : "lease");
		frame_req_done(&r);
		return -EIO;
	}
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k) {
			frame_req_done(&r);
			return -ENOMEM;
		}
		f->rk = k;
	}
	free(k->k);
	k->k = malloc((h->count ? h->count : 1) * sizeof(*k->k));
	k->n = k->k ? h->count : 0;
	if (k->k)
		memcpy(k->k, h + 1, h->count * sizeof(*k->k));
	if (k->k && !keys_match(k, f, rw)) {
		clog_warnx(c, "%s: RKEY of version %llu: other extents than the handle's (%s)",
			   c->uri, (unsigned long long)f->ino, rw ? "pending" : "lease");
		frame_req_done(&r);
		return -EIO;	/* marud answered other extents than the handle's */
	}
	k->qp_gen = d->qp_gen;
	k->rw = rw;
	frame_req_done(&r);
	return k->k ? 0 : -ENOMEM;
}

/* hs: a write's bytes feed it (file.c's PUBLISH digest), or NULL */
static int rdma_io(struct maru_file *f, uint8_t *u, size_t len, uint64_t off, int write,
		   struct hash_stream *hs)
{
	struct maru_client *c = f->c;
	struct rdma_dp *d = c->rdma;
	int rc;

	if (!d)
		return -ENODEV;
	pthread_mutex_lock(&d->lock);
	rc = qp_ready(c, d);
	if (!rc)
		rc = keys_ready(c, d, f, f->pending);
	if (rc == -ENOTCONN && d->id) {
		/*
		 * marud fenced our QP before we saw it go (whole-pool mode does
		 * when a version this session wrote ends): a new QP, once more.
		 */
		qp_fail(c, d);
		rc = qp_ready(c, d);
		if (!rc)
			rc = keys_ready(c, d, f, f->pending);
	}
	if (!rc)
		rc = transfer(c, d, f, u, len, off, write, hs);
	if (rc && d->id) {
		/*
		 * The QP is in error or may still carry our WRs: drop it, and
		 * connect a new one now. marud fences (errors and drains) the
		 * old QP before it accepts the new, so once this call returned,
		 * no WRITE of it can land any more: the ABANDON that follows a
		 * failed write reaches marud only after the fence.
		 */
		qp_fail(c, d);
		qp_ready(c, d);
	}
	if (rc && write && f->rk)
		f->rk->poisoned = 1;
	pthread_mutex_unlock(&d->lock);
	return rc == -ETIMEDOUT ? -EIO : rc;
}

static ssize_t rdma_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	struct dp_counters *d = &f->c->st.dp[MARU_DATA_RDMA];
	int rc = rdma_io(f, buf, len, off, 0, NULL);

	if (rc)
		return rc;
	atomic_fetch_add(&d->rd_bytes, len);
	atomic_fetch_add(&d->rd_ops, 1);
	return (ssize_t)len;
}

/* Zeros over [f->size, end): holes read as zeros. */
static int zero_gap(struct maru_file *f, uint64_t end)
{
	return end > f->size ? rdma_io(f, NULL, end - f->size, f->size, 1, NULL) : 0;
}

static ssize_t rdma_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	struct dp_counters *d = &f->c->st.dp[MARU_DATA_RDMA];
	int rc = zero_gap(f, off);

	if (!rc)
		rc = rdma_io(f, (uint8_t *)buf, len, off, 1, f->hs);
	if (rc)
		return rc;
	if (off + len > f->size)
		f->size = off + len;
	atomic_fetch_add(&d->wr_bytes, len);
	atomic_fetch_add(&d->wr_ops, 1);
	return (ssize_t)len;
}

static int rdma_truncate(struct maru_file *f, uint64_t size)
{
	int rc = zero_gap(f, size);

	if (!rc)
		f->size = size;
	return rc;
}

/* ---- test hooks (tests/integration/tools/rdma_rights.c) ---- */

int rdma_test_key(struct maru_file *f, uint32_t i, uint64_t *addr, uint32_t *rkey,
		  uint64_t *len)
{
	if (!f->rk || i >= f->rk->n)
		return -ENOENT;
	*addr = f->rk->k[i].addr;
	*rkey = f->rk->k[i].rkey;
	*len = f->rk->k[i].len;
	return 0;
}

int rdma_test_post(struct maru_client *c, int write, uint64_t addr, uint32_t rkey,
		   uint32_t len, void *buf)
{
	struct rdma_dp *d = c->rdma;
	struct piece p = { .addr = addr, .rkey = rkey, .n = len, .u = buf };
	struct ibv_wc wc;
	int rc;

	if (!d || len > STAGE_BUF)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	rc = d->id ? post_piece(d, &p, 0, write, NULL) : -ENOTCONN;
	if (!rc)
		rc = cq_wait(c, d, &wc, mono_ms() + c->opts.timeout_ms);
	if (!rc && wc.status == IBV_WC_SUCCESS && !write)
		memcpy(buf, d->stage, len);
	if (!rc && wc.status != IBV_WC_SUCCESS) {
		clog_warnx(c, "%s: test %s failed: %s", c->uri, op_name(write),
			   ibv_wc_status_str(wc.status));
		atomic_fetch_add(&c->st.rdma.err[wc_kind(wc.status)], 1);
		rc = (int)wc.status;	/* > 0: the completion status */
		qp_fail(c, d);
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* Every WRITE of the handle completed (each call waits); a failed one poisons it. */
static int rdma_sync(struct maru_file *f)
{
	return f->rk && f->rk->poisoned ? -EIO : 0;
}
#else
int rdma_probe(const char **why)
{
	*why = "libmaru was built without RDMA support";
	return -ENODEV;
}

int rdma_dp_open(struct maru_client *c, const char **why)
{
	*why = "libmaru was built without RDMA support";
	return -ENODEV;
}

void rdma_dp_close(struct maru_client *c)
{
}

void rdma_file_forget(struct maru_file *f)
{
}

int rdma_test_key(struct maru_file *f, uint32_t i, uint64_t *addr, uint32_t *rkey,
		  uint64_t *len)
{
	return -ENODEV;
}

int rdma_test_post(struct maru_client *c, int write, uint64_t addr, uint32_t rkey,
		   uint32_t len, void *buf)
{
	return -ENODEV;
}

static ssize_t rdma_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	return -ENODEV;
}

static ssize_t rdma_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	return -ENODEV;
}

static int rdma_truncate(struct maru_file *f, uint64_t size)
{
	return -ENODEV;
}

static int rdma_sync(struct maru_file *f)
{
	return -ENODEV;
}
#endif

static const char *const rdma_err_names[RDMA_ERR_KINDS] = {
	[RDMA_ERR_REMOTE_ACCESS] = "remote_access", [RDMA_ERR_RETRY] = "retry_exceeded",
	[RDMA_ERR_FLUSH] = "flush", [RDMA_ERR_LOCAL] = "local",
	[RDMA_ERR_TIMEOUT] = "timeout", [RDMA_ERR_OTHER] = "other",
};

struct sbuf {
	char *p;
	size_t cap, len;
};

static void LOG_PRINTF(2, 3) sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len >= b->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len = b->len + (size_t)n < b->cap ? b->len + (size_t)n : b->cap - 1;
}

static void sb_counter(struct sbuf *b, const char *m, const char *help, const char *type,
		       long long v)
{
	sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", m, help, m, type, m, v);
}

size_t rdma_dp_stats(const struct maru_client *c, char *buf, size_t cap)
{
	const struct rdma_counters *r = &c->st.rdma;
	struct sbuf b = { .p = buf, .cap = cap };
	int i;

	if (!cap)
		return 0;
	buf[0] = '\0';
	sb_counter(&b, "maru_client_rdma_wrs_in_flight", "RDMA work requests posted, "
		   "not yet completed.", "gauge", (long long)atomic_load(&r->in_flight));
	sb_printf(&b, "# HELP maru_client_rdma_wrs_total RDMA READ/WRITE work requests "
		  "posted.\n# TYPE maru_client_rdma_wrs_total counter\n"
		  "maru_client_rdma_wrs_total{op=\"read\"} %llu\n"
		  "maru_client_rdma_wrs_total{op=\"write\"} %llu\n",
		  (unsigned long long)r->wrs_read, (unsigned long long)r->wrs_write);
	sb_printf(&b, "# HELP maru_client_rdma_errors_total Failed RDMA transfers by kind "
		  "(error completions and timeouts).\n"
		  "# TYPE maru_client_rdma_errors_total counter\n");
	for (i = 0; i < RDMA_ERR_KINDS; i++)
		sb_printf(&b, "maru_client_rdma_errors_total{kind=\"%s\"} %llu\n",
			  rdma_err_names[i], (unsigned long long)r->err[i]);
	sb_counter(&b, "maru_client_rdma_qp_connects_total", "QPs connected to marud.",
		   "counter", (long long)r->qp_connects);
	sb_counter(&b, "maru_client_rdma_qp_errors_total", "QPs moved to the error state "
		   "and dropped after a failed transfer.", "counter", (long long)r->qp_errors);
	sb_counter(&b, "maru_client_rdma_rkey_requests_total", "RKEY calls (rights asked "
		   "of marud).", "counter", (long long)r->rkey_calls);
	return b.len;
}

const struct dp_ops dp_rdma_ops = {
	.kind = MARU_DATA_RDMA,
	.name = "rdma",
	.direct = 1,
	.hashes = 1,
	.read = rdma_read,
	.write = rdma_write,
	.truncate = rdma_truncate,
	.sync = rdma_sync,
};
