/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/redis_bench.c: the Redis side of the "32 MiB GET over loopback"
 * row: what a user would run as a networked KV pool, measured against
 * libmaru's tcp get (maru_bench get) in the same run. One blocking
 * connection, one SET of SIZE bytes, then ITERS GETs each read straight into
 * one buffer and the last one checked byte for byte.
 *
 *   redis_bench ping ADDR                 exit 0 once the server answers PING
 *   redis_bench get ADDR SIZE ITERS       prints redis_get_Bps
 *
 * ADDR is HOST:PORT or unix:/path (benchnet.h). Output lines are "key value".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "benchnet.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "redis_bench: %s: %s\n", what, strerror(-rc));
	exit(1);
}

static size_t size_arg(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v == 0) {
		fprintf(stderr, "redis_bench: bad size '%s'\n", s);
		exit(2);
	}
	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return (size_t)v;
}

static void *xmap(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", -errno);
	return p;
}

static int cmd(int fd, int argc, const char *const *argv, const size_t *lens)
{
	char buf[512];
	size_t n = resp_cmd(buf, sizeof(buf), argc, argv, lens);

	return n ? net_write_full(fd, buf, n) : -EMSGSIZE;
}

static int bench_ping(const char *addr)
{
	static const char *const argv[] = { "PING" };
	static const size_t lens[] = { 4 };
	int fd = net_connect(addr), rc;

	if (fd < 0)
		return 1;
	rc = cmd(fd, 1, argv, lens);
	if (!rc)
		rc = resp_read_status(fd);
	close(fd);
	return rc ? 1 : 0;
}

/* SET key <size bytes>: the header by resp_cmd's rules, then the value unbuffered. */
static int set_big(int fd, const char *key, const void *val, size_t size)
{
	char hdr[128];
	int n = snprintf(hdr, sizeof(hdr), "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n",
			 strlen(key), key, size);
	int rc;

	if (n < 0 || (size_t)n >= sizeof(hdr))
		return -EMSGSIZE;
	rc = net_write_full(fd, hdr, (size_t)n);
	if (!rc)
		rc = net_write_full(fd, val, size);
	if (!rc)
		rc = net_write_full(fd, "\r\n", 2);
	return rc ? rc : resp_read_status(fd);
}

static int bench_get(const char *addr, size_t size, int iters)
{
	const char *argv[2] = { "GET", NULL };
	size_t lens[2] = { 3, 0 };
	char key[64];
	unsigned char *src = xmap(size), *dst = xmap(size);
	int fd = net_connect(addr), rc;
	double t;

	if (fd < 0)
		die("connect", fd);
	for (size_t k = 0; k < size; k++)
		src[k] = (unsigned char)(k * 131 + 7);
	snprintf(key, sizeof(key), "bench-%d", (int)getpid());
	argv[1] = key;
	lens[1] = strlen(key);
	rc = set_big(fd, key, src, size);
	if (rc)
		die("SET", rc);
	t = now_s();
	for (int i = 0; i < iters; i++) {
		ssize_t got;

		rc = cmd(fd, 2, argv, lens);
		if (rc)
			die("GET", rc);
		got = resp_read_bulk(fd, dst, size);
		if (got != (ssize_t)size)
			die("GET reply", got < 0 ? (int)got : -EPROTO);
	}
	t = now_s() - t;
	if (memcmp(src, dst, size))
		die("verify", -EIO);
	argv[0] = "DEL";
	lens[0] = 3;
	if (cmd(fd, 2, argv, lens) || resp_read_status(fd))
		die("DEL", -EIO);
	printf("chunk_bytes %zu\niters %d\nredis_get_Bps %.0f\n", size, iters, (double)size * iters / t);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "ping"))
		return bench_ping(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "get"))
		return bench_get(argv[2], size_arg(argv[3]), (int)size_arg(argv[4]));
	fprintf(stderr, "usage: redis_bench ping ADDR | get ADDR SIZE ITERS\n");
	return 2;
}
