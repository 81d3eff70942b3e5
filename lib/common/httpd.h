/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/httpd.h: the one HTTP metrics endpoint of marud and marufs
 * (httpd.c, over libmicrohttpd): `GET /metrics` answers the Prometheus
 * text its owner writes, every sample given the owner's labels (`pool`);
 * any other path is 404, any other method on /metrics 405. Connections,
 * request sizes and times are bounded; a non-loopback address is served
 * only when the owner says so (allow_remote).
 */
#ifndef MARU_HTTPD_H
#define MARU_HTTPD_H

#include <stdint.h>

#include "prom.h"

/* Bounds of one endpoint (documented in marud(8) METRICS). */
#define HTTPD_MAX_CONNS		16	/* at once; more are refused at accept */
#define HTTPD_MAX_PER_IP	8
#define HTTPD_REQUEST_BYTES	8192	/* request line + headers; more: 431/413 */
#define HTTPD_TIMEOUT_S		10	/* an idle connection is closed then */

struct httpd;

/* Write the exposition text into out (unlabelled); 0 or -errno (500). */
typedef int (*httpd_text_fn)(void *arg, struct prom *out);

struct httpd_opts {
	const char *listen;	/* "ADDR:PORT", "[V6]:PORT", "localhost:PORT" or "PORT" */
	int allow_remote;	/* serve a non-loopback (or wildcard) address */
	const char *labels;	/* added to every sample ("pool=\"...\""), or NULL */
	httpd_text_fn text;
	void *arg;
};

/*
 * Parse listen into a numeric address: 0, -EINVAL (not ADDR:PORT, a name
 * other than localhost), -EPERM (not loopback and !allow_remote).
 * *port may be 0 (any free port: httpd_port() says which).
 */
int httpd_check_listen(const char *listen, int allow_remote);
/* Start serving on a thread of its own; 0 or -errno (logged). */
int httpd_start(const struct httpd_opts *o, struct httpd **out);
/* The bound port (the one picked for port 0). */
uint16_t httpd_port(const struct httpd *h);
/* Stop and free (waits for its thread); NULL is fine. */
void httpd_stop(struct httpd *h);

#endif
