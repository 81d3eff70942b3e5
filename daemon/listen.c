// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/listen.c: where clients come in. It owns the listening sockets
 * (unix:PATH, replacing a stale socket left by a dead marud but never a live
 * one, and tcp://addr:port), the accept thread that polls them and a wake
 * pipe, the peer's name and source address, and hands each accepted socket
 * to conn.c (which serves it on its event loop, started here with the
 * accept thread) once admit.c let it in: the handshake limits (a client
 * over max-conns with every slot authenticated is answered -EUSERS rather
 * than reset; one over a handshake limit is closed at once). The accept
 * thread also runs admit.c's timer (handshake deadlines, the refusal
 * counts). No lock of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr.h"
#include "admit.h"
#include "conn.h"
#include "listen.h"
#include "log.h"
#include "rdma.h"
#include "server_priv.h"
#include "srvtls.h"

/*
 * Accepted connections the kernel queues for us (capped by somaxconn): a
 * burst of connections beyond it loses its last ACK, and a client then
 * believes it is connected while marud never saw it; deep enough that the
 * accept thread, which turns a flood away fast, keeps up.
 */
#define LISTEN_BACKLOG		4096

/* A unix socket path left by a dead marud is removed; a live one is an error. */
static int unix_stale(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

static void mkdir_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	/* Only the last component: /run/marud under a fresh /run. */
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		log_warn(errno, "mkdir %s", dir);
}

static int listen_unix(struct listener *l, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	mkdir_parent(path);
	rc = unix_stale(path);
	if (rc)
		return rc;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		return -errno;
	if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	memcpy(l->path, sa.sun_path, sizeof(l->path));
	/* Same reach as loopback TCP; the key (if any) is the access control. */
	chmod(path, 0666);
	l->is_unix = 1;
	return listen(l->fd, LISTEN_BACKLOG) < 0 ? -errno : 0;
}

static int listen_tcp_ai(struct listener *l, const struct addrinfo *ai)
{
	int one = 1;

	l->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (l->fd < 0)
		return -errno;
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(l->fd, LISTEN_BACKLOG) < 0) {
		int rc = -errno;

		close(l->fd);
		l->fd = -1;
		return rc;
	}
	return 0;
}

static int listen_tcp(struct listener *l, const struct maru_addr *a)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res, *ai;
	char host[256], port[16];
	size_t hl = strlen(a->host);
	int rc;

	snprintf(host, sizeof(host), "%s", a->host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	snprintf(port, sizeof(port), "%u", (unsigned int)a->port);
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc)
		return -EADDRNOTAVAIL;
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai && rc; ai = ai->ai_next)
		rc = listen_tcp_ai(l, ai);
	freeaddrinfo(res);
	return rc;
}

static int listener_open(struct listener *l, const char *uri)
{
	struct maru_addr a;
	int rc;

	l->fd = -1;
	snprintf(l->uri, sizeof(l->uri), "%s", uri);
	/* rdma:// is daemon/rdma's (no socket here: poll skips fd -1) */
	if (rdma_uri(uri, a.host, sizeof(a.host), &a.port))
		return 0;
	rc = addr_parse(uri, &a);
	if (rc)
		return rc;
	rc = a.unix ? listen_unix(l, a.path) : listen_tcp(l, &a);
	if (rc)
		log_warn(rc, "listen %s", uri);
	else
		log_info("listening on %s", uri);
	return rc;
}

void listen_close_all(struct server *srv)
{
	unsigned int i;

	for (i = 0; i < srv->nlisteners; i++) {
		struct listener *l = &srv->listeners[i];

		if (l->fd >= 0)
			close(l->fd);
		l->fd = -1;
		if (l->is_unix && l->path[0] && unlink(l->path) < 0 && errno != ENOENT)
			log_warn(errno, "unlink %s", l->path);
		l->path[0] = '\0';
	}
	srv->nlisteners = 0;
}

int listen_open_all(struct server *srv)
{
	unsigned int i;
	int rc;

	for (i = 0; i < srv->cfg.nlisten; i++) {
		rc = listener_open(&srv->listeners[i], srv->cfg.listen[i]);
		srv->nlisteners = i + 1;
		if (rc)
			return rc;
	}
	return 0;
}

static void peer_name(struct conn *c, const struct sockaddr_storage *ss, socklen_t sl)
{
	char host[64], port[NI_MAXSERV];
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	/* the source the handshake limits count by: the host, or the local uid */
	if (c->is_unix) {
		if (!getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl)) {
			snprintf(c->peer, sizeof(c->peer), "unix pid %d uid %u",
				 (int)cred.pid, (unsigned int)cred.uid);
			snprintf(c->src, sizeof(c->src), "unix uid %u", (unsigned int)cred.uid);
		} else {
			snprintf(c->peer, sizeof(c->peer), "unix peer");
			snprintf(c->src, sizeof(c->src), "unix peer");
		}
		return;
	}
	if (getnameinfo((const struct sockaddr *)ss, sl, host, sizeof(host), port,
			sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(c->peer, sizeof(c->peer), "tcp peer");
		snprintf(c->src, sizeof(c->src), "tcp peer");
	} else {
		snprintf(c->peer, sizeof(c->peer), "%s:%s", host, port);
		snprintf(c->src, sizeof(c->src), "%s", host);
	}
}

