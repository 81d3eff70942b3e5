/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_stress.c: NPROC processes (two threads
 * sharing one client in each) run NOPS random operations per process
 * through libmaru on one pool: store a chunk of random
 * size (a header names its seed and length, the rest is derived from the
 * seed), read one back and verify every byte, replace, unlink. Together they
 * write more than the pool holds, so marud must evict; a chunk that was
 * evicted may be missing (ENOENT) but never wrong. Afterwards, with every
 * handle closed, statfs must balance (free+used+pending+orphaned ==
 * capacity) with nothing pending or orphaned, and marud must have evicted.
 *
 *   usage: maru_stress URI NPROC NOPS [MAXSIZE]
 */
#include <inttypes.h>
#include <pthread.h>
#include <sys/wait.h>

#include "maru_tool.h"

struct hdr {
	uint64_t magic, seed, len;
};
#define HDR_MAGIC 0x5354524553534d52ull

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void name_of(char *buf, size_t cap, int proc, unsigned int k)
{
	snprintf(buf, cap, "p%d_k%u.bin", proc, k);
}

static int store_one(struct maru_client *c, uint64_t dir, const char *name, uint64_t *s,
		     size_t maxsize)
{
	size_t len = sizeof(struct hdr) + rnd(s) % maxsize;
	uint8_t *buf = malloc(len);
	struct hdr h = { HDR_MAGIC, rnd(s), len };
	int rc;

	CHECK(buf);
	memcpy(buf, &h, sizeof(h));
	tool_fill(buf + sizeof(h), len - sizeof(h), h.seed, 0);
	rc = tool_store(c, dir, name, buf, len);
	free(buf);
	return rc;
}

/* 1 verified, 0 missing (evicted/unlinked); exits on wrong bytes. */
static int verify_one(struct maru_client *c, uint64_t dir, const char *name)
{
	struct hdr h;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	rc = tool_load(c, dir, name, &buf, &len);
	if (rc == -ENOENT)
		return 0;
	OK(rc);
	CHECK(len >= sizeof(h));
	memcpy(&h, buf, sizeof(h));
	if (h.magic != HDR_MAGIC || h.len != len ||
	    !tool_check_fill(buf + sizeof(h), len - sizeof(h), h.seed, 0)) {
		fprintf(stderr, "maru_stress: %s: wrong bytes (len %zu)\n", name, len);
		exit(1);
	}
	free(buf);
	return 1;
}

struct worker {
	struct maru_client *c;
	int id, nops;
	size_t maxsize;
	unsigned int stored, verified;
};

/* One thread: its own key space, the process's shared client. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct maru_client *c = w->c;
	uint64_t s = 0x1234567ull * (uint64_t)(w->id + 1), dir = MARU_ROOT_ID;
	unsigned int keys = 16;
	char name[64];
	int i, rc;

	for (i = 0; i < w->nops; i++) {
		unsigned int op = (unsigned int)(rnd(&s) % 10);

		name_of(name, sizeof(name), w->id, (unsigned int)(rnd(&s) % keys));
		if (op < 5) {
			rc = store_one(c, dir, name, &s, w->maxsize);
			if (rc == -ENOSPC)
				continue;	/* every byte leased by others right now */
			OK(rc);
			w->stored++;
		} else if (op < 9) {
			w->verified += (unsigned int)verify_one(c, dir, name);
		} else {
			rc = maru_unlink(c, dir, name);
			if (rc != -ENOENT)
				OK(rc);
		}
	}
	return NULL;
}

#define THREADS 2

static int child(const char *uri, int proc, int nops, size_t maxsize)
{
	struct maru_client *c = tool_client(uri);
	struct worker w[THREADS];
	pthread_t th[THREADS];
	unsigned int stored = 0, verified = 0;
	int i;

	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .c = c, .id = proc * THREADS + i,
					.nops = nops / THREADS, .maxsize = maxsize };
		CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		stored += w[i].stored;
		verified += w[i].verified;
	}
	maru_client_free(c);
	printf("proc %d: %u stored, %u verified\n", proc, stored, verified);
	fflush(stdout);
	return stored ? 0 : 1;
}

int main(int argc, char **argv)
{
	int nproc, nops, i, st, bad = 0;
	size_t maxsize = 4u << 20;
	struct maru_statfs sf;
	struct maru_client *c;

	if (argc < 4) {
		fprintf(stderr, "usage: maru_stress URI NPROC NOPS [MAXSIZE]\n");
		return 2;
	}
	nproc = (int)strtol(argv[2], NULL, 10);
	nops = (int)strtol(argv[3], NULL, 10);
	if (argc > 4)
		maxsize = strtoull(argv[4], NULL, 0);
	for (i = 0; i < nproc; i++) {
		pid_t p = fork();

		CHECK(p >= 0);
		if (p == 0)
			_exit(child(argv[1], i, nops, maxsize));
	}
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	CHECK(!bad);
	c = tool_client(argv[1]);
	OK(maru_statfs(c, &sf));
	printf("capacity %" PRIu64 " free %" PRIu64 " used %" PRIu64 " pending %" PRIu64
	       " orphaned %" PRIu64 " names %" PRIu64 "\n", sf.capacity, sf.free, sf.used,
	       sf.pending, sf.orphaned, sf.names);
	CHECK(sf.free + sf.used + sf.pending + sf.orphaned == sf.capacity);
	CHECK(sf.pending == 0 && sf.orphaned == 0);
	CHECK(tool_metric(c, "marud_accounting_ok") == 1);
	printf("evictions %" PRIu64 "\n", tool_metric(c, "marud_evictions_total"));
	if (getenv("STRESS_EXPECT_EVICT"))
		CHECK(tool_metric(c, "marud_evictions_total") > 0);
	maru_client_free(c);
	printf("maru_stress: ok\n");
	return 0;
}
