/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/maru_bench.c: libmaru side of the side-by-side benchmarks. Each
 * mode measures marufs and its peer in the same process and run, so the
 * printed ratio holds on a noisy shared machine where absolute times do not.
 *
 *   maru_bench putget URI SIZE ITERS     32 MiB put/get vs memcpy (and the
 *                                         first puts, into untouched pool
 *                                         pages, vs memcpy into fresh pages)
 *   maru_bench get URI SIZE ITERS        get only (throughput, bytes/s)
 *   maru_bench lookups URI NAMES THREADS SECONDS [DIR]
 *   maru_bench fill URI NAMES DIR        create NAMES empty published names
 *
 * MARU_DATA=shm|tcp|rdma forces the data path, MARU_SPIN_US=N the client's
 * spin_us (how long a caller polls for its reply before sleeping).
 *
 * Output lines are "key value" so run.sh can compute ratios.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <maru/libmaru.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "maru_bench: %s: %s\n", what, rc < 0 ? maru_strerror(rc) : "failed");
	exit(1);
}

static struct maru_client *connect_uri(const char *uri)
{
	struct maru_client_opts o;
	struct maru_client *c;
	const char *dp = getenv("MARU_DATA");
	int rc;

	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.client_name = "maru_bench";
	if (dp && !strcmp(dp, "tcp"))
		o.data_path = MARU_DATA_TCP;
	else if (dp && !strcmp(dp, "shm"))
		o.data_path = MARU_DATA_SHM;
	else if (dp && !strcmp(dp, "rdma"))
		o.data_path = MARU_DATA_RDMA;
	if (getenv("MARU_SPIN_US"))
		o.spin_us = (unsigned int)strtoul(getenv("MARU_SPIN_US"), NULL, 10);
	rc = maru_client_new(&o, &c);
	if (rc < 0)
		die("connect", rc);
	return c;
}

