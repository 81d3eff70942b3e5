// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/metrics_test.c: marud's /metrics endpoint
 * (daemon/metrics.c) on a real server (server_harness.c, a real shm pool)
 * and a real HTTP GET over loopback TCP: no listen address, no endpoint;
 * a scrape answers 200 with the text STATS gives, its samples labelled
 * with the pool's path; a wildcard
 * address without --metrics-remote is refused (-EPERM), a malformed one
 * -EINVAL; stop closes it (a new connection is refused).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "httpd.h"
#include "metrics.h"
#include "pool.h"
#include "server_harness.h"
#include "server_priv.h"

static struct th t;

static int setup(void **state)
{
	th_config(&t);
	return th_new(&t, NULL);
}

static int teardown(void **state)
{
	return th_free(&t);
}

/* GET path on 127.0.0.1:port: the whole answer (malloc'd) or NULL. */
static char *get(uint16_t port, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t len = 0, cap = 1 << 20;
	char req[256], *buf;
	ssize_t n;
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return NULL;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	buf = malloc(cap);
	assert_non_null(buf);
	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	return buf;
}

static void test_off_without_address(void **state)
{
	t.srv->cfg.metrics_listen[0] = '\0';
	assert_int_equal(metrics_start(t.srv), 0);
	assert_null(t.srv->metrics);
	metrics_stop(t.srv);
}

static void test_scrape(void **state)
{
	char label[PATH_MAX + 16], *r;
	uint16_t port;

	snprintf(t.srv->cfg.metrics_listen, sizeof(t.srv->cfg.metrics_listen), "127.0.0.1:0");
	assert_int_equal(metrics_start(t.srv), 0);
	assert_non_null(t.srv->metrics);
	port = httpd_port(t.srv->metrics);
	assert_true(port != 0);
	r = get(port, "/metrics");
	assert_non_null(r);
	assert_non_null(strstr(r, " 200 "));
	/* the pool's families, each sample with the pool's path */
	assert_non_null(strstr(r, "marud_accounting_ok{"));
	snprintf(label, sizeof(label), "pool=\"%s\"", t.srv->pool->path);
	assert_non_null(strstr(r, label));
	free(r);
	metrics_stop(t.srv);
	assert_null(t.srv->metrics);
	/* closed: nobody answers there any more */
	r = get(port, "/metrics");
	assert_true(r == NULL || strstr(r, " 200 ") == NULL);
	free(r);
}

static void test_refused_addresses(void **state)
{
	snprintf(t.srv->cfg.metrics_listen, sizeof(t.srv->cfg.metrics_listen), "0.0.0.0:0");
	t.srv->cfg.metrics_remote = 0;
	assert_int_equal(metrics_start(t.srv), -EPERM);
	assert_null(t.srv->metrics);
	snprintf(t.srv->cfg.metrics_listen, sizeof(t.srv->cfg.metrics_listen), "nohost:x");
	assert_int_equal(metrics_start(t.srv), -EINVAL);
	assert_null(t.srv->metrics);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_off_without_address, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scrape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_addresses, setup, teardown),
	};

	return cmocka_run_group_tests_name("daemon/metrics", tests, NULL, NULL);
}
