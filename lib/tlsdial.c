// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/tlsdial.c: TLS for a client's sockets (see tlsdial.h) and
 * maru_client_tls(). A client with tls_ca never sends a byte in clear: the
 * handshake comes first on every TCP socket, and its failure fails the
 * socket; a refused certificate (ours or marud's) and a peer that does not
 * speak TLS are errors no retry fixes (-EACCES, -EPROTO), said once per
 * distinct reason.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "client_priv.h"
#include "tls.h"
#include "tlsdial.h"

int tlsdial_init(struct maru_client *c)
{
	char err[512];
	int rc;

	if (!c->opts.tls_ca && !c->opts.tls_cert && !c->opts.tls_key)
		return 0;
	if (c->addr.unix) {
		clog_warnx(c, "TLS (tls_ca=) is for maru:// tcp URIs; %s is a unix socket", c->uri);
		return -EINVAL;
	}
	rc = tls_creds_client(c->opts.tls_ca, c->opts.tls_cert, c->opts.tls_key, &c->tls, err,
			      sizeof(err));
	if (rc)
		clog_warnx(c, "TLS: %s", err);
	/* the caller's strings need not outlive maru_client_new */
	c->opts.tls_ca = c->opts.tls_cert = c->opts.tls_key = NULL;
	return rc;
}

void tlsdial_free(struct maru_client *c)
{
	tls_creds_put(c->tls);
	c->tls = NULL;
}

/* A reconnecting client says each reason once, not once per attempt. */
static int first_time(struct maru_client *c, const char *err)
{
	int first;

	pthread_mutex_lock(&c->lock);
	first = strncmp(c->tls_said, err, sizeof(c->tls_said) - 1) != 0;
	if (first)
		snprintf(c->tls_said, sizeof(c->tls_said), "%.*s", (int)sizeof(c->tls_said) - 1, err);
	pthread_mutex_unlock(&c->lock);
	return first;
}

int tlsdial_wrap(struct maru_client *c, int fd, uint64_t deadline)
{
	struct tls_info info;
	char host[sizeof(c->addr.host)], err[512];
	size_t hl;
	int app, rc;

	if (!c->tls)
		return fd;
	/* the certificate names the host as the URI does, without [ ] */
	hl = strlen(c->addr.host);
	if (hl >= 2 && c->addr.host[0] == '[' && c->addr.host[hl - 1] == ']') {
		memcpy(host, c->addr.host + 1, hl - 2);
		host[hl - 2] = '\0';
	} else {
		memcpy(host, c->addr.host, hl + 1);
	}
	rc = tls_client(c->tls, fd, host, deadline, cancel_fd(), &app, &info, err, sizeof(err));
	if (rc) {
		close(fd);
		if (rc != -EINTR && first_time(c, err))
			clog_warnx(c, "TLS with marud at %s: %s", c->uri, err);
		return rc;
	}
	pthread_mutex_lock(&c->lock);
	memcpy(c->tls_desc, info.desc, sizeof(c->tls_desc));
	c->tls_said[0] = '\0';
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(&c->tls_sessions, 1);
	if (info.ktls)
		atomic_fetch_add(&c->tls_ktls, 1);
	return app;
}

int tlsdial_ended(struct maru_client *c, int rc)
{
	char why[64], err[160];
	int a;

	if (!c->tls || rc != -ECONNRESET)
		return rc;
	a = tls_creds_alert(c->tls, why, sizeof(why));
	if (!a)
		return rc;
	snprintf(err, sizeof(err), "marud ended the session: %s%s", why,
		 a == -EACCES ? " (our client certificate, tls_cert=, was refused)" : "");
	if (first_time(c, err))
		clog_warnx(c, "TLS with marud at %s: %s", c->uri, err);
	return a;
}

int maru_client_tls(struct maru_client *c, char *desc, size_t len, int *ktls)
{
	if (!c)
		return -EINVAL;
	if (!c->tls)
		return -ENOTCONN;
	if (desc && len) {
		pthread_mutex_lock(&c->lock);
		snprintf(desc, len, "%s", c->tls_desc);
		pthread_mutex_unlock(&c->lock);
	}
	if (ktls)
		*ktls = atomic_load(&c->tls_sessions) &&
			atomic_load(&c->tls_ktls) == atomic_load(&c->tls_sessions);
	return 0;
}
