// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/rdma/rdma_mr.c: how each RDMA device enforces the rights marud
 * hands out, and the pool memory registered with it. At start every
 * device behind a listener is asked what it enforces (selftest.c); then,
 * by the rdma-rights setting:
 *   - auto: type 2 memory windows (one per extent, bound on the client's
 *     QP over one MR that allows no remote access by itself) when the
 *     device has them and they refuse both a WRITE through a read-only
 *     window and an access outside the window's extent; else one MR per
 *     extent (registered for that right on the client QP's own PD,
 *     deregistered when the right ends) when MRs enforce both; else every
 *     rdma client is refused;
 *   - extent-mr: one MR per extent, or refused;
 *   - trust-pool: one MR over the whole pool with remote read/write: every
 *     rkey reaches all of it, which is logged loudly and shown in stats.
 * The pool MR (windows and trust-pool) is registered once per device, by
 * the rdma event thread, at start for a listener bound to an address and
 * else at the first connection through the device, never under the rdma
 * lock: a slow registration (seconds for a large pool on rdma_rxe) delays
 * only that device's first QP, never a request. iova 0: a remote address
 * is a pool offset, in every mode.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "rdma_priv.h"

const char *rdma_rights_name(enum rdma_rights m)
{
	switch (m) {
	case RIGHTS_WINDOWS: return "windows";
	case RIGHTS_MR: return "extent-mr";
	case RIGHTS_POOL: return "trust-pool";
	case RIGHTS_REFUSED: return "refused";
	default: return "untested";
	}
}

uint32_t rdma_rights_flags(enum rdma_rights m)
{
	switch (m) {
	case RIGHTS_WINDOWS: return RDMA_F_WINDOWS;
	case RIGHTS_MR: return RDMA_F_EXTENT_MR;
	case RIGHTS_POOL: return RDMA_F_WHOLE_POOL;
	default: return 0;
	}
}

static int dev_has_windows(struct ibv_context *ctx)
{
	struct ibv_device_attr a;

	if (ibv_query_device(ctx, &a))
		return 0;
	return (a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && a.max_mw > 0;
}

static enum rdma_rights rights_decide(int cfg, const struct rdma_check *c)
{
	int mr_ok = c->mr_rights == 1 && c->mr_bounds == 1;

	if (cfg == RDMA_CFG_TRUST_POOL)
		return RIGHTS_POOL;
	if (cfg == RDMA_CFG_AUTO && c->win_rights == 1 && c->win_bounds == 1)
		return RIGHTS_WINDOWS;
	return mr_ok ? RIGHTS_MR : RIGHTS_REFUSED;
}

static void rights_log(const char *dev, enum rdma_rights m, const struct rdma_check *c)
{
	switch (m) {
	case RIGHTS_WINDOWS:
		log_info("rdma: %s: rights by type 2 memory windows (enforced: the "
			 "self-test saw rights and bounds refused)", dev);
		break;
	case RIGHTS_MR:
		log_info("rdma: %s: rights by one MR per extent%s (each right costs a "
			 "registration)", dev, c->win_rights >= 0 && c->win_bounds != 1 ?
			 ": its memory windows do NOT enforce their bounds" : "");
		break;
	case RIGHTS_POOL:
		log_warnx("rdma: WARNING: %s: rdma-rights = trust-pool: the whole pool "
			  "is exposed to every rdma client through one rkey; per-lease "
			  "rights are not enforced by the NIC", dev);
		break;
	default:
		log_warnx("rdma: %s: the device enforces no rkey rights marud can use: "
			  "every rdma client is refused (rdma-rights = trust-pool serves "
			  "them with the whole pool exposed)", dev);
	}
}

static struct rdma_tested *tested_find(struct rdma_srv *r, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->ntested; i++)
		if (!strcmp(r->tested[i].name, name))
			return &r->tested[i];
	return NULL;
}

/* Test the device of ctx through addr, once per device name. */
static struct rdma_tested *dev_test(struct rdma_srv *r, struct ibv_context *ctx,
				    const struct sockaddr *addr)
{
	const char *name = ibv_get_device_name(ctx->device);
	struct rdma_tested *t = tested_find(r, name);
	int rc;

	if (t && t->rights != RIGHTS_UNKNOWN)
		return t;
	if (!t) {
		if (r->ntested == RDMA_MAX_DEV)
			return NULL;
		t = &r->tested[r->ntested++];
		memset(t, 0, sizeof(*t));
		snprintf(t->name, sizeof(t->name), "%s", name);
	}
	rc = rdma_selftest(addr, dev_has_windows(ctx), name, &t->chk);
	if (rc) {
		log_warn(-rc, "rdma: %s: the rights self-test could not run here", name);
		return t;	/* tried through another address, or at connect */
	}
	t->rights = rights_decide(r->cfg_rights, &t->chk);
	rights_log(name, t->rights, &t->chk);
	pthread_mutex_lock(&r->lock);
	if (r->rights == RIGHTS_UNKNOWN)
		r->rights = t->rights;
	pthread_mutex_unlock(&r->lock);
	return t;
}

/* The device (if any) behind one local address. */
static void addr_test(struct rdma_srv *r, struct rdma_event_channel *ch,
		      const struct sockaddr *sa)
{
	struct sockaddr_in in;
	struct rdma_cm_id *id;

	memcpy(&in, sa, sizeof(in));
	in.sin_port = 0;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return;
	if (!rdma_bind_addr(id, (struct sockaddr *)&in) && id->verbs)
		dev_test(r, id->verbs, (struct sockaddr *)&in);
	rdma_destroy_id(id);
}

