// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/tenant_stats.c: the tenants' usage (quotas, issue 26) as
 * marud reports it: in the Prometheus text of STATS, one sample per tenant
 * labelled tenant="NAME" in each family (marud(8) METRICS): quota,
 * published and pending bytes, evictable bytes, evictions and refusals;
 * and NS_USAGE, one tenant's usage by its root directory, which marufs
 * shows as user.maru.ns.* on that directory (marufs-xattr(7)). Each is read
 * from the directory in one lock hold, so a tenant's figures agree with
 * each other. With no tenant configured STATS gets nothing from here. No
 * lock of its own.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dir.h"
#include "handlers.h"
#include "prom.h"
#include "server_priv.h"
#include "session.h"
#include "tenant.h"

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

/*
 * A scoped session sees only its own root, which it may name by its id or
 * as the root of its view (DIR_ROOT_ID); the administrator names any.
 */
HANDLER(hdl_ns_usage)
{
	const struct proto_ino_req *r = (const void *)p;
	const struct tenant *tn = session_tenant(c->sess);
	struct dir_tenant_usage u;
	struct proto_ns_usage rep;
	uint64_t root = r->ino;
	int rc;

	if (tn) {
		if (root != tn->root && root != DIR_ROOT_ID)
			return -ENODATA;
		root = tn->root;
	}
	rc = dir_tenant_usage_of(c->srv->dir, root, &u);
	if (rc)
		return rc;
	memset(&rep, 0, sizeof(rep));
	memcpy(rep.tenant, u.name, sizeof(rep.tenant) - 1);
	rep.quota = u.quota;
	rep.used = u.used;
	rep.pending = u.pending;
	rep.evictable = u.evictable;
	rep.evictions = u.evictions;
	rep.evicted_bytes = u.evicted_bytes;
	rep.enospc = u.enospc;
	return proto_buf_put(out, &rep, sizeof(rep));
}
