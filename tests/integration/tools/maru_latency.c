/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_latency.c: control calls do not wait behind
 * bulk transfers. One thread reads a 32 MiB chunk over tcp again and again
 * while the main thread times lookups on the same client; the slowest lookup
 * must stay under MAX_MS (default 50; a correctness bound, not a benchmark:
 * a lookup queued behind a 32 MiB transfer takes far longer).
 *
 *   usage: maru_latency URI [SECONDS] [MAX_MS]
 */
#include <pthread.h>
#include <stdatomic.h>

#include "maru_tool.h"

#define BIG (32u << 20)

static struct maru_client *c;
static atomic_int stop;
static atomic_long reads;

static void *reader(void *arg)
{
	uint8_t *buf = malloc(BIG);
	struct maru_file *f;

	CHECK(buf);
	OK(maru_file_open(c, MARU_ROOT_ID, "big.bin", &f));
	while (!atomic_load(&stop)) {
		CHECK(OK(maru_file_pread(f, buf, BIG, 0)) == BIG);
		atomic_fetch_add(&reads, 1);
	}
	CHECK(tool_check_fill(buf, BIG, 5, 0));
	maru_file_close(f);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t secs = argc > 2 ? strtoull(argv[2], NULL, 10) : 3;
	uint64_t max_ms = argc > 3 ? strtoull(argv[3], NULL, 10) : 50;
	uint64_t worst = 0, n = 0, end, t0, dt;
	struct maru_attr a;
	pthread_t th;
	uint8_t *buf;

	if (argc < 2) {
		fprintf(stderr, "usage: maru_latency URI [SECONDS] [MAX_MS]\n");
		return 2;
	}
	c = tool_client_dp(argv[1], MARU_DATA_TCP);
	buf = malloc(BIG);
	CHECK(buf);
	tool_fill(buf, BIG, 5, 0);
	OK(tool_store(c, MARU_ROOT_ID, "big.bin", buf, BIG));
	free(buf);
	CHECK(pthread_create(&th, NULL, reader, NULL) == 0);
	while (atomic_load(&reads) == 0)
		usleep(1000);
	end = tool_mono_ms() + secs * 1000;
	while (tool_mono_ms() < end) {
		t0 = tool_mono_ms();
		OK(maru_lookup(c, MARU_ROOT_ID, "big.bin", &a));
		dt = tool_mono_ms() - t0;
		worst = dt > worst ? dt : worst;
		n++;
		usleep(1000);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("maru_latency: %llu lookups during %ld reads of 32 MiB, worst %llu ms\n",
	       (unsigned long long)n, atomic_load(&reads), (unsigned long long)worst);
	CHECK(atomic_load(&reads) >= 2 && n >= 100);
	CHECK(worst < max_ms);
	maru_client_free(c);
	return 0;
}
