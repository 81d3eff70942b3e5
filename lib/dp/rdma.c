/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/rdma.c: the rdma data path's transfers and its ops table:
 * client-driven one-sided transfers on the QP of rdma_qp.c with the keys of
 * rdma_keys.c. A read is RDMA READs from the version's extents into staging
 * buffers, then copies to the caller; a write copies into staging buffers,
 * then RDMA WRITEs into the pending version's extents, and feeds file.c's
 * publish digest (f->hs) from each staging buffer right after the copy, so
 * marud need not read the version to hash it; zero writes zeros the same
 * way (file.c decides where). A transfer is split into one WR per staging
 * buffer, all in flight at once, bounded by the client's timeout. Any error
 * completion or a timeout fails the call with -EIO (a log line names the
 * operation and the reason), moves the QP to the error state, drains it and
 * drops it, and connects a new one before it returns (marud fences the old
 * QP first). A write that failed poisons its handle: sync (so publish)
 * fails. Transfers of a client run one at a time (rdma_dp.lock), inside
 * c->dp_lock held for reading so that session.c never closes the path
 * under one. Also here: the path's Prometheus lines (stats).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include "config.h"
#include "datapath.h"
#include "log.h"
#include "prom.h"

#if HAVE_RDMA
#include <stdlib.h>
#include <string.h>

#include "failpoint.h"
#include "hash.h"
#include "rdma_priv.h"

/* One WR's piece: n bytes at remote (addr, rkey) <-> user bytes at u. */
struct piece {
	uint64_t addr;
	uint32_t rkey;
	uint32_t n;
	uint8_t *u;
};

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
		rc = dp_rdma_cq_wait(d, &wc, deadline);
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

/* The transfer on d, with one more QP if marud fenced ours; d->lock held. */
static int io_locked(struct maru_client *c, struct rdma_dp *d, struct maru_file *f,
		     uint8_t *u, size_t len, uint64_t off, int write, struct hash_stream *hs)
{
	int rc = dp_rdma_qp_ready(c, d);

	if (!rc)
		rc = dp_rdma_keys_ready(c, d, f, f->pending);
	if (rc == -ENOTCONN && d->id) {
		/*
		 * marud fenced our QP before we saw it go (whole-pool mode does
		 * when a version this session wrote ends): a new QP, once more.
		 */
		dp_rdma_qp_fail(c, d);
		rc = dp_rdma_qp_ready(c, d);
		if (!rc)
			rc = dp_rdma_keys_ready(c, d, f, f->pending);
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
		dp_rdma_qp_fail(c, d);
		dp_rdma_qp_ready(c, d);
	}
	return rc;
}

/* u NULL: zeros. hs: a write's bytes feed it (file.c's PUBLISH digest), or NULL */
static int rdma_io(struct maru_file *f, uint8_t *u, size_t len, uint64_t off, int write,
		   struct hash_stream *hs)
{
	struct maru_client *c = f->c;
	struct rdma_dp *d;
	int rc = -ENODEV;

	pthread_rwlock_rdlock(&c->dp_lock);
	d = c->rdma;
	if (d) {
		pthread_mutex_lock(&d->lock);
		rc = io_locked(c, d, f, u, len, off, write, hs);
		if (rc && write && f->rk)
			f->rk->poisoned = 1;
		/* keys cached: file.c drops them through dp_rdma_ops.forget */
		if (f->rk)
			f->held = &dp_rdma_ops;
		pthread_mutex_unlock(&d->lock);
	}
	pthread_rwlock_unlock(&c->dp_lock);
	return rc == -ETIMEDOUT ? -EIO : rc;
}

static ssize_t rdma_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	int rc = rdma_io(f, buf, len, off, 0, NULL);

	return rc ? rc : (ssize_t)len;
}

static ssize_t rdma_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	int rc = rdma_io(f, (uint8_t *)buf, len, off, 1, f->hs);

	return rc ? rc : (ssize_t)len;
}

static int rdma_zero(struct maru_file *f, uint64_t off, uint64_t len)
{
	return rdma_io(f, NULL, len, off, 1, NULL);
}

/* ---- test hook (tests/integration/tools/rdma_rights.c) ---- */

