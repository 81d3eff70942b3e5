/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/fs_bench.c: the POSIX workload of the filesystem benchmarks,
 * run unchanged on a marufs mount, on tmpfs and on a FUSE passthrough over
 * tmpfs, so run.sh can print marufs/peer ratios from one run. Every byte read
 * is checked, so a fast wrong answer cannot pass for a fast right one.
 *
 *   fs_bench big DIR SIZE ITERS     32 MiB chunks: write+close, cold read, warm read
 *   fs_bench small DIR COUNT        4 KiB files: create, open+read, stat, missing
 *   fs_bench create DIR COUNT       only create+write+close COUNT 4 KiB files, kept
 *   fs_bench readback DIR COUNT     only open+read+close of the files create made
 *   fs_bench floor DIR COUNT        the FUSE floor: COUNT getxattr of a name marufs
 *                                   answers itself, one round trip each
 *   fs_bench overwrite DIR SIZE ITERS  ITERS files written once (first write),
 *                                   then twice overwritten in place (no O_TRUNC),
 *                                   then twice rewritten whole (O_TRUNC)
 *
 * overwrite takes this VM's skew out of the write rows: a first write into
 * tmpfs allocates pages the host may have reclaimed under free page reporting
 * (each one faulted in again on the host), an overwrite in place stores into
 * pages the file already holds, a rewrite with O_TRUNC frees them and
 * allocates again. On marufs both make a new version published at the
 * close: in place starts as a copy of the old version (copy-on-write), a
 * truncating one starts empty, in pool pages marud handed out before.
 *
 * The last two let run.sh count the requests one small-file operation costs
 * (the stats of the mount before and after, divided by COUNT).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fs_bench: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static long num_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || v < 0) {
		fprintf(stderr, "fs_bench: bad number '%s'\n", s);
		exit(2);
	}
	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return v;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t done = 0;

	if (fd < 0)
		die("open", path);
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n <= 0)
			die("write", path);
		done += (size_t)n;
	}
	if (close(fd) < 0)
		die("close", path);
}

static void read_file(const char *path, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	size_t done = 0;

	if (fd < 0)
		die("open", path);
	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			die("read", path);
		done += (size_t)n;
	}
	close(fd);
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	sync();
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			fprintf(stderr, "fs_bench: drop_caches failed\n");
		close(fd);
	}
}

static int bench_big(const char *dir, size_t size, int iters)
{
	uint8_t *src = malloc(size), *dst = malloc(size);
	char path[4096];
	double t, tw, tc, tr;

	if (!src || !dst)
		die("malloc", "");
	for (size_t k = 0; k < size; k++)
		src[k] = (uint8_t)(k * 31 + 3);
	t = now_s();
	for (int i = 0; i < iters; i++) {
		snprintf(path, sizeof(path), "%s/big-%d.bin", dir, i);
		write_file(path, src, size);
	}
	tw = now_s() - t;
	drop_caches();
	t = now_s();
	for (int i = 0; i < iters; i++) {
		snprintf(path, sizeof(path), "%s/big-%d.bin", dir, i);
		read_file(path, dst, size);
	}
	tc = now_s() - t;
	if (memcmp(src, dst, size))
		die("verify", dir);
	t = now_s();
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < iters; i++) {
			snprintf(path, sizeof(path), "%s/big-%d.bin", dir, i);
			read_file(path, dst, size);
		}
	tr = (now_s() - t) / 3;
	if (memcmp(src, dst, size))
		die("verify", dir);
	for (int i = 0; i < iters; i++) {
		snprintf(path, sizeof(path), "%s/big-%d.bin", dir, i);
		unlink(path);
	}
	printf("big_write_Bps %.0f\n", (double)size * iters / tw);
	printf("big_read_cold_Bps %.0f\n", (double)size * iters / tc);
	printf("big_read_warm_Bps %.0f\n", (double)size * iters / tr);
	free(src);
	free(dst);
	return 0;
}

static void small_create(const char *dir, int count, const char *buf)
{
	char path[4096];
	double t = now_s();

	for (int i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/s%06d.bin", dir, i);
		write_file(path, buf, 4096);
	}
	printf("small_create_ops %.0f\n", count / (now_s() - t));
}

static void small_read(const char *dir, int count, const char *buf)
{
	char rbuf[4096], path[4096];
	double t = now_s();

	for (int i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/s%06d.bin", dir, i);
		read_file(path, rbuf, sizeof(rbuf));
		if (memcmp(buf, rbuf, sizeof(rbuf)))
			die("verify", path);
	}
	printf("small_read_ops %.0f\n", count / (now_s() - t));
}

