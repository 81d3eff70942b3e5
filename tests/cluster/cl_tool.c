/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/cluster/cl_tool.c: a client of a cluster written with libmaru's
 * public calls only, for the cluster cases: it reads the membership with
 * maru_cluster_open(), finds each name's owner with maru_cluster_owner()
 * and talks to that pool with an ordinary maru_client (data=tcp, the key).
 *
 *	cl_tool wait CLUSTER N			until N pools are seen (20 s)
 *	cl_tool pools CLUSTER			one line a pool
 *	cl_tool put CLUSTER KEY N PREFIX	N files PREFIX-i.bin, 1 KiB each,
 *						each to its owner; per-pool counts
 *	cl_tool check CLUSTER KEY N PREFIX	each found at its owner, else at
 *						the previous owner; bytes checked
 *	cl_tool moved CLUSTER N PREFIX		names whose owner changed with the
 *						last membership change
 *	cl_tool count URI KEY			names in the root of one pool
 *	cl_tool owner CLUSTER PATH...		"PATH OWNER-URI" for each path
 *
 * Lines are "word value ..." for the shell to read; the exit status is 0
 * unless a call failed in a way the command does not count. etcd's TLS
 * and authentication come from CL_ETCD_CA, CL_ETCD_CERT, CL_ETCD_KEY,
 * CL_ETCD_USER and CL_ETCD_PASSWORD when set.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <maru/libmaru.h>

#define MAXP	16
#define FILE_BYTES 1024

static struct maru_cluster_pool pools[MAXP];
static struct maru_client *clients[MAXP];
static unsigned long counts[MAXP];
static int npools;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct maru_cluster *open_cluster(const char *uri)
{
	struct maru_cluster_opts o;
	struct maru_cluster *c;
	int rc;

	maru_cluster_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.refresh_ms = 200;
	o.etcd_ca = getenv("CL_ETCD_CA");
	o.etcd_cert = getenv("CL_ETCD_CERT");
	o.etcd_key = getenv("CL_ETCD_KEY");
	o.etcd_user = getenv("CL_ETCD_USER");
	o.etcd_password = getenv("CL_ETCD_PASSWORD");
	rc = maru_cluster_open(&o, &c);
	if (rc) {
		fprintf(stderr, "cl_tool: %s: %s\n", uri, maru_strerror(rc));
		exit(2);
	}
	return c;
}

/* the client of pool p (by UUID), connected on first use */
static struct maru_client *client_of(const struct maru_cluster_pool *p, const char *key)
{
	struct maru_client_opts o;
	int i, rc;

	for (i = 0; i < npools; i++)
		if (!strcmp(pools[i].uuid, p->uuid))
			break;
	if (i == npools) {
		if (npools == MAXP)
			exit(3);
		pools[npools++] = *p;
	}
	if (!clients[i]) {
		maru_client_opts_init(&o, sizeof(o));
		o.uri = p->uri;
		o.key_file = key;
		o.data_path = MARU_DATA_TCP;
		o.timeout_ms = 2000;
		o.client_name = "cl_tool";
		rc = maru_client_new(&o, &clients[i]);
		if (rc) {
			fprintf(stderr, "cl_tool: pool %s at %s: %s\n", p->uuid, p->uri,
				maru_strerror(rc));
			clients[i] = NULL;
			return NULL;
		}
	}
	return clients[i];
}

static int index_of(const struct maru_cluster_pool *p)
{
	int i;

	for (i = 0; i < npools; i++)
		if (!strcmp(pools[i].uuid, p->uuid))
			return i;
	return -1;
}

static void fill(char *buf, unsigned long k)
{
	size_t i;

	for (i = 0; i < FILE_BYTES; i++)
		buf[i] = (char)((k * 131 + i * 7) & 0xff);
}

static int put_one(struct maru_client *m, const char *name, unsigned long k)
{
	struct maru_file *f;
	char buf[FILE_BYTES];
	int rc;

	fill(buf, k);
	rc = maru_file_create(m, MARU_ROOT_ID, name, 0644, 0, 0, 0, FILE_BYTES, &f);
	if (rc)
		return rc;
	if (maru_file_pwrite(f, buf, FILE_BYTES, 0) != FILE_BYTES) {
		maru_file_close(f);
		return -EIO;
	}
	rc = maru_file_publish(f);
	maru_file_close(f);
	return rc;
}

/* 0 found and right, -ENOENT absent, else the error */
static int get_one(struct maru_client *m, const char *name, unsigned long k)
{
	struct maru_file *f;
	char buf[FILE_BYTES], want[FILE_BYTES];
	ssize_t n;
	int rc;

	if (!m)
		return -EHOSTUNREACH;
	rc = maru_file_open(m, MARU_ROOT_ID, name, &f);
	if (rc)
		return rc;
	n = maru_file_pread(f, buf, sizeof(buf), 0);
	maru_file_close(f);
	fill(want, k);
	if (n != FILE_BYTES || memcmp(buf, want, FILE_BYTES)) {
		fprintf(stderr, "cl_tool: %s: wrong bytes (%zd)\n", name, n);
		return -EIO;
	}
	return 0;
}

