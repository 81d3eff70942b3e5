/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/util_test.c: the shared helpers other than the codec:
 * size and number parsing at their edges, every control-address form and
 * its errors, connecting over Unix and TCP sockets, clocks and xxh3, the
 * pool superblock seal/check, the log line format, and MARU_FAILPOINT
 * parsing with every action (abort and exit in forked children).
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

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 12345;

	if (parse_size(s, &v) != 0)
		fail_msg("parse_size(\"%s\") failed", s);
	if (v != want)
		fail_msg("parse_size(\"%s\") = %llu, want %llu", s,
			 (unsigned long long)v, (unsigned long long)want);
}

static void size_bad(const char *s, int want)
{
	uint64_t v = 12345;
	int rc = parse_size(s, &v);

	if (rc != want)
		fail_msg("parse_size(\"%s\") = %d, want %d", s ? s : "(null)", rc, want);
	assert_int_equal(v, 12345);	/* untouched on error */
}

static void test_parse_size(void **state)
{
	(void)state;
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("4096B", 4096);
	size_ok("64K", 64ull << 10);
	size_ok("64k", 64ull << 10);
	size_ok("64KiB", 64ull << 10);
	size_ok("64kib", 64ull << 10);
	size_ok("64KB", 64ull << 10);
	size_ok("64M", 64ull << 20);
	size_ok("2G", 2ull << 30);
	size_ok("2gb", 2ull << 30);
	size_ok("1T", 1ull << 40);
	size_ok("1TiB", 1ull << 40);
	size_ok("3P", 3ull << 50);
	size_ok("15E", 15ull << 60);
	size_ok("16777215T", 16777215ull << 40);
	size_ok("18446744073709551615", UINT64_MAX);
	size_bad("16E", -ERANGE);
	size_bad("16777216T", -ERANGE);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("99999999999999999999999K", -ERANGE);
	size_bad(NULL, -EINVAL);
	size_bad("", -EINVAL);
	size_bad("K", -EINVAL);
	size_bad("B", -EINVAL);
	size_bad("64X", -EINVAL);
	size_bad("64 K", -EINVAL);
	size_bad(" 64", -EINVAL);
	size_bad("64 ", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad("64Ki", -EINVAL);
	size_bad("64iB", -EINVAL);
	size_bad("64KBB", -EINVAL);
	size_bad("64KK", -EINVAL);
	size_bad("1.5G", -EINVAL);
	size_bad("0x10", -EINVAL);
}

static void u64_bad(const char *s, int want)
{
	uint64_t v = 7;

	if (parse_u64(s, &v) != want)
		fail_msg("parse_u64(\"%s\") != %d", s ? s : "(null)", want);
	assert_int_equal(v, 7);
}

static void test_parse_u64(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_u64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("007", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	u64_bad("18446744073709551616", -ERANGE);
	u64_bad("99999999999999999999999999", -ERANGE);
	u64_bad(NULL, -EINVAL);
	u64_bad("", -EINVAL);
	u64_bad("-1", -EINVAL);
	u64_bad("+1", -EINVAL);
	u64_bad(" 1", -EINVAL);
	u64_bad("1 ", -EINVAL);
	u64_bad("0x10", -EINVAL);
	u64_bad("12a", -EINVAL);
	u64_bad("1K", -EINVAL);
}

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

static void test_clocks_hash(void **state)
{
	uint64_t m1 = mono_ns(), m2;
	static const char text[] = "marufs";

	(void)state;
	assert_true(now_ns() > 1600000000ull * 1000000000ull);
	m2 = mono_ns();
	assert_true(m2 >= m1);
	/* published XXH3-64 of the empty input, seed 0 */
	assert_true(hash_xxh3("", 0) == 0x2D06800538D394C2ull);
	assert_true(hash_xxh3(text, 6) == hash_xxh3("marufs", 6));
	assert_true(hash_xxh3(text, 6) != hash_xxh3(text, 5));
}

static void test_superblock(void **state)
{
	struct pool_superblock sb, bad;
	size_t i;

	(void)state;
	memset(&sb, 0, sizeof(sb));
	sb.size = 1ull << 30;
	sb.align = 2 << 20;
	sb.data_off = 2 << 20;
	sb.generation = 3;
	sb.uuid[0] = 0xab;
	assert_int_equal(pool_sb_check(&sb), -EINVAL);
	pool_sb_seal(&sb);
	assert_memory_equal(sb.magic, POOL_MAGIC, 8);
	assert_int_equal(sb.layout_version, POOL_LAYOUT_VERSION);
	assert_int_equal(pool_sb_check(&sb), 0);
	/* any single changed byte, checksum included, is refused */
	for (i = 0; i < sizeof(sb); i++) {
		bad = sb;
		((uint8_t *)&bad)[i] ^= 0x01;
		assert_int_equal(pool_sb_check(&bad), -EINVAL);
	}
	/* a resealed other version is still refused */
	bad = sb;
	bad.layout_version = POOL_LAYOUT_VERSION + 1;
	bad.checksum = 0;
	assert_int_equal(pool_sb_check(&bad), -EINVAL);
}

/* Run fn with stderr captured; returns what it wrote (static buffer). */
static const char *capture_stderr(void (*fn)(void))
{
	static char out[4096];
	int p[2], saved;
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	fn();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = '\0';
	return out;
}

static void log_some(void)
{
	errno = EBUSY;
	log_warn(-ENOENT, "open %s", "x");
	log_warn(EACCES, "n=%d", 5);
	log_warnx("plain");
	log_debug("hidden %d", 1);
	log_set_verbose(1);
	log_debug("shown %d", 2);
	log_set_verbose(0);
	log_info("done");
	assert_int_equal(errno, EBUSY);
}

static void log_long(void)
{
	char big[5000];

	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_warn(EIO, "%s", big);
}

static void *log_thread(void *arg)
{
	int i;

	for (i = 0; i < 200; i++)
		log_info("thread %ld line %03d %s", (long)(intptr_t)arg, i,
			 "abcdefghijklmnopqrstuvwxyz");
	return NULL;
}

static void log_threads(void)
{
	pthread_t t[4];
	long i;

	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, log_thread, (void *)(intptr_t)i), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

/* Lines from concurrent threads arrive whole: one write() per line. */
static void test_log_threads(void **state)
{
	static char out[65536];
	int p[2], saved, lines = 0, t, n;
	const char *line;
	ssize_t got, total = 0;

	(void)state;
	log_init("utiltest", 1, 0);
	assert_int_equal(pipe(p), 0);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	log_threads();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	while ((got = read(p[0], out + total, sizeof(out) - 1 - (size_t)total)) > 0)
		total += got;
	close(p[0]);
	out[total] = '\0';
	for (line = out; *line; line = strchr(line, '\n') + 1) {
		assert_int_equal(sscanf(line, "utiltest: thread %d line %d abcdefghijklmnopqrstuvwxyz%n",
					&t, &n, &n), 2);
		assert_int_equal(line[n], '\n');
		lines++;
	}
	assert_int_equal(lines, 800);
}

static void test_log(void **state)
{
	const char *out;

	(void)state;
	log_init("/usr/sbin/utiltest", 1, 0);
	assert_int_equal(log_get_verbose(), 0);
	out = capture_stderr(log_some);
	assert_string_equal(out,
		"utiltest: open x: No such file or directory\n"
		"utiltest: n=5: Permission denied\n"
		"utiltest: plain\n"
		"utiltest: shown 2\n"
		"utiltest: done\n");
	/* an overlong message is cut, but stays one line */
	out = capture_stderr(log_long);
	assert_true(strlen(out) > 1000 && strlen(out) < 4096);
	assert_int_equal(strncmp(out, "utiltest: zzz", 13), 0);
	assert_int_equal(out[strlen(out) - 1], '\n');
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
}

#if HAVE_FAILPOINTS
/* Exit status of a child that hits name `hits` times. */
static int child_hits(const char *name, int hits)
{
	int i, status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		for (i = 0; i < hits; i++)
			failpoint_hit(name);
		_exit(42);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_failpoint(void **state)
{
	uint64_t t0;
	int status;

	(void)state;
	/* parsed once, at the first hit: everything is armed here */
	setenv("MARU_FAILPOINT",
	       "t_err=error:5,t_name=error:ENOSPC,t_neg=error:-7,t_nth=3*error:28,"
	       "t_sleep=sleep:30,t_bad=frobnicate,=error:5,t_zero=0*error:5,"
	       "t_exit=exit,t_abort=abort,t_abort2=2*abort,t_errbad=error:EWHAT,", 1);
	assert_int_equal(failpoint_hit("t_err"), -5);
	assert_int_equal(failpoint_hit("t_err"), -5);
	assert_int_equal(FAILPOINT("t_name"), -ENOSPC);
	assert_int_equal(failpoint_hit("t_neg"), -7);
	assert_int_equal(failpoint_hit("t_nth"), 0);
	assert_int_equal(failpoint_hit("t_nth"), 0);
	assert_int_equal(failpoint_hit("t_nth"), -28);
	assert_int_equal(failpoint_hit("t_nth"), 0);
	t0 = mono_ns();
	assert_int_equal(failpoint_hit("t_sleep"), 0);
	assert_true(mono_ns() - t0 >= 30000000ull);
	assert_int_equal(failpoint_hit("t_bad"), 0);
	assert_int_equal(failpoint_hit("t_zero"), 0);
	assert_int_equal(failpoint_hit("t_errbad"), 0);
	assert_int_equal(failpoint_hit("not_armed"), 0);
	assert_int_equal(failpoint_hit(""), 0);

	status = child_hits("t_exit", 1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	status = child_hits("t_abort", 1);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	status = child_hits("t_abort2", 1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 42);
	status = child_hits("t_abort2", 2);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_addr_forms),
		cmocka_unit_test(test_addr_errors),
		cmocka_unit_test(test_connect_unix),
		cmocka_unit_test(test_connect_tcp),
		cmocka_unit_test(test_clocks_hash),
		cmocka_unit_test(test_superblock),
		cmocka_unit_test(test_log),
		cmocka_unit_test(test_log_threads),
#if HAVE_FAILPOINTS
		cmocka_unit_test(test_failpoint),
#endif
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
