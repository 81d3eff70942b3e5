/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/zc_bench.c: the zero-copy benchmarks of tests/bench/run.sh
 * (marufs-design(7) §5, §9). Each mode prints "key value" lines; run.sh puts the
 * modes side by side and prints ratios:
 *
 *   memcpy SIZE ITERS   memcpy between two anonymous buffers (the limit)
 *   read PATH ITERS     open, read() the whole file, close; run it plainly
 *                       (FUSE or tmpfs) or under libmaru-preload.so
 *   readcold PATH ITERS the same with the page cache of the file dropped
 *                       before each read (a chunk another node wrote)
 *   map PATH ITERS      maru_map(), memcpy out, maru_unmap()
 *   mapheld PATH ITERS  memcpy out of one maru_map() held throughout
 *   ttfb PATH ITERS     open, mmap, load the first byte: median latency
 *
 * Every copy is checked against the first one outside the timed region,
 * so a fast wrong answer fails (exit 1) instead of winning.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <maru/libmaru.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "zc_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t parse_n(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (end == s)
		die("bad number");
	switch (*end) {
	case 'K': case 'k': return v << 10;
	case 'M': case 'm': return v << 20;
	case 'G': case 'g': return v << 30;
	}
	return v;
}

/* A prefaulted buffer, so page faults of the destination are not timed. */
static uint8_t *buffer(size_t len)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap buffer");
	memset(p, 1, len);
	return p;
}

static size_t file_size(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		die(path);
	return (size_t)st.st_size;
}

static void check(const uint8_t *a, const uint8_t *b, size_t len, const char *what)
{
	if (memcmp(a, b, len)) {
		fprintf(stderr, "zc_bench: %s: bytes differ between iterations\n", what);
		exit(1);
	}
}

static int mode_memcpy(size_t size, unsigned int iters)
{
	uint8_t *a = buffer(size), *b = buffer(size);
	double t0, t = 0;
	unsigned int i;

	memset(a, 7, size);
	for (i = 0; i < iters; i++) {
		a[i % size] = (uint8_t)i;
		t0 = now_s();
		memcpy(b, a, size);
		t += now_s() - t0;
		check(a, b, size, "memcpy");
	}
	printf("memcpy_Bps %.0f\n", (double)size * iters / t);
	return 0;
}

static void read_once(const char *path, uint8_t *buf, size_t size)
{
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die(path);
	/* one call for the whole chunk, as engines do; loop only if short */
	while (got < size && (n = read(fd, buf + got, size - got)) > 0)
		got += (size_t)n;
	if (got != size)
		die("short read");
	close(fd);
}

static void drop_cache(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		die("drop cache");
	close(fd);
}

static int mode_read(const char *path, unsigned int iters, int cold)
{
	size_t size = file_size(path);
	uint8_t *first = buffer(size), *buf = buffer(size);
	double t0, t = 0;
	unsigned int i;

	read_once(path, first, size);	/* warm: page cache, mapping, leases */
	for (i = 0; i < iters; i++) {
		if (cold)
			drop_cache(path);
		t0 = now_s();
		read_once(path, buf, size);
		t += now_s() - t0;
		check(first, buf, size, "read");
	}
	printf("%s %.0f\n", cold ? "readcold_Bps" : "read_Bps", (double)size * iters / t);
	return 0;
}

/* The mapping made once: only the copy out of pool memory is timed. */
static int mode_map_held(const char *path, unsigned int iters)
{
	size_t size = file_size(path);
	uint8_t *first = buffer(size), *buf = buffer(size);
	struct maru_map *m;
	double t0, t = 0;
	unsigned int i;
	int rc;

	read_once(path, first, size);
	rc = maru_map(AT_FDCWD, path, MARU_MAP_POPULATE, &m);
	if (rc) {
		fprintf(stderr, "zc_bench: maru_map: %s\n", maru_strerror(rc));
		return 1;
	}
	for (i = 0; i < iters; i++) {
		t0 = now_s();
		memcpy(buf, maru_map_addr(m), size);
		t += now_s() - t0;
		check(first, buf, size, "held maru_map");
	}
	rc = maru_map_check(m);
	maru_unmap(m);
	printf("mapheld_Bps %.0f\n", (double)size * iters / t);
	return rc ? 1 : 0;
}

static int mode_map(const char *path, unsigned int iters)
{
	size_t size = file_size(path);
	uint8_t *first = buffer(size), *buf = buffer(size);
	struct maru_map *m;
	double t0, t = 0;
	unsigned int i;
	int rc;

	read_once(path, first, size);
	for (i = 0; i < iters; i++) {
		t0 = now_s();
		rc = maru_map(AT_FDCWD, path, MARU_MAP_POPULATE, &m);
		if (rc) {
			fprintf(stderr, "zc_bench: maru_map: %s\n", maru_strerror(rc));
			return 1;
		}
		memcpy(buf, maru_map_addr(m), size);
		rc = maru_map_check(m);
		maru_unmap(m);
		t += now_s() - t0;
		if (rc) {
			fprintf(stderr, "zc_bench: mapping went stale\n");
			return 1;
		}
		check(first, buf, size, "maru_map");
	}
	printf("map_Bps %.0f\n", (double)size * iters / t);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int mode_ttfb(const char *path, unsigned int iters)
{
	size_t size = file_size(path);
	double *lat = calloc(iters, sizeof(*lat)), t0;
	volatile uint8_t sink;
	uint8_t first = 0;
	unsigned int i;

	if (!lat)
		die("calloc");
	for (i = 0; i <= iters; i++) {
		int fd;
		uint8_t *p;

		t0 = now_s();
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die(path);
		p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			die("mmap");
		sink = p[0];
		if (i)
			lat[i - 1] = now_s() - t0;	/* the first run warms up */
		else
			first = sink;
		if (sink != first) {
			fprintf(stderr, "zc_bench: first byte changed\n");
			return 1;
		}
		munmap(p, size);
		close(fd);
	}
	qsort(lat, iters, sizeof(*lat), cmp_double);
	printf("ttfb_ns %.0f\n", lat[iters / 2] * 1e9);
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "memcpy"))
		return mode_memcpy(parse_n(argv[2]), (unsigned int)parse_n(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "read"))
		return mode_read(argv[2], (unsigned int)parse_n(argv[3]), 0);
	if (argc == 4 && !strcmp(argv[1], "readcold"))
		return mode_read(argv[2], (unsigned int)parse_n(argv[3]), 1);
	if (argc == 4 && !strcmp(argv[1], "map"))
		return mode_map(argv[2], (unsigned int)parse_n(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "mapheld"))
		return mode_map_held(argv[2], (unsigned int)parse_n(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "ttfb"))
		return mode_ttfb(argv[2], (unsigned int)parse_n(argv[3]));
	fprintf(stderr, "usage: zc_bench memcpy SIZE ITERS | read|readcold|map|mapheld|ttfb PATH ITERS\n");
	return 2;
}