static int bench_small(const char *dir, int count)
{
	char buf[4096], path[4096];
	struct stat st;
	double t;

	memset(buf, 'k', sizeof(buf));
	small_create(dir, count, buf);
	small_read(dir, count, buf);
	t = now_s();
	for (int r = 0; r < 5; r++)
		for (int i = 0; i < count; i++) {
			snprintf(path, sizeof(path), "%s/s%06d.bin", dir, i);
			if (stat(path, &st) < 0 || st.st_size != 4096)
				die("stat", path);
		}
	printf("stat_ops %.0f\n", 5.0 * count / (now_s() - t));
	t = now_s();
	for (int r = 0; r < 5; r++)
		for (int i = 0; i < count; i++) {
			snprintf(path, sizeof(path), "%s/missing%06d.bin", dir, i % 64);
			if (access(path, F_OK) == 0 || errno != ENOENT)
				die("access", path);
		}
	printf("missing_ops %.0f\n", 5.0 * count / (now_s() - t));
	for (int i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/s%06d.bin", dir, i);
		unlink(path);
	}
	return 0;
}

/*
 * One FUSE round trip and nothing else: the kernel caches no xattrs, and
 * marufs answers security.capability (ENODATA) without asking marud. The
 * rate the other small-file rows can at best approach per request.
 */
static int bench_floor(const char *dir, int count)
{
	char path[4096], buf[64];
	double t;

	snprintf(path, sizeof(path), "%s/floor.bin", dir);
	write_file(path, "f", 1);
	t = now_s();
	for (int i = 0; i < count; i++)
		if (getxattr(path, "security.capability", buf, sizeof(buf)) >= 0 ||
		    (errno != ENODATA && errno != ENOTSUP))
			die("getxattr", path);
	printf("floor_ops %.0f\n", count / (now_s() - t));
	unlink(path);
	return 0;
}

/* Open an existing file and write over it from offset 0, keeping its pages. */
static void overwrite_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY);
	size_t done = 0;

	if (fd < 0)
		die("open", path);
	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)done);

		if (n <= 0)
			die("pwrite", path);
		done += (size_t)n;
	}
	if (close(fd) < 0)
		die("close", path);
}

/* One timed pass over the ITERS files: in place, or whole with O_TRUNC. */
static double write_pass(const char *dir, const uint8_t *src, size_t size,
			 int iters, int trunc)
{
	char path[4096];
	double t = now_s();

	for (int i = 0; i < iters; i++) {
		snprintf(path, sizeof(path), "%s/ow-%d.bin", dir, i);
		if (trunc)
			write_file(path, src, size);
		else
			overwrite_file(path, src, size);
	}
	return now_s() - t;
}

static void fill(uint8_t *p, size_t size, int pass)
{
	for (size_t k = 0; k < size; k++)
		p[k] = (uint8_t)(k * 31 + 3 + pass * 7);
}

static int bench_overwrite(const char *dir, size_t size, int iters)
{
	uint8_t *src = malloc(size), *dst = malloc(size);
	char path[4096];
	double t, tf, to = 0, tt = 0;

	if (!src || !dst)
		die("malloc", "");
	fill(src, size, 0);
	t = now_s();
	for (int i = 0; i < iters; i++) {
		snprintf(path, sizeof(path), "%s/ow-%d.bin", dir, i);
		write_file(path, src, size);
	}
	tf = now_s() - t;
	for (int pass = 1; pass <= 4; pass++) {
		fill(src, size, pass);
		if (pass <= 2)
			to += write_pass(dir, src, size, iters, 0);
		else
			tt += write_pass(dir, src, size, iters, 1);
	}
	for (int i = 0; i < iters; i++) {
		snprintf(path, sizeof(path), "%s/ow-%d.bin", dir, i);
		read_file(path, dst, size);
		if (memcmp(src, dst, size))
			die("verify", path);
		unlink(path);
	}
	printf("big_first_write_Bps %.0f\n", (double)size * iters / tf);
	printf("big_overwrite_Bps %.0f\n", 2.0 * size * iters / to);
	printf("big_rewrite_trunc_Bps %.0f\n", 2.0 * size * iters / tt);
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "big"))
		return bench_big(argv[2], (size_t)num_arg(argv[3]), (int)num_arg(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "overwrite"))
		return bench_overwrite(argv[2], (size_t)num_arg(argv[3]), (int)num_arg(argv[4]));
	char buf[4096];

	memset(buf, 'k', sizeof(buf));
	if (argc == 4 && !strcmp(argv[1], "small"))
		return bench_small(argv[2], (int)num_arg(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "create")) {
		small_create(argv[2], (int)num_arg(argv[3]), buf);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "readback")) {
		small_read(argv[2], (int)num_arg(argv[3]), buf);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "floor"))
		return bench_floor(argv[2], (int)num_arg(argv[3]));
	fprintf(stderr, "usage: fs_bench big|overwrite DIR SIZE ITERS | small|create|readback|floor DIR COUNT\n");
	return 2;
}
