/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/benchnet.c: sockets from address strings and the small RESP
 * codec of the Redis peers (see benchnet.h). RESP replies are lines ended by
 * CRLF ("+OK", "-ERR x", ":42", "$5" then 5 bytes and CRLF, "$-1" for nil);
 * requests are arrays of bulk strings.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "benchnet.h"

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

static int connect_tcp(const char *hostport)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	char host[256];
	const char *colon = strrchr(hostport, ':');
	int fd, one = 1, rc;

	if (!colon || (size_t)(colon - hostport) >= sizeof(host))
		return -EINVAL;
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai))
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		rc = -errno;
		close(fd);
		goto out;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rc = fd;
out:
	freeaddrinfo(ai);
	return rc;
}

int net_connect(const char *spec)
{
	if (!strncmp(spec, "unix:", 5))
		return connect_unix(spec + 5);
	if (!strncmp(spec, "tcp:", 4))
		return connect_tcp(spec + 4);
	return connect_tcp(spec);
}

int net_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int net_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void net_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- RESP ---- */

size_t resp_cmd(char *buf, size_t cap, int argc, const char *const *argv, const size_t *lens)
{
	size_t off;
	int n = snprintf(buf, cap, "*%d\r\n", argc);

	if (n < 0 || (size_t)n >= cap)
		return 0;
	off = (size_t)n;
	for (int i = 0; i < argc; i++) {
		n = snprintf(buf + off, cap - off, "$%zu\r\n", lens[i]);
		if (n < 0 || (size_t)n >= cap - off || cap - off - (size_t)n < lens[i] + 2)
			return 0;
		off += (size_t)n;
		memcpy(buf + off, argv[i], lens[i]);
		off += lens[i];
		buf[off++] = '\r';
		buf[off++] = '\n';
	}
	return off;
}

/* The number after the type byte of a line ending at eol. */
static int parse_num(const char *p, const char *eol, long long *out)
{
	char tmp[32];
	char *end;
	size_t n = (size_t)(eol - p);

	if (n == 0 || n >= sizeof(tmp))
		return -EPROTO;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	errno = 0;
	*out = strtoll(tmp, &end, 10);
	return errno || *end ? -EPROTO : 0;
}

ssize_t resp_parse(const char *buf, size_t len, struct resp_reply *r)
{
	const char *eol = len > 1 ? memmem(buf, len, "\r\n", 2) : NULL;
	size_t line;

	if (!eol)
		return len > 64 ? -EPROTO : 0;
	line = (size_t)(eol - buf) + 2;
	r->type = buf[0];
	r->data = buf + 1;
	r->len = line - 3;
	r->num = 0;
	switch (buf[0]) {
	case '+':
	case '-':
		return (ssize_t)line;
	case ':':
	case '*':
		return parse_num(buf + 1, eol, &r->num) ? -EPROTO : (ssize_t)line;
	case '$':
		if (parse_num(buf + 1, eol, &r->num))
			return -EPROTO;
		if (r->num < 0)
			return (ssize_t)line;
		if (len < line + (size_t)r->num + 2)
			return 0;
		r->data = buf + line;
		r->len = (size_t)r->num;
		return (ssize_t)(line + (size_t)r->num + 2);
	default:
		return -EPROTO;
	}
}

/* Read one CRLF-terminated line (without CRLF) byte by byte: header lines are short. */
static int read_line(int fd, char *line, size_t cap)
{
	size_t n = 0;

	for (;;) {
		int rc;

		if (n + 1 >= cap)
			return -EPROTO;
		rc = net_read_full(fd, line + n, 1);
		if (rc)
			return rc;
		if (n && line[n - 1] == '\r' && line[n] == '\n') {
			line[n - 1] = '\0';
			return (int)(n - 1);
		}
		n++;
	}
}

ssize_t resp_read_bulk(int fd, void *dst, size_t cap)
{
	char line[64], crlf[2];
	long long len;
	int rc = read_line(fd, line, sizeof(line));

	if (rc < 0)
		return rc;
	if (line[0] != '$' || parse_num(line + 1, line + rc, &len))
		return -EPROTO;
	if (len < 0)
		return -ENOENT;
	if ((unsigned long long)len > cap)
		return -EMSGSIZE;
	rc = net_read_full(fd, dst, (size_t)len);
	if (!rc)
		rc = net_read_full(fd, crlf, 2);
	if (rc)
		return rc;
	return memcmp(crlf, "\r\n", 2) ? -EPROTO : (ssize_t)len;
}

int resp_read_status(int fd)
{
	char line[512];
	int rc = read_line(fd, line, sizeof(line));

	if (rc < 0)
		return rc;
	if (line[0] == '-') {
		fprintf(stderr, "redis: %s\n", line + 1);
		return -EREMOTEIO;
	}
	return line[0] == '+' || line[0] == ':' ? 0 : -EPROTO;
}
