/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/metrics.h: marud's HTTP /metrics endpoint (metrics.c): the STATS
 * text, each sample labelled with the pool, served by lib/common/httpd.
 */
#ifndef MARUD_METRICS_H
#define MARUD_METRICS_H

struct server;

/* Serve cfg.metrics-listen (nothing when unset); 0 or -errno (logged). */
int metrics_start(struct server *srv);
/* Stop serving; nothing when not started. */
void metrics_stop(struct server *srv);

#endif
