/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/marustat/source_test.c: fs/marustat/source.c, where
 * marustat reads the metrics from. Real: source.c, the sockets, an HTTP
 * endpoint served by a thread of this test on 127.0.0.1 (one canned reply
 * a connection), files in a temp directory. Faked: pool.c (libmaru), by
 * pool_open/pool_fetch/pool_close defined here, recording their calls.
 * Cases: every endpoint form (URL, HOST:PORT, [V6]:PORT, default port and
 * path) and the bad ones, mount arguments that are no marufs mount
 * (missing, a file, a directory that is not FUSE), no argument (the first
 * marufs mount of /proc/self/mounts, or the error when there is none),
 * the body of a 200 reply and the request that asked it, a non-200 reply,
 * garbage, a refused connection, a mount's stats file read whole (over the
 * first buffer), and a pool URI through pool.c. Not covered: an endpoint
 * that never answers (its 10 s deadline).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "pool.h"
#include "source.h"

/* ---- pool.c, faked ---- */

static int pool_opens, pool_closes;
static char pool_uri[256], pool_key[256];

int pool_open(const char *uri, const char *key_file, struct maru_client **out, char *err,
	      unsigned int errlen)
{
	pool_opens++;
	snprintf(pool_uri, sizeof(pool_uri), "%s", uri);
	snprintf(pool_key, sizeof(pool_key), "%s", key_file ? key_file : "");
	if (strstr(uri, "down")) {
		snprintf(err, errlen, "%s: refused", uri);
		return -ECONNREFUSED;
	}
	*out = (struct maru_client *)&pool_opens;
	return 0;
}

int pool_fetch(struct maru_client *c, const char *uri, char **text, char *err,
	       unsigned int errlen)
{
	(void)err;
	(void)errlen;
	assert_ptr_equal(c, &pool_opens);
	*text = strdup(uri);
	return 0;
}

void pool_close(struct maru_client *c)
{
	assert_ptr_equal(c, &pool_opens);
	pool_closes++;
}

/* ---- an HTTP endpoint on loopback ---- */

struct srv {
	int lfd;
	unsigned short port;
	const char *reply;	/* sent whole after the request, then closed */
	char req[2048];		/* what the client sent */
	pthread_t th;
};

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	size_t len = 0;
	ssize_t n;
	int fd = accept(s->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	while (len < sizeof(s->req) - 1 && !strstr(s->req, "\r\n\r\n")) {
		n = read(fd, s->req + len, sizeof(s->req) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		s->req[len] = '\0';
	}
	if (write(fd, s->reply, strlen(s->reply)) < 0)
		s->req[0] = '\0';
	close(fd);
	return NULL;
}

static void srv_start(struct srv *s, const char *reply)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	memset(s, 0, sizeof(*s));
	s->reply = reply;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 1), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_stop(struct srv *s)
{
	pthread_join(s->th, NULL);
	close(s->lfd);
}

/* ---- cases ---- */

static void endpoint(const char *arg, const char *host, const char *port, const char *target)
{
	char err[SOURCE_ERR_LEN] = "";
	struct source s;

	assert_int_equal(source_open(arg, NULL, &s, err), 0);
	assert_int_equal(s.kind, SOURCE_HTTP);
	assert_string_equal(s.host, host);
	assert_string_equal(s.port, port);
	assert_string_equal(s.target, target);
	assert_string_equal(s.name, arg);
	source_close(&s);
}

static int refused(const char *arg, char *err)
{
	struct source s;
	int rc;

	err[0] = '\0';
	rc = source_open(arg, NULL, &s, err);
	source_close(&s);
	assert_true(rc < 0);
	assert_true(err[0] != '\0');
	return rc;
}

static void test_endpoints(void **state)
{
	char err[SOURCE_ERR_LEN];

	(void)state;
	endpoint("http://node1:9100/metrics", "node1", "9100", "/metrics");
	endpoint("http://node1", "node1", "80", "/metrics");
	endpoint("http://node1/x/y", "node1", "80", "/x/y");
	endpoint("node1:9100", "node1", "9100", "/metrics");
	endpoint("10.0.0.1:80", "10.0.0.1", "80", "/metrics");
	endpoint("[::1]:9100", "::1", "9100", "/metrics");
	endpoint("http://[fe80::1]/m", "fe80::1", "80", "/m");
	assert_int_equal(refused("https://node1:9100", err), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "https is not supported"));
	assert_int_equal(refused("http://:80", err), -EINVAL);
	assert_non_null(strstr(err, "no host"));
	assert_int_equal(refused("http://node1:/x", err), -EINVAL);
	assert_non_null(strstr(err, "bad port"));
	assert_int_equal(refused("http://node1:80x/x", err), -EINVAL);
	assert_int_equal(refused("http://[::1", err), -EINVAL);
	assert_non_null(strstr(err, "bad IPv6"));
}

/* Arguments that name no marufs mount. */
static void test_not_a_mount(void **state)
{
	char dir[] = "/tmp/marustat-XXXXXX", file[64], err[SOURCE_ERR_LEN];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/f", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(refused("/nonexistent/marustat", err), -ENOENT);
	assert_int_equal(refused(file, err), -ENOTDIR);
	assert_non_null(strstr(err, "not a directory"));
	assert_int_equal(refused(dir, err), -ENODEV);	/* tmpfs or the like */
	assert_non_null(strstr(err, "not a marufs mount"));
	/* HOST:PORT only when the port is all digits: else a path */
	assert_int_equal(refused("node1:80a", err), -ENOENT);
	unlink(file);
	rmdir(dir);
}

