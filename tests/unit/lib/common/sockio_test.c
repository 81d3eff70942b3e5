/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/sockio_test.c: whole-buffer socket I/O
 * (common/sockio.c) on real socketpairs and pipes: a gather write larger
 * than the socket buffer read back by a scatter read on another thread,
 * EOF as -ECONNRESET, a closed peer as -EPIPE (no SIGPIPE), draining, the
 * pipe fallback and a bad descriptor; polling for a readable socket
 * without sleeping, for a bounded time.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sockio.h"

#define BIG	(3u << 20)

struct reader {
	int fd;
	uint8_t *a, *b;
	int rc;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct iovec iov[3] = {
		{ .iov_base = r->a, .iov_len = 10 },
		{ .iov_base = NULL, .iov_len = 0 },
		{ .iov_base = r->b, .iov_len = BIG },
	};

	r->rc = sock_readv_all(r->fd, iov, 3);
	return NULL;
}

static void test_big_gather(void **state)
{
	uint8_t *data = malloc(BIG), head[10] = "0123456789";
	struct reader r = { .a = malloc(10), .b = malloc(BIG) };
	struct iovec iov[2] = {
		{ .iov_base = head, .iov_len = sizeof(head) },
		{ .iov_base = data, .iov_len = BIG },
	};
	pthread_t t;
	int sv[2];
	size_t i;

	(void)state;
	assert_non_null(data);
	for (i = 0; i < BIG; i++)
		data[i] = (uint8_t)(i * 13);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	r.fd = sv[1];
	assert_int_equal(pthread_create(&t, NULL, reader_main, &r), 0);
	assert_int_equal(sock_writev_all(sv[0], iov, 2), 0);
	pthread_join(t, NULL);
	assert_int_equal(r.rc, 0);
	assert_memory_equal(r.a, head, 10);
	assert_memory_equal(r.b, data, BIG);
	close(sv[0]);
	close(sv[1]);
	free(data);
	free(r.a);
	free(r.b);
}

static void test_eof_pipe_drain(void **state)
{
	uint8_t buf[8192] = { 1 };
	int sv[2], p[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(sock_write_full(sv[0], buf, 5000), 0);
	assert_int_equal(sock_write_full(sv[0], "tail", 4), 0);
	assert_int_equal(sock_drain(sv[1], 5000), 0);
	assert_int_equal(sock_read_full(sv[1], buf, 4), 0);
	assert_memory_equal(buf, "tail", 4);
	assert_int_equal(sock_write_full(sv[0], "ab", 2), 0);
	close(sv[0]);
	/* two bytes then EOF */
	assert_int_equal(sock_read_full(sv[1], buf, 3), -ECONNRESET);
	assert_int_equal(sock_drain(sv[1], 1), -ECONNRESET);
	/* the peer is gone: EPIPE, and no SIGPIPE kills the test */
	assert_int_equal(sock_write_full(sv[1], "x", 1), -EPIPE);
	close(sv[1]);

	assert_int_equal(pipe(p), 0);
	assert_int_equal(sock_write_full(p[1], "pipe", 4), 0);
	assert_int_equal(sock_read_full(p[0], buf, 4), 0);
	assert_memory_equal(buf, "pipe", 4);
	assert_int_equal(sock_read_full(p[0], buf, 0), 0);
	close(p[0]);
	close(p[1]);
	assert_int_equal(sock_read_full(-1, buf, 1), -EBADF);
	assert_int_equal(sock_write_full(-1, buf, 1), -EBADF);
}

/* Nothing to read: 0 after about the time given; a byte or EOF: 1 at once. */
static void test_spin_readable(void **state)
{
	struct timespec t0, t1;
	int sv[2];
	long ns;
	char c;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(sock_spin_readable(sv[0], 2000000), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
	assert_true(ns >= 2000000);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(sock_spin_readable(sv[0], 1000000000), 1);
	assert_int_equal(sock_spin_readable(sv[0], 1000000000), 1);	/* only peeked */
	assert_int_equal(read(sv[0], &c, 1), 1);
	close(sv[1]);
	assert_int_equal(sock_spin_readable(sv[0], 1000000000), 1);	/* EOF */
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_big_gather),
		cmocka_unit_test(test_eof_pipe_drain),
		cmocka_unit_test(test_spin_readable),
	};

	return cmocka_run_group_tests_name("sockio", tests, NULL, NULL);
}
