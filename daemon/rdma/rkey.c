// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/rdma/rkey.c: rights per lease. A session that asked for the rdma
 * path in HELLO gets a struct rsess; RKEY binds, on that session's QP, one
 * type 2 memory window per extent of a version the session holds: remote
 * read for a lease, remote read/write for its own pending version, exactly
 * the extent's bytes. The windows of a version are invalidated (the window
 * deallocated: the NIC refuses its rkey from then on) before the handler
 * that ends the right calls the directory, under the lock RKEY binds with,
 * and every window of a session goes before dir_session_end(). In
 * whole-pool mode (no windows) the same bookkeeping runs, but the rkey is
 * the pool MR's and reaches everything. Revoking windows and fencing a QP
 * are quarantine.c's, below this file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dir.h"
#include "log.h"
#include "rdma_priv.h"
#include "server_priv.h"
#include "session.h"

static struct rsess *rsess_of(struct rdma_srv *r, struct session *s)
{
	struct rsess *rs;

	for (rs = r->sess; rs; rs = rs->next)
		if (rs->sess == s)
			return rs;
	return NULL;
}

struct rsess *rdma_rsess_by_token(struct rdma_srv *r, const uint8_t *token)
{
	struct rsess *rs;

	for (rs = r->sess; rs; rs = rs->next)
		if (!memcmp(rs->token, token, sizeof(rs->token)))
			return rs;
	return NULL;
}

void rdma_hello(struct rdma_srv *r, struct session *s, const char *ctl_host,
		struct proto_hello_rep *rep)
{
	struct rsess *rs;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	rs = rsess_of(r, s);
	if (!rs) {
		rs = calloc(1, sizeof(*rs));
		if (rs) {
			rs->sess = s;
			memcpy(rs->token, session_token(s), sizeof(rs->token));
			rs->next = r->sess;
			r->sess = rs;
		}
	}
	/* nothing enforceable: no rdma path offered */
	if (rs && r->rights != RIGHTS_REFUSED) {
		rep->rdma_port = r->port;
		rep->rdma_flags = rdma_rights_flags(r->rights);
		snprintf(rep->rdma_host, sizeof(rep->rdma_host), "%s", r->host);
	}
	pthread_mutex_unlock(&r->lock);
}

/*
 * Extent MRs registered with the lock dropped (extent_prereg), not granted
 * yet: a list of struct rwin with only ino, rw, off, len and mr set.
 */
static struct rwin *spare_find(struct rwin *spare, uint64_t ino, int rw,
			       uint64_t off, uint64_t len)
{
	for (; spare; spare = spare->next)
		if (spare->ino == ino && spare->rw == rw && spare->off == off &&
		    spare->len == len)
			return spare;
	return NULL;
}

/* The MR of a spare matching w, unlinked from the list, or NULL. */
static struct ibv_mr *spare_take(struct rwin **spare, const struct rwin *w)
{
	struct rwin **pp, *x;
	struct ibv_mr *mr;

	for (pp = spare; (x = *pp); pp = &x->next) {
		if (x->ino != w->ino || x->rw != w->rw || x->off != w->off || x->len != w->len)
			continue;
		*pp = x->next;
		mr = x->mr;
		free(x);
		return mr;
	}
	return NULL;
}

/* An rkey for [off, +len) on rc's QP: a window, an extent MR, or the pool's. */
static int rwin_bind(struct rdma_srv *r, struct rconn *rc, struct rwin *w,
		     struct rwin **spare)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int rcode;

	if (rc->dev->rights == RIGHTS_MR) {
		w->mr = spare_take(spare, w);
		if (!w->mr)	/* not registered beforehand: now, under the lock */
			w->mr = rdma_extent_mr(r, rc->pd, w->off, w->len, w->rw);
		if (!w->mr) {
			atomic_fetch_add(&r->st.bind_errors, 1);
			return errno ? -errno : -ENOMEM;
		}
		w->rkey = w->mr->rkey;
		return 0;
	}
	if (!rc->dev->windows) {
		w->rkey = rc->dev->mr->rkey;
		return 0;
	}
	w->mw = ibv_alloc_mw(rc->dev->pd, IBV_MW_TYPE_2);
	if (!w->mw)
		return errno ? -errno : -ENOMEM;
	wr.wr_id = (uintptr_t)w;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = w->mw;
	/* type 2: the new rkey is the one posted, mw->rkey is not updated */
	wr.bind_mw.rkey = ibv_inc_rkey(w->mw->rkey);
	wr.bind_mw.bind_info.mr = rc->dev->mr;
	wr.bind_mw.bind_info.addr = w->off;
	wr.bind_mw.bind_info.length = w->len;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ |
		(w->rw ? IBV_ACCESS_REMOTE_WRITE : 0);
	rcode = ibv_post_send(rc->id->qp, &wr, &bad);
	if (!rcode)
		rcode = -rdma_rconn_wait(r, rc, wr.wr_id);
	if (rcode) {
		ibv_dealloc_mw(w->mw);
		w->mw = NULL;
		atomic_fetch_add(&r->st.bind_errors, 1);
		return -abs(rcode);
	}
	w->rkey = wr.bind_mw.rkey;
	return 0;
}

