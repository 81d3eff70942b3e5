/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/zc_bench.c: the zero-copy benchmarks of tests/bench/run.sh
 * (marufs-design(7) §5, §9). Each mode prints "key value" lines; run.sh puts the
 * modes side by side and prints ratios:
 *
 *   memcpy SIZE ITERS   memcpy between anonymous buffers (the limit), with
 *                       the same three buffers as the other modes: source,
 *                       destination and the reference copy it is checked
 *                       against (32 MiB each: their sum decides how much
 *                       stays in the last-level cache, so a peer with two
 *                       buffers would be measured with a smaller footprint)
 *   read PATH ITERS     open, read() the whole file, close; run it plainly
 *                       (FUSE or tmpfs) or under libmaru-preload.so. This
 *                       and the next three modes also time their memcpy
 *                       peer in the same process, turn about (run_paired),
 *                       and print peer_memcpy_Bps and ratio_vs_memcpy (of
 *                       the medians; best_ratio_vs_memcpy of the fastest)
 *   readcold PATH ITERS the same with the page cache of the file dropped
 *                       before each read (a chunk another node wrote)
 *   map PATH ITERS      maru_map(), memcpy out, maru_unmap()
 *   mapheld PATH ITERS  memcpy out of one maru_map() held throughout
 *   ttfb PATH ITERS     open, mmap, load the first byte: median latency of
 *                       the whole (ttfb_ns), of the open alone (ttfb_open_ns)
 *                       and of mmap + first byte on the open descriptor
 *                       (ttfb_mmap_ns)
 *
 * Rates are of the median iteration, not of the total, so a preemption on
 * this shared machine moves a rate less. Every copy is checked against the
 * first one outside the timed region, so a fast wrong answer fails (exit 1)
 * instead of winning. Anonymous buffers get the kernel's default pages
 * (no MADV_HUGEPAGE), like the shm pool's; memcpy prints anon_huge_kB, the
 * transparent huge pages its buffers got.
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of n times (sorted in place). */
static double median(double *t, unsigned int n)
{
	qsort(t, n, sizeof(*t), cmp_double);
	return t[n / 2];
}

/* Per-iteration times, ITERS of them. */
static double *times(unsigned int iters)
{
	double *t = calloc(iters ? iters : 1, sizeof(*t));

	if (!t || !iters)
		die("iterations");
	return t;
}

/* AnonHugePages of this process, in kB (-1 if unknown). */
static long anon_huge_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
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
	uint8_t *a = buffer(size), *b = buffer(size), *first = buffer(size);
	double t0, *t = times(iters);
	unsigned int i;

	memset(a, 7, size);
	memcpy(first, a, size);
	for (i = 0; i < iters; i++) {
		t0 = now_s();
		memcpy(b, a, size);
		t[i] = now_s() - t0;
		check(first, b, size, "memcpy");
	}
	printf("memcpy_Bps %.0f\n", (double)size / median(t, iters));
	printf("anon_huge_kB %ld\n", anon_huge_kb());
	free(t);
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

/* What a paired mode times: one way of getting the file's bytes into buf. */
struct subject {
	const char *path;
	size_t size;
	int cold;		/* drop the file's page cache first (untimed) */
	struct maru_map *held;	/* mapheld: made once */
};

static void get_read(struct subject *s, uint8_t *buf)
{
	read_once(s->path, buf, s->size);
}

static void get_held(struct subject *s, uint8_t *buf)
{
	memcpy(buf, maru_map_addr(s->held), s->size);
}

static void get_map(struct subject *s, uint8_t *buf)
{
	struct maru_map *m;
	int rc = maru_map(AT_FDCWD, s->path, MARU_MAP_POPULATE, &m);

	if (rc) {
		fprintf(stderr, "zc_bench: maru_map: %s\n", maru_strerror(rc));
		exit(1);
	}
	memcpy(buf, maru_map_addr(m), s->size);
	rc = maru_map_check(m);
	maru_unmap(m);
	if (rc) {
		fprintf(stderr, "zc_bench: mapping went stale\n");
		exit(1);
	}
}

