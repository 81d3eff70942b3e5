/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/httpd_test.c: lib/common/httpd.c, the /metrics
 * endpoint. The listen address: numeric, localhost or a port alone
 * (127.0.0.1), loopback unless allow_remote (a wildcard or another address
 * is -EPERM, a name or a bad port -EINVAL), port 0 picks one httpd_port()
 * names. Served on loopback: GET /metrics answers the owner's text, every
 * sample with the owner's labels, asked again at every scrape (nothing
 * kept), as text/plain version 0.0.4; an owner's failure is 500; another
 * path 404, another method 405 with Allow: GET, a GET with a body 413,
 * headers beyond HTTPD_REQUEST_BYTES refused; one address has at most
 * HTTPD_MAX_PER_IP connections at once; a bound port cannot be bound
 * twice. Real: libmicrohttpd on a loopback TCP port, the test's own
 * HTTP/1.1 client over a socket. Nothing is faked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "httpd.h"
#include "log.h"

struct owner {
	int calls;
	int fail;	/* the text function returns -fail */
	int empty;
};

static int text_fn(void *arg, struct prom *out)
{
	struct owner *o = arg;

	o->calls++;
	if (o->fail)
		return -o->fail;
	if (o->empty)
		return 0;
	prom_counter(out, "maru_test_scrapes_total", "Scrapes so far.", (uint64_t)o->calls);
	prom_head(out, "maru_test_bytes", "gauge", "Bytes by kind.");
	prom_sample(out, "maru_test_bytes", "kind=\"a\"", 7);
	return 0;
}

/* One request on a fresh socket; the whole answer (the server closes). */
static int http(uint16_t port, int v6, const char *req, char *out, size_t cap)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	size_t got = 0;
	ssize_t n;
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (v6)
		assert_int_equal(connect(fd, (struct sockaddr *)&a6, sizeof(a6)), 0);
	else
		assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	while (got + 1 < cap && (n = recv(fd, out + got, cap - 1 - got, 0)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	return got ? atoi(out + 9) : 0;	/* "HTTP/1.1 200 OK" */
}

static const char *body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");

	return b ? b + 4 : "";
}

static struct httpd *start(const char *listen, struct owner *o, const char *labels)
{
	struct httpd_opts opts = { .listen = listen, .labels = labels, .text = text_fn,
				   .arg = o };
	struct httpd *h = NULL;

	assert_int_equal(httpd_start(&opts, &h), 0);
	assert_non_null(h);
	assert_int_not_equal(httpd_port(h), 0);
	return h;
}

#define GET(path)	"GET " path " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

static void test_check_listen(void **state)
{
	(void)state;
	assert_int_equal(httpd_check_listen("9100", 0), 0);
	assert_int_equal(httpd_check_listen("127.0.0.1:0", 0), 0);
	assert_int_equal(httpd_check_listen("127.9.9.9:80", 0), 0);
	assert_int_equal(httpd_check_listen("localhost:9100", 0), 0);
	assert_int_equal(httpd_check_listen("[::1]:9100", 0), 0);
	/* not loopback: only when allowed */
	assert_int_equal(httpd_check_listen("0.0.0.0:9100", 0), -EPERM);
	assert_int_equal(httpd_check_listen("10.1.2.3:9100", 0), -EPERM);
	assert_int_equal(httpd_check_listen("[::]:9100", 0), -EPERM);
	assert_int_equal(httpd_check_listen("[2001:db8::1]:9100", 0), -EPERM);
	assert_int_equal(httpd_check_listen("0.0.0.0:9100", 1), 0);
	assert_int_equal(httpd_check_listen("10.1.2.3:9100", 1), 0);
	/* numeric only: never a resolver's answer */
	assert_int_equal(httpd_check_listen("example.com:80", 1), -EINVAL);
	assert_int_equal(httpd_check_listen("localhost", 0), -EINVAL);
	assert_int_equal(httpd_check_listen("127.0.0.1:", 0), -EINVAL);
	assert_int_equal(httpd_check_listen(":80", 0), -EINVAL);
	assert_int_equal(httpd_check_listen("127.0.0.1:65536", 0), -EINVAL);
	assert_int_equal(httpd_check_listen("127.0.0.1:8x", 0), -EINVAL);
	assert_int_equal(httpd_check_listen("", 0), -EINVAL);
	assert_int_equal(httpd_check_listen(NULL, 0), -EINVAL);
}

static void test_scrape(void **state)
{
	struct owner o = { 0 };
	struct httpd *h = start("127.0.0.1:0", &o, "pool=\"p1\"");
	static char resp[8192];

	(void)state;
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 200);
	assert_non_null(strstr(resp, "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
	assert_non_null(strstr(body_of(resp), "# TYPE maru_test_scrapes_total counter\n"));
	assert_non_null(strstr(body_of(resp), "\nmaru_test_scrapes_total{pool=\"p1\"} 1\n"));
	assert_non_null(strstr(body_of(resp), "\nmaru_test_bytes{pool=\"p1\",kind=\"a\"} 7\n"));
	/* asked again: the owner's text of now */
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 200);
	assert_non_null(strstr(body_of(resp), "maru_test_scrapes_total{pool=\"p1\"} 2\n"));
	assert_int_equal(o.calls, 2);
	httpd_stop(h);
}

