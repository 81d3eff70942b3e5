/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/addr_test.c: every control-address form and its
 * errors, and connecting over Unix and TCP sockets (common/addr.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "maru/libmaru.h"
#include "superblock.h"
#include "addr.h"
#include "clock.h"
#include "hash.h"
#include "parse.h"

static struct maru_addr addr_ok(const char *uri)
{
	struct maru_addr a;
	int rc = addr_parse(uri, &a);

	if (rc)
		fail_msg("addr_parse(\"%s\") = %d", uri, rc);
	return a;
}

static void addr_bad(const char *uri, int want)
{
	struct maru_addr a;
	int rc = addr_parse(uri, &a);

	if (rc != want)
		fail_msg("addr_parse(\"%s\") = %d, want %d", uri ? uri : "(null)", rc, want);
}

static void test_addr_forms(void **state)
{
	struct maru_addr a;

	(void)state;
	a = addr_ok("maru://pool.example.com");
	assert_int_equal(a.unix, 0);
	assert_string_equal(a.host, "pool.example.com");
	assert_int_equal(a.port, MARU_DEFAULT_PORT);
	a = addr_ok("maru://10.0.0.5:9000");
	assert_string_equal(a.host, "10.0.0.5");
	assert_int_equal(a.port, 9000);
	a = addr_ok("maru://host:65535/");
	assert_string_equal(a.host, "host");
	assert_int_equal(a.port, 65535);
	a = addr_ok("maru://[::1]:7451");
	assert_string_equal(a.host, "::1");
	assert_int_equal(a.port, 7451);
	a = addr_ok("maru://[fe80::1%eth0]");
	assert_string_equal(a.host, "fe80::1%eth0");
	assert_int_equal(a.port, MARU_DEFAULT_PORT);
	a = addr_ok("maru+unix:///run/marud/ctl.sock");
	assert_int_equal(a.unix, 1);
	assert_string_equal(a.path, "/run/marud/ctl.sock");
	a = addr_ok("tcp://0.0.0.0:7450");
	assert_int_equal(a.unix, 0);
	assert_string_equal(a.host, "0.0.0.0");
	assert_int_equal(a.port, 7450);
	/* listen forms: any address, ephemeral port */
	a = addr_ok("tcp://:0");
	assert_string_equal(a.host, "");
	assert_int_equal(a.port, 0);
	a = addr_ok("tcp://[::]:1");
	assert_string_equal(a.host, "::");
	a = addr_ok("unix:/tmp/marud.sock");
	assert_int_equal(a.unix, 1);
	assert_string_equal(a.path, "/tmp/marud.sock");
	a = addr_ok("unix:relative.sock");
	assert_string_equal(a.path, "relative.sock");
}

static void test_addr_errors(void **state)
{
	char uri[600], path[200];

	(void)state;
	addr_bad(NULL, -EINVAL);
	addr_bad("", -EINVAL);
	addr_bad("host:7450", -EINVAL);
	addr_bad("http://host", -EINVAL);
	addr_bad("MARU://host", -EINVAL);
	addr_bad("maru://", -EINVAL);
	addr_bad("maru:///", -EINVAL);
	addr_bad("maru://:7450", -EINVAL);
	addr_bad("maru://host:", -EINVAL);
	addr_bad("maru://host:0", -EINVAL);
	addr_bad("maru://host:65536", -EINVAL);
	addr_bad("maru://host:-1", -EINVAL);
	addr_bad("maru://host:12x", -EINVAL);
	addr_bad("maru://host:1:2", -EINVAL);
	addr_bad("maru://::1", -EINVAL);
	addr_bad("maru://[::1", -EINVAL);
	addr_bad("maru://[]:1", -EINVAL);
	addr_bad("maru://[::1]x", -EINVAL);
	addr_bad("maru://a b", -EINVAL);
	addr_bad("maru://user@host", -EINVAL);
	addr_bad("maru://host/path", -EINVAL);
	addr_bad("maru+unix://", -EINVAL);
	addr_bad("maru+unix://relative.sock", -EINVAL);
	addr_bad("unix:", -EINVAL);
	addr_bad("tcp://host:99999", -EINVAL);

	/* sun_path holds 107 bytes and the NUL */
	memset(path, 'p', sizeof(path));
	path[0] = '/';
	snprintf(uri, sizeof(uri), "unix:%.*s", 107, path);
	assert_string_equal(addr_ok(uri).path + 100, "ppppppp");
	snprintf(uri, sizeof(uri), "unix:%.*s", 108, path);
	addr_bad(uri, -ENAMETOOLONG);
	snprintf(uri, sizeof(uri), "maru+unix://%.*s", 150, path);
	addr_bad(uri, -ENAMETOOLONG);
	memset(path, 'h', sizeof(path));
	snprintf(uri, sizeof(uri), "maru://%.*s%.*s:1", 200, path, 56, path);
	addr_bad(uri, -ENAMETOOLONG);
	snprintf(uri, sizeof(uri), "maru://%.*s%.*s:1", 200, path, 55, path);
	assert_int_equal(strlen(addr_ok(uri).host), 255);
}

static void check_blocking_cloexec(int fd)
{
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

static void test_connect_unix(void **state)
{
	char dir[] = "/tmp/maru-util-XXXXXX", uri[200];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct maru_addr a;
	int lfd, fd, afd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/s", dir);
	snprintf(uri, sizeof(uri), "maru+unix://%s", sun.sun_path);
	assert_int_equal(addr_parse(uri, &a), 0);
	/* nobody listening yet */
	assert_int_equal(addr_connect(&a, 1000), -ENOENT);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	fd = addr_connect(&a, 1000);
	assert_true(fd >= 0);
	check_blocking_cloexec(fd);
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	assert_int_equal(write(fd, "hi", 2), 2);
	close(fd);
	close(afd);
	close(lfd);
	unlink(sun.sun_path);
	assert_int_equal(addr_connect(&a, 1000), -ENOENT);
	rmdir(dir);
}

static uint16_t listen_tcp(int *lfd)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t slen = sizeof(sin);

	*lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*lfd >= 0);
	assert_int_equal(bind(*lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(*lfd, 4), 0);
	assert_int_equal(getsockname(*lfd, (struct sockaddr *)&sin, &slen), 0);
	return ntohs(sin.sin_port);
}

static void test_connect_tcp(void **state)
{
	struct maru_addr a;
	char uri[64];
	int lfd, fd, afd, v;
	socklen_t vlen = sizeof(v);
	uint16_t port;

	(void)state;
	port = listen_tcp(&lfd);
	snprintf(uri, sizeof(uri), "maru://127.0.0.1:%u", (unsigned int)port);
	assert_int_equal(addr_parse(uri, &a), 0);
	fd = addr_connect(&a, 2000);
	assert_true(fd >= 0);
	check_blocking_cloexec(fd);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &vlen), 0);
	assert_int_not_equal(v, 0);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &vlen), 0);
	assert_int_not_equal(v, 0);
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	assert_int_equal(write(fd, "ping", 4), 4);
	close(afd);
	close(fd);
	/* the port is closed now: refused, not a hang */
	close(lfd);
	fd = addr_connect(&a, 2000);
	assert_int_equal(fd, -ECONNREFUSED);
	/* "localhost" goes through the resolver; it may try ::1 first */
	port = listen_tcp(&lfd);
	snprintf(uri, sizeof(uri), "tcp://localhost:%u", (unsigned int)port);
	assert_int_equal(addr_parse(uri, &a), 0);
	fd = addr_connect(&a, 2000);
	assert_true(fd >= 0);
	close(fd);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_forms),
		cmocka_unit_test(test_addr_errors),
		cmocka_unit_test(test_connect_unix),
		cmocka_unit_test(test_connect_tcp),
	};

	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
