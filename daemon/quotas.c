// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/quotas.c: the tenants' byte quotas handed to the directory
 * (quotas.h). The key file gives each tenant a root and a quota
 * (tenant.h); the directory (dir/quota.c) charges and limits bytes per
 * root. This file copies the live table into it after every load of the
 * key file (start and SIGHUP), so the usage it logs is recounted from the
 * directory as it stands: after a restart it is the recovered namespace's.
 * Lock order: the tenants' lock, then the directory's (as tenant.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dir.h"
#include "log.h"
#include "quotas.h"
#include "tenant.h"

_Static_assert(KEYFILE_MAX_KEYS <= DIR_TENANTS_MAX, "every key file tenant gets a quota slot");

static void log_usage(struct dir *d)
{
	struct dir_tenant_usage *u = calloc(DIR_TENANTS_MAX, sizeof(*u));
	uint32_t i, n;

	if (!u)
		return;
	n = dir_tenant_usages(d, u, DIR_TENANTS_MAX);
	for (i = 0; i < n; i++)
		log_info("tenant %s: quota %" PRIu64 " bytes%s, used %" PRIu64
			 " + pending %" PRIu64 " (counted from the directory)",
			 u[i].name, u[i].quota, u[i].quota ? "" : " (none)", u[i].used,
			 u[i].pending);
	free(u);
}

int quotas_sync(struct tenants *t, struct dir *d)
{
	struct dir_tenant *dt;
	unsigned int i, n;
	int rc;

	pthread_mutex_lock(&t->lock);
	n = t->nlive;
	dt = calloc(n + 1, sizeof(*dt));
	if (!dt) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		dt[i].name = t->live[i]->name;
		dt[i].root = t->live[i]->root;
		dt[i].quota = atomic_load(&t->live[i]->quota);
	}
	rc = dir_set_tenants(d, dt, n);
	pthread_mutex_unlock(&t->lock);
	free(dt);
	if (rc)
		log_warnx("quotas: cannot apply the quotas of %u tenants: %s%s", n,
			  strerror(-rc), rc == -E2BIG ? " (at most 255 tenants)" : "");
	else
		log_usage(d);
	return rc;
}
