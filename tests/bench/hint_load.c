// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/bench/hint_load.c: the two halves of the hints bench
 * (hints_bench.sh), timing what an engine's worker sees.
 *   hint_load load FILE...            read each file whole (after dropping
 *                                      the mount's page cache of it); print
 *                                      the milliseconds it took
 *   hint_load store MNT NAME SIZE PID POOL HINT AHEAD_MS
 *                                      a store into cold reserved bytes,
 *                                      with or without a write hint; MB/s
 *   hint_load cold PID POOL OFF+LEN,...  make pool ranges cold: page them
 *                                      out of marud's mapping (pid PID,
 *                                      process_madvise MADV_PAGEOUT) and
 *                                      drop them from the page cache
 * cold is the bench's stand-in for "another tenant filled the device's
 * cache": it never changes a byte (dirty pages are written back first).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#define BUF (1u << 20)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int load(int n, char **files)
{
	static char buf[BUF];
	double t0 = now_ms();
	ssize_t r;
	int i, fd;

	for (i = 0; i < n; i++) {
		fd = open(files[i], O_RDONLY);
		if (fd < 0) {
			perror(files[i]);
			return 1;
		}
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		while ((r = read(fd, buf, sizeof(buf))) > 0)
			;
		close(fd);
		if (r < 0) {
			perror(files[i]);
			return 1;
		}
	}
	printf("%.3f\n", now_ms() - t0);
	return 0;
}

/* The address marud maps POOL at, from /proc/PID/maps. */
static unsigned long long map_base(const char *pid, const char *pool)
{
	char path[64], line[4096];
	unsigned long long lo = 0, off;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line) > strlen(pool) &&
		    !strcmp(line + strlen(line) - strlen(pool), pool) &&
		    sscanf(line, "%llx-%*x %*s %llx", &lo, &off) == 2 && off == 0)
			break;
		lo = 0;
	}
	if (f)
		fclose(f);
	return lo;
}

static int cold(const char *pid, const char *pool, char *spec)
{
	unsigned long long base = map_base(pid, pool), off, len;
	int pidfd = (int)syscall(SYS_pidfd_open, (int)strtol(pid, NULL, 10), 0);
	int fd = open(pool, O_RDONLY);
	char *save = NULL, *item, *end;
	struct iovec iov;

	if (!base || pidfd < 0 || fd < 0) {
		fprintf(stderr, "cold: no mapping of %s in %s, or %s\n", pool, pid, strerror(errno));
		return 1;
	}
	for (item = strtok_r(spec, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		off = strtoull(item, &end, 0);
		len = strtoull(end + 1, NULL, 0);
		iov.iov_base = (void *)(uintptr_t)(base + off);
		iov.iov_len = len;
		if (syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_PAGEOUT, 0) < 0) {
			perror("process_madvise");
			return 1;
		}
		sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WAIT_BEFORE |
				SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
		posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
	}
	return 0;
}

/*
 * store MNT NAME SIZE PID POOL HINT AHEAD_MS: create MNT/NAME, reserve SIZE
 * (user.maru.size), make its pool bytes cold, send a write hint for it when
 * HINT is 1, wait AHEAD_MS, then time the writes; print MB/s.
 */
static int store(char **a)
{
	static char buf[BUF];
	unsigned long long size = strtoull(a[2], NULL, 0), done = 0;
	char path[4096], ext[65536], line[4200];
	struct timespec ahead = { 0, strtol(a[6], NULL, 10) * 1000000L };
	double t0;
	ssize_t n;
	int fd, hf;

	snprintf(path, sizeof(path), "%s/%s", a[0], a[1]);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0 || fsetxattr(fd, "user.maru.size", a[2], strlen(a[2]), 0) ||
	    (n = fgetxattr(fd, "user.maru.extent", ext, sizeof(ext) - 1)) <= 0) {
		perror(path);
		return 1;
	}
	ext[n] = '\0';
	if (cold(a[3], a[4], ext))
		return 1;
	if (a[5][0] == '1') {
		snprintf(path, sizeof(path), "%s/.maru/hints", a[0]);
		snprintf(line, sizeof(line), "write %s %s\n", a[1], a[1]);
		hf = open(path, O_WRONLY);
		if (hf < 0 || write(hf, line, strlen(line)) < 0)
			perror(path);
		if (hf >= 0)
			close(hf);
	}
	nanosleep(&ahead, NULL);
	memset(buf, 0x5a, sizeof(buf));
	t0 = now_ms();
	for (; done < size; done += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			perror("store");
			return 1;
		}
	if (fsync(fd) || close(fd)) {
		perror("store");
		return 1;
	}
	printf("%.1f\n", (double)size / 1e6 / ((now_ms() - t0) / 1e3));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "load"))
		return load(argc - 2, argv + 2);
	if (argc == 9 && !strcmp(argv[1], "store"))
		return store(argv + 2);
	if (argc == 5 && !strcmp(argv[1], "cold"))
		return cold(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: hint_load load FILE... | store MNT NAME SIZE PID POOL HINT MS | "
		"cold PID POOL SPEC\n");
	return 2;
}
