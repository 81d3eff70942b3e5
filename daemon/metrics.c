// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/metrics.c: marud's HTTP /metrics endpoint. A scrape is a STATS
 * request without a connection: the same text (handlers/stats.c) through
 * the same served-op table (dispatch.c), which lib/common/httpd labels
 * with pool="<the pool's path>" and answers on its own thread. Started
 * after the server's other threads, stopped before them.
 */
#include <errno.h>
#include <limits.h>

#include "dispatch.h"
#include "handlers/handlers.h"
#include "httpd.h"
#include "metrics.h"
#include "pool.h"
#include "server_priv.h"

static int text(void *arg, struct prom *out)
{
	struct server *srv = arg;
	unsigned char served[OP_MAX];
	struct pbuf b = { 0 };
	int rc;

	dispatch_served(served);
	rc = hdl_stats_text(srv, served, &b);
	if (!rc)
		prom_raw(out, b.data ? (const char *)b.data : "", b.len);
	proto_buf_free(&b);
	return rc;
}

int metrics_start(struct server *srv)
{
	char labels[2 * PATH_MAX + 16];
	struct httpd_opts o = {
		.listen = srv->cfg.metrics_listen,
		.allow_remote = srv->cfg.metrics_remote,
		.text = text,
		.arg = srv,
	};
	int rc;

	if (!srv->cfg.metrics_listen[0])
		return 0;
	rc = prom_label_text(labels, sizeof(labels), "pool", srv->pool->path);
	if (rc)
		return rc;
	o.labels = labels;
	rc = httpd_start(&o, &srv->metrics);
	return rc;
}

void metrics_stop(struct server *srv)
{
	httpd_stop(srv->metrics);
	srv->metrics = NULL;
}
