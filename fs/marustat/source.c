/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/source.c: the two sources of source.h. A mount is checked
 * once (a FUSE file system whose root has .maru/stats); an endpoint is
 * asked with GET over a new connection each time (HTTP/1.0: the server
 * closes, so the body ends at EOF), with a connect and a read deadline so
 * an endpoint that does not answer is an error, not a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "pool.h"
#include "source.h"

#define FUSE_MAGIC 0x65735546
#define TEXT_MAX (64u << 20)
#define CONNECT_MS 3000
#define READ_MS 10000

static int errf(char *err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int errf(char *err, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, SOURCE_ERR_LEN, fmt, ap);
	va_end(ap);
	return rc;
}

/* The first fuse.marufs mount point in /proc/self/mounts. */
static int first_mount(char *out, size_t len, char *err)
{
	char dev[4096], dir[4096], type[256];
	FILE *f = fopen("/proc/self/mounts", "r");
	int rc = -ENOENT;

	if (!f)
		return errf(err, -errno, "/proc/self/mounts: %s", strerror(errno));
	while (fscanf(f, "%4095s %4095s %255s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "fuse.marufs") && strlen(dir) < len) {
			memcpy(out, dir, strlen(dir) + 1);	/* \040 escapes kept: rare */
			rc = 0;
			break;
		}
	}
	fclose(f);
	if (rc)
		return errf(err, rc, "no marufs mount found; name one (or an endpoint) with -p");
	return 0;
}

static int open_mount(const char *dir, struct source *s, char *err)
{
	struct statfs fs;
	struct stat st;

	s->kind = SOURCE_MOUNT;
	snprintf(s->name, sizeof(s->name), "%s", dir);
	if (stat(dir, &st))
		return errf(err, -errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return errf(err, -ENOTDIR, "%s: not a directory (a marufs mount, an http:// URL or ADDR:PORT)", dir);
	if ((size_t)snprintf(s->path, sizeof(s->path), "%s/.maru/stats", dir) >= sizeof(s->path))
		return errf(err, -ENAMETOOLONG, "%s: path too long", dir);
	if (statfs(dir, &fs))
		return errf(err, -errno, "%s: %s", dir, strerror(errno));
	if (fs.f_type != FUSE_MAGIC || access(s->path, R_OK))
		return errf(err, -ENODEV, "%s: not a marufs mount (no readable .maru/stats at its root)", dir);
	return 0;
}

/* http://HOST[:PORT][/PATH] or HOST:PORT ([V6]:PORT); 0 or -EINVAL. */
static int parse_endpoint(const char *arg, struct source *s, char *err)
{
	const char *p = arg, *hend, *slash;
	size_t hl;

	s->kind = SOURCE_HTTP;
	snprintf(s->name, sizeof(s->name), "%s", arg);
	if (!strncmp(p, "https://", 8))
		return errf(err, -EPROTONOSUPPORT, "%s: https is not supported (plain http only)", arg);
	if (!strncmp(p, "http://", 7))
		p += 7;
	slash = strchr(p, '/');
	snprintf(s->target, sizeof(s->target), "%s", slash ? slash : "/metrics");
	if (*p == '[') {
		hend = strchr(p, ']');
		if (!hend || (slash && hend > slash))
			return errf(err, -EINVAL, "%s: bad IPv6 address", arg);
		p++;
	} else {
		hend = strrchr(p, ':');
		if (!hend || (slash && hend > slash))
			hend = slash ? slash : p + strlen(p);
	}
	hl = (size_t)(hend - p);
	if (!hl || hl >= sizeof(s->host))
		return errf(err, -EINVAL, "%s: no host", arg);
	memcpy(s->host, p, hl);
	s->host[hl] = '\0';
	if (*hend == ']')
		hend++;
	if (*hend == ':') {
		hl = strspn(hend + 1, "0123456789");
		if (!hl || hl >= sizeof(s->port) || (hend[1 + hl] && hend[1 + hl] != '/'))
			return errf(err, -EINVAL, "%s: bad port", arg);
		memcpy(s->port, hend + 1, hl);
		s->port[hl] = '\0';
	} else {
		snprintf(s->port, sizeof(s->port), "80");
	}
	return 0;
}

/* An argument with no '/' but a ":PORT" end is an endpoint, as is a URL. */
static int is_endpoint(const char *arg)
{
	const char *c = strrchr(arg, ':');

	if (!strncmp(arg, "http://", 7) || !strncmp(arg, "https://", 8))
		return 1;
	return !strchr(arg, '/') && c && c[1] && strspn(c + 1, "0123456789") == strlen(c + 1);
}

static int is_pool(const char *arg)
{
	return !strncmp(arg, "maru://", 7) || !strncmp(arg, "maru+unix://", 12);
}

int source_open(const char *arg, const char *key_file, struct source *s, char *err)
{
	char dir[4096];
	int rc;

	memset(s, 0, sizeof(*s));
	if (arg && is_pool(arg)) {
		s->kind = SOURCE_POOL;
		snprintf(s->name, sizeof(s->name), "%s", arg);
		return pool_open(arg, key_file, &s->client, err, SOURCE_ERR_LEN);
	}
	if (!arg) {
		rc = first_mount(dir, sizeof(dir), err);
		return rc ? rc : open_mount(dir, s, err);
	}
	if (is_endpoint(arg))
		return parse_endpoint(arg, s, err);
	return open_mount(arg, s, err);
}

/* Bytes of fd until EOF appended to a growing buffer; waits at most
 * READ_MS for each read when poll_ms says so (sockets). */
static int slurp(int fd, int poll_ms, char **out, size_t *outlen)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap), *nb;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (cap - len < 2) {
			nb = cap < TEXT_MAX ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				rc = -EFBIG;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		if (poll_ms && poll(&pfd, 1, poll_ms) == 0) {
			rc = -ETIMEDOUT;
			break;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (rc) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

static int read_mount(const struct source *s, char **text, char *err)
{
	size_t len;
	int fd, rc;

	fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf(err, -errno, "%s: %s (is it still a marufs mount?)", s->path,
			    strerror(errno));
	rc = slurp(fd, 0, text, &len);
	close(fd);
	if (rc)
		return errf(err, rc, "%s: %s", s->path, strerror(-rc));
	return 0;
}

/* A connected socket to host:port within CONNECT_MS; fd or -errno. */
static int dial(const struct source *s, char *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct pollfd pfd;
	int fd = -1, rc, soerr;
	socklen_t sl = sizeof(soerr);

	rc = getaddrinfo(s->host, s->port, &hints, &res);
	if (rc)
		return errf(err, -EHOSTUNREACH, "%s: cannot resolve %s: %s", s->name, s->host,
			    gai_strerror(rc));
	rc = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
			rc = -errno;
		} else {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, CONNECT_MS) == 0)
				rc = -ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr)
				rc = -(soerr ? soerr : errno);
			else
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return errf(err, rc, "%s: cannot reach %s port %s: %s", s->name, s->host, s->port,
			    strerror(-rc));
	return fd;
}