/*
 * ITERS rounds of the subject and of its peer, a memcpy from an anonymous
 * copy of the file into the same destination, in alternating order: both
 * see the same load and the same cache footprint (source, destination, the
 * reference copy), so their ratio is side by side in the strictest sense.
 */
static int run_paired(struct subject *s, void (*get)(struct subject *, uint8_t *),
		      unsigned int iters, const char *key)
{
	uint8_t *first = buffer(s->size), *buf = buffer(s->size), *src = buffer(s->size);
	double t0, *t = times(iters), *tp = times(iters), mt, mp;
	unsigned int i, k;

	read_once(s->path, first, s->size);	/* warm: page cache, mapping, leases */
	memcpy(src, first, s->size);
	for (i = 0; i < iters; i++) {
		for (k = 0; k < 2; k++) {
			if ((i + k) % 2 == 0) {
				if (s->cold)
					drop_cache(s->path);
				t0 = now_s();
				get(s, buf);
				t[i] = now_s() - t0;
			} else {
				t0 = now_s();
				memcpy(buf, src, s->size);
				tp[i] = now_s() - t0;
			}
			check(first, buf, s->size, key);
		}
	}
	mt = median(t, iters);
	mp = median(tp, iters);
	printf("%s %.0f\n", key, (double)s->size / mt);
	printf("peer_memcpy_Bps %.0f\n", (double)s->size / mp);
	printf("ratio_vs_memcpy %.3f\n", mp / mt);
	/* the fastest of each (sorted by median()): what is left without preemption */
	printf("best_ratio_vs_memcpy %.3f\n", tp[0] / t[0]);
	free(t);
	free(tp);
	return 0;
}

static int mode_read(const char *path, unsigned int iters, int cold)
{
	struct subject s = { .path = path, .size = file_size(path), .cold = cold };

	return run_paired(&s, get_read, iters, cold ? "readcold_Bps" : "read_Bps");
}

/* The mapping made once: only the copy out of pool memory is timed. */
static int mode_map_held(const char *path, unsigned int iters)
{
	struct subject s = { .path = path, .size = file_size(path) };
	int rc;

	rc = maru_map(AT_FDCWD, path, MARU_MAP_POPULATE, &s.held);
	if (rc) {
		fprintf(stderr, "zc_bench: maru_map: %s\n", maru_strerror(rc));
		return 1;
	}
	rc = run_paired(&s, get_held, iters, "mapheld_Bps");
	if (maru_map_check(s.held))
		rc = 1;
	maru_unmap(s.held);
	return rc;
}

static int mode_map(const char *path, unsigned int iters)
{
	struct subject s = { .path = path, .size = file_size(path) };

	return run_paired(&s, get_map, iters, "map_Bps");
}

/* One open, mmap, first load: the times to the open and to the byte. */
static uint8_t ttfb_once(const char *path, size_t size, double *t_open, double *t_all)
{
	double t0 = now_s();
	volatile uint8_t *p;
	uint8_t byte;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	*t_open = now_s() - t0;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	byte = p[0];
	*t_all = now_s() - t0;
	munmap((void *)p, size);
	close(fd);
	return byte;
}

static int mode_ttfb(const char *path, unsigned int iters)
{
	size_t size = file_size(path);
	double *all = times(iters), *op = times(iters), *mm = times(iters), t_open, t_all;
	uint8_t first;
	unsigned int i;

	first = ttfb_once(path, size, &t_open, &t_all);	/* the first run warms up */
	for (i = 0; i < iters; i++) {
		if (ttfb_once(path, size, &op[i], &all[i]) != first) {
			fprintf(stderr, "zc_bench: first byte changed\n");
			return 1;
		}
		mm[i] = all[i] - op[i];
	}
	printf("ttfb_ns %.0f\n", median(all, iters) * 1e9);
	printf("ttfb_open_ns %.0f\n", median(op, iters) * 1e9);
	printf("ttfb_mmap_ns %.0f\n", median(mm, iters) * 1e9);
	free(all);
	free(op);
	free(mm);
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