static void *xmap(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", -errno);
	return p;
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void put_one(struct maru_client *c, const char *name, const void *buf, size_t len)
{
	struct maru_file *f;
	int rc;

	rc = maru_file_create(c, MARU_ROOT_ID, name, 0644, 0, 0, 0, len, &f);
	if (rc < 0)
		die("create", rc);
	if (maru_file_pwrite(f, buf, len, 0) != (ssize_t)len)
		die("pwrite", -EIO);
	rc = maru_file_publish(f);
	if (rc < 0)
		die("publish", rc);
	maru_file_close(f);
}

static void get_one(struct maru_client *c, const char *name, void *buf, size_t len)
{
	struct maru_file *f;
	int rc;

	rc = maru_file_open(c, MARU_ROOT_ID, name, &f);
	if (rc < 0)
		die("open", rc);
	if (maru_file_pread(f, buf, len, 0) != (ssize_t)len)
		die("pread", -EIO);
	maru_file_close(f);
}

/* The bench's names: NAMES of them, written in turn. */
#define NAMES	4
/* Puts until every range the rotation uses has been written once: NAMES,
 * plus one, as each replacement is placed before the old version is freed. */
#define WARMUP	(NAMES + 1)

static const char *bench_name(int i)
{
	static char name[64];

	snprintf(name, sizeof(name), "bench-%d-%d", (int)getpid(), i % NAMES);
	return name;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double memcpy_once(uint8_t *dst, const uint8_t *src, size_t size)
{
	double t = now_s();

	memcpy(dst, src, size);
	__asm__ __volatile__("" : : "r"(dst) : "memory");
	return now_s() - t;
}

/* Seconds for iters puts from src; *faults gets the page faults they took. */
static double put_loop(struct maru_client *c, int first, int iters, const uint8_t *src,
		       size_t size, long *faults)
{
	long f0 = minflt();
	double t = now_s();

	for (int i = first; i < first + iters; i++)
		put_one(c, bench_name(i), src, size);
	t = now_s() - t;
	*faults = minflt() - f0;
	return t;
}

/*
 * iters puts, each right after a memcpy of the same size, so load from
 * other processes falls on both alike; the medians of each go to *t_put and
 * *t_memcpy. *faults: the page faults of the puts.
 */
static void put_alternating(struct maru_client *c, int first, int iters, uint8_t *dst,
			    const uint8_t *src, size_t size, double *t_put, double *t_memcpy,
			    long *faults)
{
	double *tp = calloc((size_t)iters, sizeof(double));
	double *tm = calloc((size_t)iters, sizeof(double));
	long f;

	if (!tp || !tm)
		die("calloc", -ENOMEM);
	*faults = 0;
	for (int i = 0; i < iters; i++) {
		tm[i] = memcpy_once(dst, src, size);
		tp[i] = put_loop(c, first + i, 1, src, size, &f);
		*faults += f;
	}
	*t_put = median(tp, iters);
	*t_memcpy = median(tm, iters);
	free(tp);
	free(tm);
}

/* The peer of a put into pool pages no one touched yet: memcpy into
 * anonymous pages no one touched yet (both fault, allocate and zero). */
static double memcpy_cold(const uint8_t *src, size_t size, int iters, long *faults)
{
	double t = 0;
	long f0 = minflt();

	for (int i = 0; i < iters; i++) {
		uint8_t *dst = mmap(NULL, size, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		double t0;

		if (dst == MAP_FAILED)
			die("mmap", -errno);
		t0 = now_s();
		memcpy(dst, src, size);
		__asm__ __volatile__("" : : "r"(dst) : "memory");
		t += now_s() - t0;
		munmap(dst, size);
	}
	*faults = (minflt() - f0) / iters;
	return t;
}

static double memcpy_warm(uint8_t *dst, const uint8_t *src, size_t size, int iters)
{
	double t = 0;

	for (int i = 0; i < iters; i++)
		t += memcpy_once(dst, src, size);
	return t;
}

static double get_loop(struct maru_client *c, uint8_t *dst, const uint8_t *src, size_t size,
		       int iters)
{
	double t;

	memset(dst, 0, size);
	t = now_s();
	for (int i = 0; i < iters; i++)
		get_one(c, bench_name(i), dst, size);
	t = now_s() - t;
	if (memcmp(src, dst, size))
		die("verify", -EIO);
	return t;
}

static void print_rate(const char *key, size_t size, int n, double secs)
{
	printf("%s %.0f\n", key, (double)size * n / secs);
}

/*
 * put/get through libmaru against memcpy between two anonymous buffers of
 * 4 KiB pages (the pool's pages are 4 KiB too: tmpfs, shmem THP off), both
 * populated before the clock starts. So the put is timed on pool pages this
 * process has written before (the first WARMUP puts), each put right after
 * a memcpy, as medians (put_Bps, put_memcpy_Bps); those first puts, into
 * pool pages nobody touched, are measured against memcpy into fresh
 * anonymous pages, which pay the same faults, allocation and zeroing. The
 * get is the mean of iters gets against the mean of iters memcpys.
 */
static int bench_putget(const char *uri, size_t size, int iters, int get_only)
{
	struct maru_client *c = connect_uri(uri);
	struct maru_pool_info pi;
	uint8_t *src = xmap(size), *dst = xmap(size);
	double t_memcpy, t_put = 0, t_pmemcpy = 1, t_cold = 0, t_mcold = 0, t_get;
	long f_put = 0, f_cold = 0, f_mcold = 0;

	for (size_t k = 0; k < size; k++)
		src[k] = (uint8_t)(k * 131 + 7);
	maru_client_pool_info(c, &pi);
	t_memcpy = memcpy_warm(dst, src, size, iters);
	if (!get_only) {
		t_mcold = memcpy_cold(src, size, WARMUP, &f_mcold);
		t_cold = put_loop(c, 0, WARMUP, src, size, &f_cold);
		put_alternating(c, WARMUP, iters, dst, src, size, &t_put, &t_pmemcpy, &f_put);
	} else {
		put_loop(c, 0, NAMES, src, size, &f_put);
	}
	t_get = get_loop(c, dst, src, size, iters);
	for (int i = 0; i < NAMES; i++)
		maru_unlink(c, MARU_ROOT_ID, bench_name(i));
	printf("data_path %s\n", pi.data_path == MARU_DATA_SHM ? "shm" :
	       pi.data_path == MARU_DATA_RDMA ? "rdma" : "tcp");
	printf("chunk_bytes %zu\niters %d\n", size, iters);
	print_rate("memcpy_Bps", size, iters, t_memcpy);
	if (!get_only) {
		print_rate("put_Bps", size, 1, t_put);
		print_rate("put_memcpy_Bps", size, 1, t_pmemcpy);
		printf("put_minflt %ld\n", f_put / iters);
		print_rate("memcpy_cold_Bps", size, WARMUP, t_mcold);
		printf("memcpy_cold_minflt %ld\n", f_mcold);
		print_rate("put_cold_Bps", size, WARMUP, t_cold);
		printf("put_cold_minflt %ld\n", f_cold / WARMUP);
	}
	print_rate("get_Bps", size, iters, t_get);
	if (!get_only) {
		printf("ratio put/memcpy %.3f\n", t_pmemcpy / t_put);
		printf("ratio put_cold/memcpy_cold %.3f\n", t_mcold / t_cold);
	}
	printf("ratio get/memcpy %.3f\n", t_memcpy / t_get);
	maru_client_free(c);
	return 0;
}

static uint64_t fill_dir(struct maru_client *c, const char *dirname, long names)
{
	struct maru_attr a;
	char name[64];
	int rc;

	rc = maru_mkdir(c, MARU_ROOT_ID, dirname, 0755, 0, 0, &a);
	if (rc == -EEXIST)
		rc = maru_lookup(c, MARU_ROOT_ID, dirname, &a);
	if (rc < 0)
		die("mkdir", rc);
	for (long i = 0; i < names; i++) {
		struct maru_file *f;

		snprintf(name, sizeof(name), "%016lx.bin", i * 0x9e3779b97f4a7c15UL);
		/* a name an earlier run published stays: one request, not three */
		rc = maru_file_create(c, a.ino, name, 0644, 0, 0, MARU_CREATE_EXCL, 0, &f);
		if (rc == -EEXIST)
			continue;
		if (rc < 0)
			die("create", rc);
		rc = maru_file_publish(f);
		if (rc < 0)
			die("publish", rc);
		maru_file_close(f);
	}
	return a.ino;
}

struct lk_arg {
	struct maru_client *c;
	uint64_t dir;
	long names;
	double until;
	long ops;
	unsigned seed;
};

static void *lookup_thread(void *p)
{
	struct lk_arg *a = p;
	struct maru_attr at;
	char name[64];

	while (now_s() < a->until) {
		for (int k = 0; k < 256; k++) {
			long i = rand_r(&a->seed) % a->names;
			int rc;

			snprintf(name, sizeof(name), "%016lx.bin", i * 0x9e3779b97f4a7c15UL);
			rc = maru_lookup(a->c, a->dir, name, &at);
			if (rc < 0)
				die("lookup", rc);
			a->ops++;
		}
	}
	return NULL;
}

static int bench_lookups(const char *uri, long names, int threads, double secs, const char *dirname)
{
	struct maru_client *c = connect_uri(uri);
	struct lk_arg args[64];
	pthread_t th[64];
	long total = 0;
	double t;
	uint64_t dir;

	if (threads > 64)
		threads = 64;
	t = now_s();
	dir = fill_dir(c, dirname, names);
	printf("fill_seconds %.2f\n", now_s() - t);
	t = now_s();
	for (int i = 0; i < threads; i++) {
		args[i] = (struct lk_arg){ .c = c, .dir = dir, .names = names,
					   .until = t + secs, .seed = 1234 + i };
		pthread_create(&th[i], NULL, lookup_thread, &args[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += args[i].ops;
	}
	t = now_s() - t;
	printf("names %ld\nthreads %d\nlookups_per_s %.0f\n", names, threads, total / t);
	maru_client_free(c);
	return 0;
}

static int bench_fill(const char *uri, long names, const char *dirname)
{
	struct maru_client *c = connect_uri(uri);
	double t = now_s();

	fill_dir(c, dirname, names);
	printf("names %ld\nfill_seconds %.2f\n", names, now_s() - t);
	maru_client_free(c);
	return 0;
}

static long num_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		fprintf(stderr, "maru_bench: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static size_t size_arg(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	else if (*end == 'G' || *end == 'g')
		v <<= 30;
	return (size_t)v;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "putget"))
		return bench_putget(argv[2], size_arg(argv[3]), (int)num_arg(argv[4]), 0);
	if (argc >= 5 && !strcmp(argv[1], "get"))
		return bench_putget(argv[2], size_arg(argv[3]), (int)num_arg(argv[4]), 1);
	if (argc >= 6 && !strcmp(argv[1], "lookups"))
		return bench_lookups(argv[2], num_arg(argv[3]), (int)num_arg(argv[4]), (double)num_arg(argv[5]),
				     argc > 6 ? argv[6] : "lk");
	if (argc >= 5 && !strcmp(argv[1], "fill"))
		return bench_fill(argv[2], num_arg(argv[3]), argv[4]);
	fprintf(stderr, "usage: maru_bench putget|get URI SIZE ITERS | lookups URI NAMES THREADS SECONDS [DIR] | fill URI NAMES DIR\n");
	return 2;
}
