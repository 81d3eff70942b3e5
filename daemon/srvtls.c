// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/srvtls.c: marud's certificate and the TLS wrapping of accepted TCP
 * connections (see srvtls.h). The current credentials are swapped under
 * tls_lock on a reload; each connection takes a reference to the ones that
 * were current when it came in (lib/common/tls.c keeps it until the
 * session ends), so the old certificate is freed with its last connection.
 * tls_lock is a leaf: nothing else is taken under it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "server_priv.h"
#include "srvtls.h"
#include "tls.h"

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;

static int load(const struct config *cfg, struct tls_creds **out)
{
	char err[512];
	int rc;

	rc = tls_creds_server(cfg->tls_cert, cfg->tls_key, cfg->tls_client_ca, out, err,
			      sizeof(err));
	if (rc)
		log_warnx("TLS: %s", err);
	return rc;
}

int srvtls_open(struct server *srv)
{
	const struct config *cfg = &srv->cfg;
	int rc;

	srv->tls = NULL;
	if (!cfg->tls_cert[0])
		return 0;
	rc = load(cfg, &srv->tls);
	if (!rc)
		log_info("TLS 1.3 on tcp listeners (certificate %s%s%s); unix sockets stay clear",
			 cfg->tls_cert, cfg->tls_client_ca[0] ? ", client certificates from CA " : "",
			 cfg->tls_client_ca);
	return rc;
}

void srvtls_close(struct server *srv)
{
	pthread_mutex_lock(&tls_lock);
	tls_creds_put(srv->tls);
	srv->tls = NULL;
	pthread_mutex_unlock(&tls_lock);
}

int srvtls_reload(struct server *srv, const struct config *nc)
{
	struct tls_creds *cr, *old;
	int rc;

	if (!nc)
		nc = &srv->cfg;
	/* turning TLS on or off is config_check.c's restart_needed() */
	if (!srv->tls || !nc->tls_cert[0] || !srv->cfg.tls_client_ca[0] != !nc->tls_client_ca[0])
		return 0;
	rc = load(nc, &cr);
	if (rc) {
		log_warnx("TLS: reload failed, new connections keep the running certificate");
		return rc;
	}
	pthread_mutex_lock(&tls_lock);
	old = srv->tls;
	srv->tls = cr;
	pthread_mutex_unlock(&tls_lock);
	/* the paths a later reload without a configuration reads again */
	if (nc != &srv->cfg) {
		memcpy(srv->cfg.tls_cert, nc->tls_cert, sizeof(srv->cfg.tls_cert));
		memcpy(srv->cfg.tls_key, nc->tls_key, sizeof(srv->cfg.tls_key));
		memcpy(srv->cfg.tls_client_ca, nc->tls_client_ca, sizeof(srv->cfg.tls_client_ca));
	}
	tls_creds_put(old);
	log_info("TLS: certificate %s reloaded; connections made before keep theirs",
		 nc->tls_cert);
	return 0;
}

int srvtls_on(const struct server *srv)
{
	int on;

	/* a reload swaps the pointer (never to or from NULL) under the lock */
	pthread_mutex_lock(&tls_lock);
	on = srv->tls != NULL;
	pthread_mutex_unlock(&tls_lock);
	return on;
}

/*
 * A clear-text client at a TLS listener: its first request (AUTH or
 * HELLO) is answered -EPROTONOSUPPORT in clear, so that it learns why at
 * once (libmaru says "give tls_ca="); nothing of it is served.
 */
#define CLEAR_WAIT_MS	100

static void refuse_clear(int fd, const char *peer)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct proto_hdr h;
	ssize_t n = 0;

	(void)peer;	/* tls.c logged the refusal */
	if (poll(&pfd, 1, CLEAR_WAIT_MS) == 1)
		n = recv(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_WAITALL);
	if (n == (ssize_t)sizeof(h) && h.magic == PROTO_MAGIC) {
		proto_hdr_init(&h, h.op, 0, h.reqid, 0, -EPROTONOSUPPORT);
		(void)!send(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	shutdown(fd, SHUT_WR);
}

int srvtls_wrap(struct server *srv, int fd, const char *peer)
{
	struct tls_creds *cr;
	int app, rc;

	pthread_mutex_lock(&tls_lock);
	cr = srv->tls ? tls_creds_get(srv->tls) : NULL;
	pthread_mutex_unlock(&tls_lock);
	if (!cr)
		return -EINVAL;
	rc = tls_server(cr, fd, atomic_load(&srv->hs_timeout_ms), peer, refuse_clear, &app);
	tls_creds_put(cr);
	return rc ? rc : app;
}
