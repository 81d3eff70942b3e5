// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/rdma/rdma_mr.c: the pool memory registered with each RDMA device,
 * once per device, the first time a client connects through it. The MR
 * covers the whole pool mapping (a device-DAX pool whole, at its alignment)
 * with iova 0, so a remote address is a pool offset. A device with type 2
 * memory windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B) gets an MR that allows no
 * remote access by itself: only the windows bound per right reach it.
 * Without them the MR itself is remote read/write: every rkey marud hands
 * out reaches the whole pool, which is logged loudly and shown in stats.
 */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "rdma_priv.h"

static int dev_has_windows(struct ibv_context *ctx)
{
	struct ibv_device_attr a;

	if (ibv_query_device(ctx, &a))
		return 0;
	return (a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && a.max_mw > 0;
}

static int dev_register(struct rdma_srv *r, struct rdma_dev *d)
{
	int acc = IBV_ACCESS_LOCAL_WRITE;

	d->windows = dev_has_windows(d->ctx);
	acc |= d->windows ? IBV_ACCESS_MW_BIND :
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		return -errno ? -errno : -ENOMEM;
	d->mr = ibv_reg_mr_iova(d->pd, r->base, r->size, 0, acc);
	if (!d->mr) {
		int rc = errno ? -errno : -ENOMEM;

		ibv_dealloc_pd(d->pd);
		d->pd = NULL;
		return rc;
	}
	if (!d->windows) {
		r->whole_pool = 1;
		log_warnx("rdma: WARNING: device %s has no type 2 memory windows: the "
			  "whole pool (%llu bytes) is exposed to every rdma client through "
			  "one rkey; per-lease rights are not enforced by the NIC",
			  ibv_get_device_name(d->ctx->device), (unsigned long long)r->size);
	} else {
		log_info("rdma: pool registered on %s (%llu bytes), rights by type 2 "
			 "memory windows", ibv_get_device_name(d->ctx->device),
			 (unsigned long long)r->size);
	}
	return 0;
}

struct rdma_dev *rdma_dev_get(struct rdma_srv *r, struct ibv_context *ctx)
{
	struct rdma_dev *d;
	unsigned int i;
	int rc;

	for (i = 0; i < r->ndev; i++)
		if (r->dev[i].ctx == ctx)
			return &r->dev[i];
	if (r->ndev == RDMA_MAX_DEV)
		return NULL;
	d = &r->dev[r->ndev];
	memset(d, 0, sizeof(*d));
	d->ctx = ctx;
	rc = dev_register(r, d);
	if (rc) {
		log_warn(-rc, "rdma: registering the pool on %s",
			 ibv_get_device_name(ctx->device));
		return NULL;
	}
	r->ndev++;
	return d;
}

void rdma_devs_close(struct rdma_srv *r)
{
	unsigned int i;
	int rc;

	for (i = 0; i < r->ndev; i++) {
		rc = ibv_dereg_mr(r->dev[i].mr);
		if (rc)
			log_warn(rc, "rdma: deregistering the pool");
		else
			ibv_dealloc_pd(r->dev[i].pd);
	}
	r->ndev = 0;
}
