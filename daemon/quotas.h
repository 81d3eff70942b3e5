/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/quotas.h: tenants' quotas into the directory (quotas.c).
 */
#ifndef MARUD_QUOTAS_H
#define MARUD_QUOTAS_H

struct dir;
struct tenants;

/*
 * Give d the live tenants' roots and quotas (dir_set_tenants): their
 * usage is recounted from the directory and logged, one line each.
 * 0 or -errno (logged).
 */
int quotas_sync(struct tenants *t, struct dir *d);

#endif