static int rkey_put(struct pbuf *out, const struct rwin *w)
{
	struct proto_rkey k = { .off = w->off, .len = w->len, .addr = w->off,
				.rkey = w->rkey };

	return proto_buf_put(out, &k, sizeof(k));
}

static struct rwin *rwin_find(struct rsess *rs, uint64_t ino, int rw, const struct extent *e)
{
	struct rwin *w;

	for (w = rs->wins; w; w = w->next)
		if (w->ino == ino && w->rw == rw && w->off == e->off && w->len == e->len)
			return w;
	return NULL;
}

/* Whether the session was given write extents of version ino. */
static int rwin_writable(const struct rsess *rs, uint64_t ino)
{
	const struct rwin *w;

	for (w = rs->wins; w; w = w->next)
		if (w->ino == ino && w->rw)
			return 1;
	return 0;
}

/* A window over e, bound now or already (another handle of the session). */
static int rwin_get(struct rdma_srv *r, struct rsess *rs, uint64_t ino, int rw,
		    const struct extent *e, struct rwin **spare, struct rwin **out)
{
	struct rwin *w = rwin_find(rs, ino, rw, e);
	int rc;

	if (w) {
		*out = w;
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->ino = ino;
	w->rw = rw;
	w->off = e->off;
	w->len = e->len;
	rc = rwin_bind(r, rs->rc, w, spare);
	if (rc) {
		free(w);
		return rc;
	}
	w->next = rs->wins;
	rs->wins = w;
	/* trust-pool mode keeps the grant (for the fence) but binds no window */
	if (w->mw || w->mr) {
		atomic_fetch_add(&r->st.windows, 1);
		atomic_fetch_add(&r->st.binds, 1);
	}
	*out = w;
	return 0;
}

/* A window per extent of l, answered in extent order; lock held. */
static int rkey_bind_all(struct rdma_srv *r, struct rsess *rs, uint64_t ino, int rw,
			 const struct extent_list *l, struct rwin **spare, struct pbuf *out)
{
	struct proto_rkey_rep h = { .count = l->n,
		.flags = rdma_rights_flags(rs->rc->dev->rights) };
	struct rwin *w;
	uint32_t i;
	int rc;

	rc = proto_buf_put(out, &h, sizeof(h));
	for (i = 0; !rc && i < l->n; i++) {
		rc = rwin_get(r, rs, ino, rw, &l->v[i], spare, &w);
		if (!rc)
			rc = rkey_put(out, w);
	}
	return rc;
}

/* Whether an extent of l has neither a grant nor a spare MR yet. */
static int extent_missing(struct rsess *rs, uint64_t ino, int rw,
			  const struct extent_list *l, struct rwin *spare)
{
	uint32_t i;

	for (i = 0; i < l->n; i++)
		if (!rwin_find(rs, ino, rw, &l->v[i]) &&
		    !spare_find(spare, ino, rw, l->v[i].off, l->v[i].len))
			return 1;
	return 0;
}

/*
 * Extent-mr mode: register the MRs the extents of l lack on rc's PD with
 * the lock dropped (pinning takes milliseconds on rxe, and RELEASE and
 * PUBLISH take this lock); rc->busy, held by the caller, keeps the PD.
 * Lock held on entry and on return; rs may be gone by then, and nothing
 * registered here is granted before the caller checks the right again.
 */
static int extent_prereg(struct rdma_srv *r, struct rsess *rs, struct rconn *rc,
			 uint64_t ino, int rw, const struct extent_list *l,
			 struct rwin **spare)
{
	struct extent *todo = calloc(l->n ? l->n : 1, sizeof(*todo));
	struct rwin *w;
	uint32_t i, n = 0;
	int err = 0;

	if (!todo)
		return -ENOMEM;
	for (i = 0; i < l->n; i++)
		if (!rwin_find(rs, ino, rw, &l->v[i]) &&
		    !spare_find(*spare, ino, rw, l->v[i].off, l->v[i].len))
			todo[n++] = l->v[i];
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < n && !err; i++) {
		w = calloc(1, sizeof(*w));
		if (!w) {
			err = -ENOMEM;
			break;
		}
		w->ino = ino;
		w->rw = rw;
		w->off = todo[i].off;
		w->len = todo[i].len;
		w->mr = rdma_extent_mr(r, rc->pd, w->off, w->len, rw);
		if (!w->mr) {
			err = errno ? -errno : -ENOMEM;
			atomic_fetch_add(&r->st.bind_errors, 1);
			free(w);
			break;
		}
		w->next = *spare;
		*spare = w;
	}
	pthread_mutex_lock(&r->lock);
	free(todo);
	return err;
}

