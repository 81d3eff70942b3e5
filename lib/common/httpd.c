/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/httpd.c: the metrics endpoint of httpd.h, on libmicrohttpd's
 * own polling thread. Each scrape calls the owner's text function (which
 * takes its own locks, as a read of .maru/stats does), relabels the text
 * with the owner's labels through prom_relabel(), and answers it; nothing
 * is kept between scrapes. The address is parsed here, numeric only, so
 * that the loopback rule sees what will be bound, never a resolver's
 * answer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "httpd.h"
#include "log.h"
#include "parse.h"

struct httpd {
	struct MHD_Daemon *d;
	httpd_text_fn text;
	void *arg;
	char *labels;
	uint16_t port;
};

union sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

static int parse_port(const char *s, uint16_t *port)
{
	uint64_t v;

	if (!*s || parse_u64(s, &v) || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* "ADDR:PORT", "[V6]:PORT", "localhost:PORT", "PORT" (loopback) into sa. */
static int parse_listen(const char *listen, union sa *sa, int *loopback, int *wildcard)
{
	char host[64];
	const char *colon, *h = listen;
	size_t n;
	uint16_t port;

	memset(sa, 0, sizeof(*sa));
	colon = strrchr(listen, ':');
	if (!colon) {
		h = "127.0.0.1";
		n = strlen(h);
		colon = listen - 1;
	} else {
		n = (size_t)(colon - listen);
		if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
			h = listen + 1;
			n -= 2;
		}
	}
	if (n == 0 || n >= sizeof(host) || parse_port(colon + 1, &port))
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	if (!strcmp(host, "localhost"))	/* never what a resolver says */
		memcpy(host, "127.0.0.1", sizeof("127.0.0.1"));
	if (inet_pton(AF_INET, host, &sa->in.sin_addr) == 1) {
		sa->in.sin_family = AF_INET;
		sa->in.sin_port = htons(port);
		*loopback = (ntohl(sa->in.sin_addr.s_addr) >> 24) == 127;
		*wildcard = sa->in.sin_addr.s_addr == htonl(INADDR_ANY);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sa->in6.sin6_addr) == 1) {
		sa->in6.sin6_family = AF_INET6;
		sa->in6.sin6_port = htons(port);
		*loopback = IN6_IS_ADDR_LOOPBACK(&sa->in6.sin6_addr);
		*wildcard = IN6_IS_ADDR_UNSPECIFIED(&sa->in6.sin6_addr);
		return 0;
	}
	return -EINVAL;
}

static int check(const char *listen, int allow_remote, union sa *sa)
{
	int loopback = 0, wildcard = 0;

	if (!listen || parse_listen(listen, sa, &loopback, &wildcard)) {
		log_warnx("metrics endpoint %s: expected ADDR:PORT with a numeric address "
			  "(or localhost, or a port alone for 127.0.0.1)", listen ? listen : "");
		return -EINVAL;
	}
	if (!loopback && !allow_remote) {
		log_warnx("metrics endpoint %s: %s address, refused without the option that "
			  "allows a remote one (marud --metrics-remote, marufs -o metrics_remote)",
			  listen, wildcard ? "a wildcard" : "not a loopback");
		return -EPERM;
	}
	return 0;
}

int httpd_check_listen(const char *listen, int allow_remote)
{
	union sa sa;

	return check(listen, allow_remote, &sa);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     char *body, size_t len, int owned)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (owned)
		r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	else
		r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	if (status == MHD_HTTP_OK)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					"text/plain; version=0.0.4; charset=utf-8");
	else
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result scrape(struct httpd *h, struct MHD_Connection *conn)
{
	struct prom raw = PROM_INIT, out = PROM_INIT;
	int rc = h->text(h->arg, &raw);

	if (!rc)
		rc = raw.err;
	if (!rc) {
		prom_relabel(&out, raw.buf ? raw.buf : "", raw.len, h->labels);
		rc = out.err;
	}
	prom_fini(&raw);
	if (rc) {
		prom_fini(&out);
		log_warnx("metrics endpoint: cannot write the metrics: %s", strerror(-rc));
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     (char *)"cannot write the metrics\n", 25, 0);
	}
	if (!out.buf)
		return reply(conn, MHD_HTTP_OK, (char *)"", 0, 0);
	return reply(conn, MHD_HTTP_OK, out.buf, out.len, 1);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload, size_t *upload_len, void **state)
{
	static char not_found[] = "not found: only /metrics is served\n";
	static char not_allowed[] = "method not allowed: GET /metrics only\n";
	static char too_large[] = "a GET /metrics carries no body\n";
	const char *cl;

	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1, 0);
	if (strcmp(method, MHD_HTTP_METHOD_GET))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, not_allowed,
			     sizeof(not_allowed) - 1, 0);
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (*upload_len || (cl && strcmp(cl, "0")) ||
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return reply(conn, MHD_HTTP_CONTENT_TOO_LARGE, too_large, sizeof(too_large) - 1, 0);
	return scrape(cls, conn);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[256];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	log_debug("metrics endpoint: %s", line);
}

int httpd_start(const struct httpd_opts *o, struct httpd **out)
{
	const union MHD_DaemonInfo *di;
	struct httpd *h;
	union sa sa;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
	int rc = check(o->listen, o->allow_remote, &sa);

	if (rc)
		return rc;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->text = o->text;
	h->arg = o->arg;
	if (o->labels && !(h->labels = strdup(o->labels))) {
		free(h);
		return -ENOMEM;
	}
	if (sa.sa.sa_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
				MHD_OPTION_SOCK_ADDR, &sa.sa,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTPD_MAX_CONNS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)HTTPD_MAX_PER_IP,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTPD_REQUEST_BYTES,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTPD_TIMEOUT_S,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_END);
	if (!h->d) {
		rc = errno ? -errno : -EADDRNOTAVAIL;
		log_warn(rc, "metrics endpoint %s: cannot listen", o->listen);
		free(h->labels);
		free(h);
		return rc;
	}
	di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di ? di->port : 0;
	log_info("metrics endpoint: serving GET /metrics on %s (port %u)", o->listen,
		 (unsigned int)h->port);
	*out = h;
	return 0;
}

uint16_t httpd_port(const struct httpd *h)
{
	return h ? h->port : 0;
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h->labels);
	free(h);
}