static int cmd_put(struct maru_cluster *c, const char *key, unsigned long n, const char *prefix)
{
	struct maru_cluster_pool owner;
	struct maru_client *m;
	char name[256];
	unsigned long k;
	int i, rc;

	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%s-%lu.bin", prefix, k);
		rc = maru_cluster_owner(c, name, &owner, NULL);
		if (rc || !(m = client_of(&owner, key)) || (rc = put_one(m, name, k))) {
			fprintf(stderr, "cl_tool: put %s: %s\n", name, maru_strerror(rc ? rc : -EIO));
			return 1;
		}
		counts[index_of(&owner)]++;
	}
	for (i = 0; i < npools; i++)
		printf("pool %s %lu\n", pools[i].uuid, counts[i]);
	return 0;
}

static int cmd_check(struct maru_cluster *c, const char *key, unsigned long n, const char *prefix)
{
	struct maru_cluster_pool owner, prev;
	unsigned long at_owner = 0, at_prev = 0, missing = 0, failed = 0, k;
	uint64_t t, worst = 0;
	char name[256];
	int rc;

	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%s-%lu.bin", prefix, k);
		if (maru_cluster_owner(c, name, &owner, &prev))
			return 1;
		t = now_ms();
		rc = get_one(client_of(&owner, key), name, k);
		if (!rc) {
			at_owner++;
		} else if (strcmp(owner.uuid, prev.uuid) &&
			   !(rc = get_one(client_of(&prev, key), name, k))) {
			at_prev++;
		} else if (rc == -ENOENT || rc == -EHOSTUNREACH || rc == -ECONNREFUSED ||
			   rc == -ETIMEDOUT || rc == -EIO || rc == -ESTALE) {
			missing++;
		} else {
			fprintf(stderr, "cl_tool: check %s: %s\n", name, maru_strerror(rc));
			failed++;
		}
		t = now_ms() - t;
		if (t > worst)
			worst = t;
	}
	printf("owner %lu previous %lu missing %lu failed %lu worst_ms %llu\n", at_owner, at_prev,
	       missing, failed, (unsigned long long)worst);
	return failed ? 1 : 0;
}

static int cmd_moved(struct maru_cluster *c, unsigned long n, const char *prefix)
{
	struct maru_cluster_pool owner, prev;
	unsigned long moved = 0, k;
	char name[256];

	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%s-%lu.bin", prefix, k);
		if (maru_cluster_owner(c, name, &owner, &prev))
			return 1;
		moved += strcmp(owner.uuid, prev.uuid) != 0;
	}
	printf("moved %lu of %lu\n", moved, n);
	return 0;
}

static int count_cb(void *arg, const struct maru_dirent *de)
{
	(void)de;
	(*(unsigned long *)arg)++;
	return 0;
}

static int cmd_count(const char *uri, const char *key)
{
	struct maru_cluster_pool p;
	struct maru_client *m;
	unsigned long n = 0;
	int rc;

	memset(&p, 0, sizeof(p));
	snprintf(p.uuid, sizeof(p.uuid), "x");
	snprintf(p.uri, sizeof(p.uri), "%s", uri);
	m = client_of(&p, key);
	if (!m)
		return 1;
	rc = maru_readdir(m, MARU_ROOT_ID, 0, count_cb, &n);
	if (rc) {
		fprintf(stderr, "cl_tool: readdir %s: %s\n", uri, maru_strerror(rc));
		return 1;
	}
	printf("names %lu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	struct maru_cluster_pool list[MAXP];
	struct maru_cluster *c;
	int rc = 0, i, n;
	uint64_t until;

	if (argc >= 4 && !strcmp(argv[1], "count"))
		return cmd_count(argv[2], argv[3]);
	if (argc < 3) {
		fprintf(stderr, "usage: see tests/cluster/cl_tool.c\n");
		return 2;
	}
	c = open_cluster(argv[2]);
	if (!strcmp(argv[1], "wait") && argc == 4) {
		until = now_ms() + 20000;
		while ((n = maru_cluster_pools(c, NULL, 0)) != atoi(argv[3]) && now_ms() < until)
			usleep(50000);
		printf("pools %d\n", n);
		rc = n != atoi(argv[3]);
	} else if (!strcmp(argv[1], "pools")) {
		n = maru_cluster_pools(c, list, MAXP);
		for (i = 0; i < n && i < MAXP; i++)
			printf("%s %s %llu %u %s\n", list[i].uuid, list[i].uri,
			       (unsigned long long)list[i].capacity, list[i].weight,
			       list[i].draining ? "draining" : "active");
	} else if (!strcmp(argv[1], "put") && argc == 6) {
		rc = cmd_put(c, argv[3], strtoul(argv[4], NULL, 10), argv[5]);
	} else if (!strcmp(argv[1], "check") && argc == 6) {
		rc = cmd_check(c, argv[3], strtoul(argv[4], NULL, 10), argv[5]);
	} else if (!strcmp(argv[1], "owner") && argc >= 4) {
		for (i = 3; i < argc && !rc; i++) {
			rc = maru_cluster_owner(c, argv[i], &list[0], NULL) ? 1 : 0;
			if (!rc)
				printf("%s %s\n", argv[i], list[0].uri);
		}
	} else if (!strcmp(argv[1], "moved") && argc == 5) {
		rc = cmd_moved(c, strtoul(argv[3], NULL, 10), argv[4]);
	} else {
		fprintf(stderr, "cl_tool: bad command\n");
		rc = 2;
	}
	for (i = 0; i < npools; i++)
		if (clients[i])
			maru_client_free(clients[i]);
	maru_cluster_close(c);
	return rc;
}