static int send_all(int fd, const char *p, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN && poll(&pfd, 1, READ_MS) > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The body of a 200 reply moved to the front of buf; 0 or -errno. */
static int http_body(const struct source *s, char *buf, size_t len, char *err)
{
	char *hend = strstr(buf, "\r\n\r\n"), *eol;
	int status = 0;

	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || !hend)
		return errf(err, -EBADMSG, "%s: not an HTTP reply", s->name);
	if (status != 200) {
		eol = strstr(buf, "\r\n");
		*eol = '\0';
		return errf(err, -EREMOTEIO, "%s: the endpoint answered \"%s\"", s->name, buf);
	}
	hend += 4;
	memmove(buf, hend, len - (size_t)(hend - buf) + 1);
	return 0;
}

static int read_http(const struct source *s, char **text, char *err)
{
	char req[1400];
	size_t len;
	int fd, rc;

	fd = dial(s, err);
	if (fd < 0)
		return fd;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: text/plain\r\n"
		 "User-Agent: marustat\r\n\r\n", s->target, s->host);
	rc = send_all(fd, req, strlen(req));
	if (!rc)
		rc = slurp(fd, READ_MS, text, &len);
	close(fd);
	if (rc)
		return errf(err, rc, "%s: %s", s->name, strerror(-rc));
	rc = http_body(s, *text, len, err);
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

int source_fetch(const struct source *s, char **text, char *err)
{
	*text = NULL;
	switch (s->kind) {
	case SOURCE_MOUNT:
		return read_mount(s, text, err);
	case SOURCE_POOL:
		return pool_fetch(s->client, s->name, text, err, SOURCE_ERR_LEN);
	default:
		return read_http(s, text, err);
	}
}

void source_close(struct source *s)
{
	if (s->client)
		pool_close(s->client);
	s->client = NULL;
}
