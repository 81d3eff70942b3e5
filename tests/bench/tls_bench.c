// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/bench/tls_bench.c: libmaru puts and gets over TLS 1.3 against the
 * same over plain TCP, in one process and one run (tls_bench.sh starts the
 * two marud, alike but for --tls-cert).
 *
 *   tls_bench TLS_URI CA_FILE PLAIN_URI SIZE ITERS
 *
 * Both clients use data=tcp. Each iteration puts then gets SIZE bytes on
 * the TLS client and right after on the plain one, so that the load of a
 * shared machine falls on both alike; every get is checked byte for byte.
 * Prints "key value" lines: the medians in bytes/s (tls_put_Bps,
 * plain_put_Bps, tls_get_Bps, plain_get_Bps), whether the kernel carried
 * the TLS records (ktls 0|1, maru_client_tls()) and the session's
 * parameters (tls_session ...).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	fprintf(stderr, "tls_bench: %s: %s\n", what, rc < 0 ? maru_strerror(rc) : "failed");
	exit(1);
}

static struct maru_client *client(const char *uri, const char *ca)
{
	struct maru_client_opts o;
	struct maru_client *c;
	int rc;

	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.client_name = ca ? "tls_bench tls" : "tls_bench plain";
	o.data_path = MARU_DATA_TCP;
	o.tls_ca = ca;
	rc = maru_client_new(&o, &c);
	if (rc < 0)
		die(uri, rc);
	return c;
}

static double put(struct maru_client *c, const char *name, const void *buf, size_t len)
{
	double t = now_s();
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
	return now_s() - t;
}

static double get(struct maru_client *c, const char *name, void *buf, const void *want,
		  size_t len)
{
	double t = now_s();
	struct maru_file *f;
	int rc;

	rc = maru_file_open(c, MARU_ROOT_ID, name, &f);
	if (rc < 0)
		die("open", rc);
	if (maru_file_pread(f, buf, len, 0) != (ssize_t)len)
		die("pread", -EIO);
	maru_file_close(f);
	t = now_s() - t;
	if (memcmp(buf, want, len))
		die("get: the bytes differ from the put", 0);
	return t;
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

int main(int argc, char **argv)
{
	struct maru_client *ct, *cp;
	double *t[4];
	char name[64], desc[128];
	uint8_t *src, *dst;
	size_t size;
	int iters, ktls = 0, rc;

	if (argc != 6) {
		fprintf(stderr, "usage: tls_bench TLS_URI CA_FILE PLAIN_URI SIZE_MIB ITERS\n");
		return 2;
	}
	size = strtoul(argv[4], NULL, 10) << 20;
	iters = (int)strtol(argv[5], NULL, 10);
	if (!size || iters < 1)
		return 2;
	src = malloc(size);
	dst = malloc(size);
	for (int i = 0; i < 4; i++)
		t[i] = calloc((size_t)iters, sizeof(double));
	if (!src || !dst || !t[0] || !t[1] || !t[2] || !t[3])
		die("malloc", -ENOMEM);
	for (size_t i = 0; i < size; i++)
		src[i] = (uint8_t)(i * 2654435761u >> 13);
	ct = client(argv[1], argv[2]);
	cp = client(argv[3], NULL);
	/* one warm-up round each: the first puts touch fresh pool pages */
	for (int i = -1; i < iters; i++) {
		snprintf(name, sizeof(name), "tls-bench-%d-%d", (int)getpid(), (i + 2) % 2);
		double tp = put(ct, name, src, size), tg = get(ct, name, dst, src, size);
		double pp = put(cp, name, src, size), pg = get(cp, name, dst, src, size);

		if (i < 0)
			continue;
		t[0][i] = tp;
		t[1][i] = pp;
		t[2][i] = tg;
		t[3][i] = pg;
	}
	rc = maru_client_tls(ct, desc, sizeof(desc), &ktls);
	if (rc < 0)
		die("maru_client_tls", rc);
	if (maru_client_tls(cp, NULL, 0, NULL) != -ENOTCONN)
		die("the plain client says it uses TLS", 0);
	printf("tls_put_Bps %.0f\n", size / median(t[0], iters));
	printf("plain_put_Bps %.0f\n", size / median(t[1], iters));
	printf("tls_get_Bps %.0f\n", size / median(t[2], iters));
	printf("plain_get_Bps %.0f\n", size / median(t[3], iters));
	printf("ktls %d\n", ktls);
	printf("tls_session %s\n", desc);
	maru_client_free(ct);
	maru_client_free(cp);
	return 0;
}
