/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/rdma.c: the rdma data path's device probe. One-sided transfers are
 * not implemented yet, so this file only answers "is there an RDMA device
 * here": with none (or in a build without libibverbs) data=rdma fails with
 * -ENODEV and a clear reason, and data=auto never picks rdma. Nothing here
 * pretends to move bytes. Only this file includes <infiniband/verbs.h>.
 */
#include <errno.h>

#include "config.h"
#include "datapath.h"

#if HAVE_RDMA
#include <infiniband/verbs.h>

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
#else
int rdma_probe(const char **why)
{
	*why = "libmaru was built without RDMA support";
	return -ENODEV;
}
#endif