/* Spares no grant took (the right changed meanwhile); lock NOT held. */
static void spare_drop(struct rwin *spare)
{
	struct rwin *w;

	while ((w = spare)) {
		spare = w->next;
		if (ibv_dereg_mr(w->mr))
			log_warnx("rdma: deregistering an unused extent MR");
		free(w);
	}
}

int rdma_rkey(struct rdma_srv *r, struct server *srv, struct session *s,
	      const struct proto_rkey_req *q, struct pbuf *out)
{
	int rw = !!(q->flags & RKEY_F_WRITE);
	struct extent_list l = { 0 };
	struct rconn *busy = NULL;
	struct rwin *spare = NULL;
	struct dir_attr a;
	struct rsess *rs;
	int rc, tries;

	if (!r)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&r->lock);
	for (tries = 0;; tries++) {
		rs = rsess_of(r, s);
		rc = rs && rs->rc && (!busy || rs->rc == busy) ? 0 : -ENOTCONN;
		if (!rc)	/* (again after a registration: the right may have ended) */
			rc = dir_extents(srv->dir, session_dir(s), q->ino, rw, &l, &a);
		if (rc)
			break;
		if (rs->rc->dev->rights == RIGHTS_MR && tries < 3 &&
		    extent_missing(rs, q->ino, rw, &l, spare)) {
			if (!busy) {
				busy = rs->rc;
				busy->busy++;
			}
			rc = extent_prereg(r, rs, busy, q->ino, rw, &l, &spare);
			alloc_extent_list_free(&l);
			if (rc)
				break;
			continue;
		}
		rc = rkey_bind_all(r, rs, q->ino, rw, &l, &spare, out);
		alloc_extent_list_free(&l);
		break;
	}
	if (rc == -EPERM)
		atomic_fetch_add(&r->st.refused_rkey, 1);
	pthread_mutex_unlock(&r->lock);
	if (busy) {
		spare_drop(spare);
		pthread_mutex_lock(&r->lock);
		if (--busy->busy == 0)
			pthread_cond_broadcast(&r->idle);
		pthread_mutex_unlock(&r->lock);
	}
	return rc;
}

void rdma_end_lock(struct rdma_srv *r)
{
	if (r)
		pthread_mutex_lock(&r->lock);
}

void rdma_end_begin(struct rdma_srv *r, struct session *s, uint64_t ino, int rw)
{
	rdma_end_lock(r);
	rdma_end_revoke(r, s, ino, rw);
}

void rdma_end_revoke(struct rdma_srv *r, struct session *s, uint64_t ino, int rw)
{
	struct rsess *rs;

	if (!r)
		return;
	rs = rsess_of(r, s);
	if (!rs)
		return;
	/*
	 * Trust-pool mode cannot revoke an rkey: the memory an abandoned
	 * version frees is safe from a late WRITE only once the QP is fenced.
	 * A version the session was never given write extents of (no rw
	 * window: a create truncated before its first write, say) can have no
	 * WRITE in flight, and fencing for it would only break the QP.
	 */
	if (rw && rs->rc && rs->rc->dev->rights == RIGHTS_POOL && rwin_writable(rs, ino))
		rdma_rconn_fence(r, rs->rc, "pending version ended in trust-pool mode");
	rdma_rwin_revoke(r, rs, ino, 0);
}

void rdma_end_done(struct rdma_srv *r)
{
	if (r)
		pthread_mutex_unlock(&r->lock);
}

void rdma_session_end(void *arg, struct session *s)
{
	struct rdma_srv *r = arg;
	struct rsess **pp, *rs;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (pp = &r->sess; *pp && (*pp)->sess != s; pp = &(*pp)->next)
		;
	rs = *pp;
	if (rs) {
		*pp = rs->next;
		if (rs->rc)
			rdma_rconn_fence(r, rs->rc, "session ended");
		rdma_rwin_revoke(r, rs, 0, 1);
		free(rs);
	}
	pthread_mutex_unlock(&r->lock);
}