int dp_rdma_test_post(struct maru_client *c, int write, uint64_t addr, uint32_t rkey,
		      uint32_t len, void *buf)
{
	struct rdma_dp *d;
	struct piece p = { .addr = addr, .rkey = rkey, .n = len, .u = buf };
	struct ibv_wc wc;
	int rc;

	if (len > STAGE_BUF)
		return -EINVAL;
	pthread_rwlock_rdlock(&c->dp_lock);
	d = c->rdma;
	if (!d) {
		pthread_rwlock_unlock(&c->dp_lock);
		return -EINVAL;
	}
	pthread_mutex_lock(&d->lock);
	rc = d->id ? post_piece(d, &p, 0, write, NULL) : -ENOTCONN;
	if (!rc)
		rc = dp_rdma_cq_wait(d, &wc, mono_ms() + c->opts.timeout_ms);
	if (!rc && wc.status == IBV_WC_SUCCESS && !write)
		memcpy(buf, d->stage, len);
	if (!rc && wc.status != IBV_WC_SUCCESS) {
		clog_warnx(c, "%s: test %s failed: %s", c->uri, op_name(write),
			   ibv_wc_status_str(wc.status));
		atomic_fetch_add(&c->st.rdma.err[wc_kind(wc.status)], 1);
		rc = (int)wc.status;	/* > 0: the completion status */
		dp_rdma_qp_fail(c, d);
	}
	pthread_mutex_unlock(&d->lock);
	pthread_rwlock_unlock(&c->dp_lock);
	return rc;
}

/* Every WRITE of the handle completed (each call waits); a failed one poisons it. */
static int rdma_sync(struct maru_file *f)
{
	return f->rk && f->rk->poisoned ? -EIO : 0;
}
#else
static int rdma_unbuilt(const struct session *s, const char **why)
{
	(void)s;
	*why = "libmaru was built without RDMA support";
	return -ENODEV;
}

int dp_rdma_test_post(struct maru_client *c, int write, uint64_t addr, uint32_t rkey,
		      uint32_t len, void *buf)
{
	(void)c, (void)write, (void)addr, (void)rkey, (void)len, (void)buf;
	return -ENODEV;
}
#endif

static const char *const rdma_err_names[RDMA_ERR_KINDS] = {
	[RDMA_ERR_REMOTE_ACCESS] = "remote_access", [RDMA_ERR_RETRY] = "retry_exceeded",
	[RDMA_ERR_FLUSH] = "flush", [RDMA_ERR_LOCAL] = "local",
	[RDMA_ERR_TIMEOUT] = "timeout", [RDMA_ERR_OTHER] = "other",
};

static void rdma_stats(const struct maru_client *c, struct prom *t)
{
	const struct rdma_counters *r = &c->st.rdma;
	int i;

	prom_gauge_signed(t, "maru_client_rdma_wrs_in_flight",
			  "RDMA work requests posted, not yet completed.",
			  atomic_load(&r->in_flight));
	prom_head(t, "maru_client_rdma_wrs_total", "counter",
		  "RDMA READ/WRITE work requests posted.");
	prom_label(t, "maru_client_rdma_wrs_total", "op", "read", r->wrs_read);
	prom_label(t, "maru_client_rdma_wrs_total", "op", "write", r->wrs_write);
	prom_head(t, "maru_client_rdma_errors_total", "counter",
		  "Failed RDMA transfers by kind (error completions and timeouts).");
	for (i = 0; i < RDMA_ERR_KINDS; i++)
		prom_label(t, "maru_client_rdma_errors_total", "kind", rdma_err_names[i],
			   r->err[i]);
	prom_counter(t, "maru_client_rdma_qp_connects_total", "QPs connected to marud.",
		     r->qp_connects);
	prom_counter(t, "maru_client_rdma_qp_errors_total",
		     "QPs moved to the error state and dropped after a failed transfer.",
		     r->qp_errors);
	prom_counter(t, "maru_client_rdma_rkey_requests_total",
		     "RKEY calls (rights asked of marud).", r->rkey_calls);
}

#if HAVE_RDMA
const struct dp_ops dp_rdma_ops = {
	.kind = MARU_DATA_RDMA,
	.name = "rdma",
	.direct = 1,
	.hashes = 1,
	.probe = dp_rdma_probe,
	.open = dp_rdma_open,
	.close = dp_rdma_close,
	.forget = dp_rdma_forget,
	.stats = rdma_stats,
	.read = rdma_read,
	.write = rdma_write,
	.zero = rdma_zero,
	.sync = rdma_sync,
};
#else
/* Never chosen: its probe says why; its counters stay 0. */
const struct dp_ops dp_rdma_ops = {
	.kind = MARU_DATA_RDMA,
	.name = "rdma",
	.direct = 1,
	.probe = rdma_unbuilt,
	.stats = rdma_stats,
};
#endif