static void test_no_labels_and_empty(void **state)
{
	struct owner o = { 0 };
	struct httpd *h = start("localhost:0", &o, NULL);
	static char resp[8192];

	(void)state;
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 200);
	assert_non_null(strstr(body_of(resp), "\nmaru_test_scrapes_total 1\n"));
	assert_non_null(strstr(body_of(resp), "\nmaru_test_bytes{kind=\"a\"} 7\n"));
	o.empty = 1;
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 200);
	assert_string_equal(body_of(resp), "");
	httpd_stop(h);
}

static void test_refusals(void **state)
{
	struct owner o = { 0 };
	struct httpd *h = start("127.0.0.1:0", &o, NULL);
	static char resp[8192];
	static char big[HTTPD_REQUEST_BYTES + 2048];
	int st;

	(void)state;
	assert_int_equal(http(httpd_port(h), 0, GET("/"), resp, sizeof(resp)), 404);
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics/x"), resp, sizeof(resp)), 404);
	assert_non_null(strstr(body_of(resp), "only /metrics"));
	assert_int_equal(http(httpd_port(h), 0,
			      "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			      "Content-Length: 0\r\n\r\n", resp, sizeof(resp)), 405);
	assert_non_null(strstr(resp, "Allow: GET"));
	assert_int_equal(http(httpd_port(h), 0,
			      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			      "Content-Length: 5\r\n\r\nhello", resp, sizeof(resp)), 413);
	/* none of those asked the owner */
	assert_int_equal(o.calls, 0);
	/* headers beyond the bound */
	snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: %0*d\r\n"
		 "Connection: close\r\n\r\n", HTTPD_REQUEST_BYTES, 0);
	st = http(httpd_port(h), 0, big, resp, sizeof(resp));
	assert_true(st == 431 || st == 413);
	assert_int_equal(o.calls, 0);
	/* still serving */
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 200);
	httpd_stop(h);
}

static void test_owner_fails(void **state)
{
	struct owner o = { .fail = EIO };
	struct httpd *h = start("127.0.0.1:0", &o, "pool=\"p\"");
	static char resp[8192];

	(void)state;
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 500);
	assert_string_equal(body_of(resp), "cannot write the metrics\n");
	o.fail = 0;
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 200);
	httpd_stop(h);
}

static void test_start_refused(void **state)
{
	struct owner o = { 0 };
	struct httpd_opts opts = { .listen = "0.0.0.0:0", .text = text_fn, .arg = &o };
	struct httpd *h = NULL, *h2 = NULL;
	char listen[32];
	static char resp[8192];

	(void)state;
	assert_int_equal(httpd_start(&opts, &h), -EPERM);
	opts.listen = "nowhere:80";
	assert_int_equal(httpd_start(&opts, &h), -EINVAL);
	assert_null(h);
	/* a wildcard when allowed: reachable on loopback too */
	opts.listen = "0.0.0.0:0";
	opts.allow_remote = 1;
	assert_int_equal(httpd_start(&opts, &h), 0);
	assert_int_equal(http(httpd_port(h), 0, GET("/metrics"), resp, sizeof(resp)), 200);
	/* its port is taken: a second endpoint cannot have it */
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned int)httpd_port(h));
	opts.listen = listen;
	assert_true(httpd_start(&opts, &h2) < 0);
	assert_null(h2);
	httpd_stop(h);
	httpd_stop(NULL);
	assert_int_equal(httpd_port(NULL), 0);
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* At most HTTPD_MAX_PER_IP connections of one address at once. */
static void test_connection_bound(void **state)
{
	struct owner o = { 0 };
	struct httpd *h = start("127.0.0.1:0", &o, NULL);
	static char resp[8192];
	int fd[HTTPD_MAX_PER_IP], extra, i;
	char c;

	(void)state;
	for (i = 0; i < HTTPD_MAX_PER_IP; i++)
		fd[i] = connect_to(httpd_port(h));
	/* the next is closed unanswered */
	extra = connect_to(httpd_port(h));
	(void)send(extra, GET("/metrics"), strlen(GET("/metrics")), MSG_NOSIGNAL);
	assert_true(recv(extra, &c, 1, 0) <= 0);
	close(extra);
	assert_int_equal(o.calls, 0);
	/* one of them goes: room again */
	close(fd[0]);
	for (i = 0; i < 100 && http(httpd_port(h), 0, GET("/metrics"), resp,
				    sizeof(resp)) != 200; i++)
		usleep(10000);
	assert_true(i < 100);
	for (i = 1; i < HTTPD_MAX_PER_IP; i++)
		close(fd[i]);
	httpd_stop(h);
}

static void test_ipv6_loopback(void **state)
{
	struct owner o = { 0 };
	struct httpd *h = start("[::1]:0", &o, "pool=\"v6\"");
	static char resp[8192];

	(void)state;
	assert_int_equal(http(httpd_port(h), 1, GET("/metrics"), resp, sizeof(resp)), 200);
	assert_non_null(strstr(body_of(resp), "maru_test_scrapes_total{pool=\"v6\"} 1\n"));
	httpd_stop(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_listen),
		cmocka_unit_test(test_scrape),
		cmocka_unit_test(test_no_labels_and_empty),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_owner_fails),
		cmocka_unit_test(test_start_refused),
		cmocka_unit_test(test_connection_bound),
		cmocka_unit_test(test_ipv6_loopback),
	};

	log_init("httpd_test", 1, 0);
	return cmocka_run_group_tests_name("common/httpd", tests, NULL, NULL);
}
