// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/bench/hist_cost.c: what one histogram observation costs, the
 * figure the on/off rows of hist_bench.sh blur on a loaded machine:
 * `hist_cost THREADS N` times N hist_start()+hist_done() pairs per thread
 * into one shared histogram (as marud's dispatch does), with histograms on
 * and then off, and prints the CPU ns per pair for each: the process's CPU
 * time (as hist_bench.sh's CPU per op is), the median of 5 repetitions
 * (as its rows are medians).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "hist.h"

static struct hist h __attribute__((aligned(64)));
static long per_thread;

static void *run(void *arg)
{
	long i;

	for (i = 0; i < per_thread; i++)
		hist_done(&h, hist_start());
	return NULL;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double timed_once(long threads)
{
	pthread_t th[64];
	uint64_t t0 = cpu_ns();
	long i;

	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, run, NULL))
			exit(1);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	return (double)(cpu_ns() - t0) / (double)(per_thread * threads);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double timed(long threads)
{
	double t[5];
	int r;

	for (r = 0; r < 5; r++)
		t[r] = timed_once(threads);
	qsort(t, 5, sizeof(t[0]), cmp);
	return t[2];
}

int main(int argc, char **argv)
{
	long threads = argc == 3 ? strtol(argv[1], NULL, 10) : 0;
	double on, off;

	per_thread = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
	if (threads < 1 || threads > 64 || per_thread < 1) {
		fprintf(stderr, "usage: hist_cost THREADS N\n");
		return 2;
	}
	hist_enable(1);
	on = timed(threads);
	hist_enable(0);
	off = timed(threads);
	printf("threads %ld\nobserve_ns %.1f\noff_ns %.1f\n", threads, on, off);
	return 0;
}
