// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/tenant_stats.c: the tenants' usage in the Prometheus text
 * of STATS, one sample per tenant labelled tenant="NAME" in each family
 * (marud(8) METRICS): quota, published and pending bytes, evictable bytes,
 * evictions and refusals. Read from the directory (dir_tenant_usages) in
 * one lock hold, so a tenant's figures agree with each other. With no
 * tenant configured it writes nothing. No lock of its own.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "dir.h"
#include "handlers.h"
#include "prom.h"

struct tenant_family {
	const char *name, *type, *help;
	size_t off;	/* of the value in struct dir_tenant_usage */
};

#define TU(f) offsetof(struct dir_tenant_usage, f)

static const struct tenant_family families[] = {
	{ "marud_tenant_quota_bytes", "gauge",
	  "The tenant's byte quota (0: none).", TU(quota) },
	{ "marud_tenant_used_bytes", "gauge",
	  "Bytes of the tenant's published versions.", TU(used) },
	{ "marud_tenant_pending_bytes", "gauge",
	  "Bytes reserved by the tenant's pending versions.", TU(pending) },
	{ "marud_tenant_evictable_bytes", "gauge",
	  "The tenant's published bytes with no lease.", TU(evictable) },
	{ "marud_tenant_evictions_total", "counter",
	  "The tenant's versions evicted (over its quota, or pool pressure).",
	  TU(evictions) },
	{ "marud_tenant_evicted_bytes_total", "counter",
	  "Bytes of the tenant's versions evicted.", TU(evicted_bytes) },
	{ "marud_tenant_enospc_total", "counter",
	  "The tenant's reservations refused over its quota.", TU(enospc) },
};

void hdl_put_tenant_stats(struct dir *d, struct prom *p)
{
	struct dir_tenant_usage *u = calloc(DIR_TENANTS_MAX, sizeof(*u));
	uint32_t i, n;
	size_t f;

	if (!u) {
		p->err = p->err ? p->err : -ENOMEM;
		return;
	}
	n = dir_tenant_usages(d, u, DIR_TENANTS_MAX);
	for (f = 0; n && f < sizeof(families) / sizeof(families[0]); f++) {
		prom_head(p, families[f].name, families[f].type, families[f].help);
		for (i = 0; i < n; i++)
			prom_label(p, families[f].name, "tenant", u[i].name,
				   *(const uint64_t *)((const char *)&u[i] + families[f].off));
	}
	free(u);
}