/* No argument: the first marufs mount this process sees, if any. */
static void test_first_mount(void **state)
{
	char err[SOURCE_ERR_LEN] = "", line[8192];
	struct source s;
	int have = 0, rc;
	FILE *f = fopen("/proc/self/mounts", "r");

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		have |= strstr(line, " fuse.marufs ") != NULL;
	fclose(f);
	rc = source_open(NULL, NULL, &s, err);
	source_close(&s);
	if (have) {
		print_message("a marufs mount is here: source_open(NULL) gave %d\n", rc);
		assert_int_equal(s.kind, SOURCE_MOUNT);
	} else {
		assert_int_equal(rc, -ENOENT);
		assert_non_null(strstr(err, "no marufs mount found"));
	}
}

static void test_http_fetch(void **state)
{
	char arg[64], err[SOURCE_ERR_LEN], *text;
	struct source s;
	struct srv h;

	(void)state;
	srv_start(&h, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nmarud_up 1\nx 2\n");
	snprintf(arg, sizeof(arg), "http://127.0.0.1:%u/m?x=1", h.port);
	assert_int_equal(source_open(arg, NULL, &s, err), 0);
	assert_int_equal(source_fetch(&s, &text, err), 0);
	srv_stop(&h);
	assert_string_equal(text, "marud_up 1\nx 2\n");
	free(text);
	assert_true(!strncmp(h.req, "GET /m?x=1 HTTP/1.0\r\n", 21));
	assert_non_null(strstr(h.req, "\r\nHost: 127.0.0.1\r\n"));
	source_close(&s);

	/* not 200: the status line in the error */
	srv_start(&h, "HTTP/1.1 404 Not Found\r\n\r\nno\n");
	snprintf(arg, sizeof(arg), "127.0.0.1:%u", h.port);
	assert_int_equal(source_open(arg, NULL, &s, err), 0);
	assert_int_equal(source_fetch(&s, &text, err), -EREMOTEIO);
	srv_stop(&h);
	assert_null(text);
	assert_non_null(strstr(err, "\"HTTP/1.1 404 Not Found\""));
	assert_non_null(strstr(h.req, "GET /metrics HTTP/1.0\r\n"));

	/* not HTTP */
	srv_start(&h, "SSH-2.0-OpenSSH\r\n");
	snprintf(arg, sizeof(arg), "127.0.0.1:%u", h.port);
	assert_int_equal(source_open(arg, NULL, &s, err), 0);
	assert_int_equal(source_fetch(&s, &text, err), -EBADMSG);
	srv_stop(&h);
	assert_null(text);
	assert_non_null(strstr(err, "not an HTTP reply"));
}

/* Nothing listens: refused at once, the port in the error. */
static void test_http_refused(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char arg[64], err[SOURCE_ERR_LEN], *text;
	socklen_t al = sizeof(a);
	struct source s;
	int fd;

	(void)state;
	/* a port bound but not listening: a connection to it is refused */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	snprintf(arg, sizeof(arg), "127.0.0.1:%u", ntohs(a.sin_port));
	assert_int_equal(source_open(arg, NULL, &s, err), 0);
	assert_int_equal(source_fetch(&s, &text, err), -ECONNREFUSED);
	close(fd);
	assert_null(text);
	assert_non_null(strstr(err, "cannot reach 127.0.0.1 port"));
}

/* A mount's stats file, larger than the first buffer, read whole. */
static void test_mount_fetch(void **state)
{
	char path[] = "/tmp/marustat-stats-XXXXXX", err[SOURCE_ERR_LEN], *text;
	size_t n = 200000, i;
	struct source s;
	char *want = malloc(n + 1);
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_non_null(want);
	for (i = 0; i < n; i++)
		want[i] = (char)('a' + i % 26);
	want[n] = '\0';
	assert_int_equal(write(fd, want, n), (ssize_t)n);
	close(fd);
	memset(&s, 0, sizeof(s));
	s.kind = SOURCE_MOUNT;
	snprintf(s.path, sizeof(s.path), "%s", path);
	assert_int_equal(source_fetch(&s, &text, err), 0);
	assert_int_equal(strlen(text), n);
	assert_memory_equal(text, want, n);
	free(text);
	unlink(path);
	assert_int_equal(source_fetch(&s, &text, err), -ENOENT);
	assert_null(text);
	assert_non_null(strstr(err, "is it still a marufs mount?"));
	free(want);
}

/* A pool URI goes to pool.c, with the key file. */
static void test_pool(void **state)
{
	char err[SOURCE_ERR_LEN], *text;
	struct source s;

	(void)state;
	assert_int_equal(source_open("maru://10.0.0.1:7000", "/k", &s, err), 0);
	assert_int_equal(s.kind, SOURCE_POOL);
	assert_string_equal(pool_uri, "maru://10.0.0.1:7000");
	assert_string_equal(pool_key, "/k");
	assert_int_equal(source_fetch(&s, &text, err), 0);
	assert_string_equal(text, "maru://10.0.0.1:7000");
	free(text);
	source_close(&s);
	assert_int_equal(pool_closes, 1);
	source_close(&s);		/* twice is once */
	assert_int_equal(pool_closes, 1);
	assert_int_equal(source_open("maru+unix:///run/down.sock", NULL, &s, err),
			 -ECONNREFUSED);
	assert_string_equal(pool_key, "");
	assert_non_null(strstr(err, "refused"));
	source_close(&s);
	assert_int_equal(pool_closes, 1);
	assert_int_equal(pool_opens, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_not_a_mount),
		cmocka_unit_test(test_first_mount),
		cmocka_unit_test(test_http_fetch),
		cmocka_unit_test(test_http_refused),
		cmocka_unit_test(test_mount_fetch),
		cmocka_unit_test(test_pool),
	};

	return cmocka_run_group_tests_name("fs/marustat/source", tests, NULL, NULL);
}