/* A wildcard listener: every local IPv4 address, loopback ones last. */
static void wildcard_test(struct rdma_srv *r)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ifaddrs *ifa, *i;
	int pass;

	if (!ch || getifaddrs(&ifa)) {
		if (ch)
			rdma_destroy_event_channel(ch);
		return;
	}
	for (pass = 0; pass < 2; pass++)
		for (i = ifa; i; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			    (i->ifa_flags & IFF_UP) &&
			    !!(i->ifa_flags & IFF_LOOPBACK) == pass)
				addr_test(r, ch, i->ifa_addr);
	freeifaddrs(ifa);
	rdma_destroy_event_channel(ch);
}

void rdma_devs_test(struct rdma_srv *r)
{
	const struct sockaddr_in *in;
	unsigned int i;
	int wild = 0;

	for (i = 0; i < r->nlid; i++) {
		in = (const void *)rdma_get_local_addr(r->lid[i]);
		if (in->sin_family == AF_INET && in->sin_addr.s_addr != htonl(INADDR_ANY) &&
		    r->lid[i]->verbs)
			dev_test(r, r->lid[i]->verbs, (const struct sockaddr *)in);
		else
			wild = 1;
	}
	if (wild)
		wildcard_test(r);
}

static int dev_register(struct rdma_srv *r, struct rdma_dev *d)
{
	int acc = IBV_ACCESS_LOCAL_WRITE;
	uint64_t t0;

	d->windows = d->rights == RIGHTS_WINDOWS;
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		return -errno ? -errno : -ENOMEM;
	if (d->rights == RIGHTS_MR || d->rights == RIGHTS_REFUSED)
		return 0;	/* MRs per extent, on each QP's own PD */
	acc |= d->windows ? IBV_ACCESS_MW_BIND :
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	t0 = mono_ns();
	d->mr = ibv_reg_mr_iova(d->pd, r->base, r->size, 0, acc);
	if (!d->mr) {
		int rc = errno ? -errno : -ENOMEM;

		ibv_dealloc_pd(d->pd);
		d->pd = NULL;
		return rc;
	}
	atomic_fetch_add(&r->st.pool_reg_us, (mono_ns() - t0) / 1000);
	log_info("rdma: pool registered on %s (%llu bytes in %llu ms)",
		 ibv_get_device_name(d->ctx->device), (unsigned long long)r->size,
		 (unsigned long long)((mono_ns() - t0) / 1000000));
	return 0;
}

struct rdma_dev *rdma_dev_get(struct rdma_srv *r, struct ibv_context *ctx,
			      const struct sockaddr *addr)
{
	struct rdma_tested *t;
	struct rdma_dev *d;
	unsigned int i;
	int rc;

	for (i = 0; i < r->ndev; i++)
		if (r->dev[i].ctx == ctx)
			return &r->dev[i];
	if (r->ndev == RDMA_MAX_DEV)
		return NULL;
	t = addr ? dev_test(r, ctx, addr) : tested_find(r, ibv_get_device_name(ctx->device));
	d = &r->dev[r->ndev];
	memset(d, 0, sizeof(*d));
	d->ctx = ctx;
	d->rights = t ? t->rights : RIGHTS_UNKNOWN;
	if (d->rights == RIGHTS_UNKNOWN) {
		/* never tested (the self-test could not run): trust only an MR */
		d->rights = r->cfg_rights == RDMA_CFG_TRUST_POOL ? RIGHTS_POOL : RIGHTS_MR;
		log_warnx("rdma: %s: untested, rights by %s",
			  ibv_get_device_name(ctx->device), rdma_rights_name(d->rights));
		pthread_mutex_lock(&r->lock);
		if (r->rights == RIGHTS_UNKNOWN)
			r->rights = d->rights;
		pthread_mutex_unlock(&r->lock);
	}
	rc = dev_register(r, d);
	if (rc) {
		log_warn(-rc, "rdma: registering the pool on %s",
			 ibv_get_device_name(ctx->device));
		return NULL;
	}
	r->ndev++;
	return d;
}

struct ibv_mr *rdma_extent_mr(struct rdma_srv *r, struct ibv_pd *pd, uint64_t off,
			      uint64_t len, int rw)
{
	int acc = IBV_ACCESS_REMOTE_READ;
	uint64_t t0 = mono_ns();
	struct ibv_mr *mr;

	if (rw)
		acc |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (off > r->size || len > r->size - off)
		return NULL;
	mr = ibv_reg_mr_iova(pd, r->base + off, len, off, acc);
	if (mr) {
		atomic_fetch_add(&r->st.mr_regs, 1);
		atomic_fetch_add(&r->st.mr_reg_us, (mono_ns() - t0) / 1000);
	}
	return mr;
}

void rdma_devs_close(struct rdma_srv *r)
{
	unsigned int i;
	int rc;

	for (i = 0; i < r->ndev; i++) {
		rc = r->dev[i].mr ? ibv_dereg_mr(r->dev[i].mr) : 0;
		if (rc)
			log_warn(rc, "rdma: deregistering the pool");
		else if (r->dev[i].pd)
			ibv_dealloc_pd(r->dev[i].pd);
	}
	r->ndev = 0;
}
