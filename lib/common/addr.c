/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/addr.c: control-address parsing ("maru://", "maru+unix://",
 * "tcp://", "unix:") and connecting a stream socket with a bounded connect().
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "maru/libmaru.h"
#include "addr.h"
#include "clock.h"
#include "parse.h"

_Static_assert(sizeof(((struct maru_addr *)0)->path) ==
	       sizeof(((struct sockaddr_un *)0)->sun_path), "path fits sun_path");

/* Port text after ':'; 0 only where allow0 (listen on an ephemeral port). */
static int parse_port(const char *s, size_t n, int allow0, uint16_t *out)
{
	char buf[8];
	uint64_t v;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (parse_u64(buf, &v) || v > 65535 || (v == 0 && !allow0))
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

static int host_char_ok(char c)
{
	return c > ' ' && c != 0x7f && !strchr("/?#@[]", c);
}

/*
 * "host[:port]" or "[v6]:port", optionally ending in one '/'. An empty host
 * is allowed only where allow_empty (tcp:// listen address: any interface).
 */
static int parse_hostport(const char *s, int allow_empty, struct maru_addr *a)
{
	size_t len = strlen(s), hlen, i;
	const char *host = s, *rest;

	if (len > 0 && s[len - 1] == '/')
		len--;
	if (*s == '[') {
		const char *rb = memchr(s, ']', len);

		if (!rb || rb == s + 1)
			return -EINVAL;
		host = s + 1;
		hlen = (size_t)(rb - host);
		rest = rb + 1;
	} else {
		const char *colon = memchr(s, ':', len);

		hlen = colon ? (size_t)(colon - s) : len;
		rest = s + hlen;
		for (i = 0; i < hlen; i++)
			if (!host_char_ok(s[i]))
				return -EINVAL;
	}
	if (hlen == 0 && !allow_empty)
		return -EINVAL;
	if (hlen >= sizeof(a->host))
		return -ENAMETOOLONG;
	memcpy(a->host, host, hlen);
	a->host[hlen] = '\0';
	if (strchr(a->host, '/') || strchr(a->host, '['))
		return -EINVAL;
	a->port = MARU_DEFAULT_PORT;
	if (rest == s + len)
		return 0;
	if (*rest != ':')
		return -EINVAL;
	rest++;
	return parse_port(rest, (size_t)(s + len - rest), allow_empty, &a->port);
}

static int parse_unix_path(const char *p, int absolute, struct maru_addr *a)
{
	size_t n = strlen(p);

	if (n == 0 || (absolute && p[0] != '/'))
		return -EINVAL;
	if (n >= sizeof(a->path))
		return -ENAMETOOLONG;
	memcpy(a->path, p, n + 1);
	a->unix = 1;
	return 0;
}

int addr_parse(const char *uri, struct maru_addr *out)
{
	struct maru_addr a;
	int rc;

	if (!uri || !out)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	if (!strncmp(uri, "maru://", 7))
		rc = parse_hostport(uri + 7, 0, &a);
	else if (!strncmp(uri, "maru+unix://", 12))
		rc = parse_unix_path(uri + 12, 1, &a);
	else if (!strncmp(uri, "tcp://", 6))
		rc = parse_hostport(uri + 6, 1, &a);
	else if (!strncmp(uri, "unix:", 5))
		rc = parse_unix_path(uri + 5, 0, &a);
	else
		rc = -EINVAL;
	if (rc == 0)
		*out = a;
	return rc;
}

/*
 * Wait for a non-blocking connect() in progress; 0 or -errno (-EINTR when
 * stop_fd, if >= 0, turned readable).
 */
static int connect_wait(int fd, unsigned int timeout_ms, int stop_fd)
{
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLOUT },
				 { .fd = stop_fd, .events = POLLIN } };
	socklen_t slen = sizeof(int);
	int rc, err = 0;

	for (;;) {
		uint64_t now = mono_ns();
		int wait = -1;

		if (timeout_ms) {
			if (now >= deadline)
				return -ETIMEDOUT;
			wait = (int)((deadline - now + 999999) / 1000000);
		}
		rc = poll(pfd, 2, wait);
		if (rc > 0 && pfd[1].revents)
			return -EINTR;
		if (rc > 0)
			break;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &slen) < 0)
		return -errno;
	return -err;
}

/*
 * One TCP attempt: non-blocking connect so the timeout bounds it, then back
 * to blocking for the caller.
 */
static int connect_tcp_one(const struct addrinfo *ai, unsigned int timeout_ms, int stop_fd)
{
	int fd, rc = 0, on = 1, flags;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS && errno != EINTR) {
			rc = -errno;
			goto out_close;
		}
		rc = connect_wait(fd, timeout_ms, stop_fd);
		if (rc)
			goto out_close;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		rc = -errno;
		goto out_close;
	}
	/* small control frames must not wait for Nagle; dead peers must be noticed */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	return fd;

out_close:
	close(fd);
	return rc;
}

static int gai_to_errno(int e)
{
	switch (e) {
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_FAIL:
		return -EHOSTUNREACH;
	default:
		return -EINVAL;
	}
}

static int connect_tcp(const struct maru_addr *a, unsigned int timeout_ms, int stop_fd)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	char port[8];
	int rc;

	snprintf(port, sizeof(port), "%u", (unsigned int)a->port);
	rc = getaddrinfo(a->host[0] ? a->host : NULL, port, &hints, &res);
	if (rc)
		return gai_to_errno(rc);
	rc = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		rc = connect_tcp_one(ai, timeout_ms, stop_fd);
		if (rc >= 0 || rc == -EINTR)
			break;
	}
	freeaddrinfo(res);
	return rc;
}

/*
 * AF_UNIX connect() never returns EINPROGRESS on Linux: a full backlog makes
 * a non-blocking connect fail with EAGAIN at once, while a blocking one waits
 * for room bounded by SO_SNDTIMEO. So the timeout goes there.
 */
static int connect_unix(const struct maru_addr *a, unsigned int timeout_ms)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};
	int fd, rc;

	if (strnlen(a->path, sizeof(a->path)) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, a->path, strlen(a->path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while ((rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun))) < 0 &&
	       errno == EINTR)
		;
	if (rc < 0) {
		rc = errno == EAGAIN ? -ETIMEDOUT : -errno;
		close(fd);
		return rc;
	}
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* timeout_ms 0: wait as long as the kernel does. */
int addr_connect_stop(const struct maru_addr *a, unsigned int timeout_ms, int stop_fd)
{
	if (!a)
		return -EINVAL;
	return a->unix ? connect_unix(a, timeout_ms) : connect_tcp(a, timeout_ms, stop_fd);
}

int addr_connect(const struct maru_addr *a, unsigned int timeout_ms)
{
	return addr_connect_stop(a, timeout_ms, -1);
}