/*
 * Over max-conns with every connection authenticated: answer the client's
 * first request (HELLO, or AUTH) with -EUSERS and close, so it learns why
 * at once instead of retrying into resets until its timeout. The accept thread waits for that request at
 * most REFUSE_WAIT_MS and reads at most one small frame of it (so that the
 * close is a clean FIN, not a reset that could swallow the answer).
 */
#define REFUSE_WAIT_MS	50

static void refuse_conn(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t scratch[sizeof(struct proto_hello_req)];
	struct proto_hdr h;
	ssize_t n = 0;

	if (poll(&pfd, 1, REFUSE_WAIT_MS) == 1)
		n = recv(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_WAITALL);
	if (n == (ssize_t)sizeof(h) && h.len <= sizeof(scratch) &&
	    !proto_hdr_check(&h, sizeof(scratch))) {
		if (poll(&pfd, 1, REFUSE_WAIT_MS) == 1)
			(void)!recv(fd, scratch, h.len, MSG_DONTWAIT);
		proto_hdr_init(&h, h.op, 0, h.reqid, 0, -EUSERS);
		(void)!send(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	shutdown(fd, SHUT_WR);
}

/*
 * admit.c refused c (rc, why): answered when marud is full of authenticated
 * clients; over a handshake limit closed at once, so that a flood never
 * stalls the accept thread.
 */
static void refuse(struct server *srv, struct conn *c, int rc, const char *why)
{
	atomic_fetch_add(&srv->rejected_conns, 1);
	admit_refused(srv, c->src, why);
	if (rc == -EUSERS)
		refuse_conn(c->fd);
	close(c->fd);
	conn_free(c);
}

/* fd's TLS session: the descriptor to serve, or -errno (fd closed). */
static int tls_wrap(struct server *srv, int fd, const struct sockaddr_storage *ss,
		    socklen_t sl)
{
	char host[64], port[NI_MAXSERV], peer[64 + NI_MAXSERV + 2];
	int rc;

	if (getnameinfo((const struct sockaddr *)ss, sl, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(peer, sizeof(peer), "tcp peer");
	else
		snprintf(peer, sizeof(peer), "%s:%s", host, port);
	rc = srvtls_wrap(srv, fd, peer);
	if (rc < 0) {
		log_warn(rc, "%s: cannot start its TLS session", peer);
		close(fd);
	}
	return rc;
}

static void accept_one(struct server *srv, struct listener *l)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const char *why;
	struct conn *c;
	int fd, rc, one = 1;

	fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warn(errno, "accept on %s", l->uri);
		return;
	}
	if (!l->is_unix)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!l->is_unix && srvtls_on(srv)) {
		/* the connection is served through its TLS session from here on */
		rc = tls_wrap(srv, fd, &ss, sl);
		if (rc < 0)
			return;
		fd = rc;
	}
	if (conn_new(srv, fd, l->is_unix, &c)) {
		close(fd);
		return;
	}
	peer_name(c, &ss, sl);
	rc = admit_conn(c, &why);
	if (rc) {
		refuse(srv, c, rc, why);
		return;
	}
	if (conn_start(c)) {
		log_warnx("%s: cannot start serving the connection", c->peer);
		admit_forget(c);
		close(fd);
		conn_free(c);
	}
}

static void *accept_main(void *arg)
{
	struct server *srv = arg;
	struct pollfd pfd[CONFIG_MAX_LISTEN + 1];
	unsigned int i;

	for (i = 0; i < srv->nlisteners; i++)
		pfd[i] = (struct pollfd){ .fd = srv->listeners[i].fd, .events = POLLIN };
	pfd[srv->nlisteners] = (struct pollfd){ .fd = srv->wake[0], .events = POLLIN };
	while (!atomic_load(&srv->stopping)) {
		if (poll(pfd, srv->nlisteners + 1, admit_tick(srv, 0)) < 0) {
			if (errno == EINTR)
				continue;
			log_warn(errno, "poll on listeners");
			break;
		}
		for (i = 0; i < srv->nlisteners; i++)
			if (pfd[i].revents & POLLIN)
				accept_one(srv, &srv->listeners[i]);
	}
	admit_tick(srv, 1);
	return NULL;
}

int listen_accept_start(struct server *srv)
{
	int rc = conn_loops_start(srv);

	if (rc)
		log_warn(rc, "starting the event loop: a thread per connection instead");
	rc = -pthread_create(&srv->accept_thread, NULL, accept_main, srv);
	if (!rc)
		srv->accepting = 1;
	return rc;
}

void listen_accept_stop(struct server *srv)
{
	char b = 1;

	if (!srv->accepting)
		return;
	if (write(srv->wake[1], &b, 1) < 0)
		log_warn(errno, "waking the accept thread");
	pthread_join(srv->accept_thread, NULL);
	srv->accepting = 0;
}
