/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/rdma_keys.c: the remote keys of the rdma data path. A transfer
 * needs, per extent of the version, the remote address and rkey marud
 * bound for this client's QP: asked for with RKEY (read-only for a lease,
 * read-write for the own pending version) through the client's control
 * call (c->env.call, so nothing here names transport.c), checked against
 * the handle's extents, and cached on the handle (f->rk; rdma.c names
 * the path in f->held) for the QP they were bound on. file.c drops them through dp_rdma_ops.forget when
 * the handle closes or publishes (marud ends the rights then).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "datapath.h"

#if HAVE_RDMA
#include "frame.h"
#include "rdma_priv.h"

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

/* The reply's keys into f's cache (made on first use); 0 or -errno. */
static int keys_take(struct maru_client *c, struct maru_file *f, const struct req *r,
		     int rw)
{
	const struct proto_rkey_rep *h = r->rep;
	const char *what = rw ? "pending" : "lease";
	struct rdma_keys *k = f->rk;

	if (r->rlen < sizeof(*h) || h->count > f->next ||
	    r->rlen != sizeof(*h) + h->count * sizeof(*k->k)) {
		clog_warnx(c, "%s: RKEY of version %llu: %u extents, the handle has %u (%s)",
			   c->uri, (unsigned long long)f->ino, r->rlen < sizeof(*h) ? 0 : h->count,
			   f->next, what);
		return -EIO;
	}
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		f->rk = k;
	}
	free(k->k);
	k->k = malloc((h->count ? h->count : 1) * sizeof(*k->k));
	k->n = k->k ? h->count : 0;
	if (!k->k)
		return -ENOMEM;
	memcpy(k->k, h + 1, h->count * sizeof(*k->k));
	if (!keys_match(k, f, rw)) {
		/* marud answered other extents than the handle's */
		clog_warnx(c, "%s: RKEY of version %llu: other extents than the handle's (%s)",
			   c->uri, (unsigned long long)f->ino, what);
		return -EIO;
	}
	return 0;
}

int dp_rdma_keys_ready(struct maru_client *c, struct rdma_dp *d, struct maru_file *f,
		       int rw)
{
	struct proto_rkey_req q = { .ino = f->ino, .flags = rw ? RKEY_F_WRITE : 0 };
	struct req r = { .op = OP_RKEY, .p1 = &q, .n1 = sizeof(q) };
	struct rdma_keys *k = f->rk;
	int rc;

	if (k && k->qp_gen == d->qp_gen && k->rw == rw && keys_match(k, f, rw))
		return 0;
	atomic_fetch_add(&c->st.rdma.rkey_calls, 1);
	rc = c->env.call(c, &r);
	if (rc) {
		clog_warnx(c, "%s: RKEY of version %llu (%s) refused: %s", c->uri,
			   (unsigned long long)f->ino, rw ? "pending" : "lease", strerror(-rc));
		return rc;
	}
	rc = keys_take(c, f, &r, rw);
	frame_req_done(&r);
	if (rc)
		return rc;
	f->rk->qp_gen = d->qp_gen;
	f->rk->rw = rw;
	return 0;
}

void dp_rdma_forget(struct maru_file *f)
{
	if (f->rk) {
		free(f->rk->k);
		free(f->rk);
		f->rk = NULL;
	}
}

/* ---- test hook (tests/integration/tools/rdma_rights.c) ---- */

int dp_rdma_test_key(struct maru_file *f, uint32_t i, uint64_t *addr, uint32_t *rkey,
		     uint64_t *len)
{
	if (!f->rk || i >= f->rk->n)
		return -ENOENT;
	*addr = f->rk->k[i].addr;
	*rkey = f->rk->k[i].rkey;
	*len = f->rk->k[i].len;
	return 0;
}
#else
int dp_rdma_test_key(struct maru_file *f, uint32_t i, uint64_t *addr, uint32_t *rkey,
		     uint64_t *len)
{
	(void)f, (void)i, (void)addr, (void)rkey, (void)len;
	return -ENODEV;
}
#endif
