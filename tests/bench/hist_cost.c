// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/bench/hist_cost.c: what one histogram observation costs, the
 * figure the on/off rows of hist_bench.sh blur on a loaded machine:
 * `hist_cost THREADS N` times N hist_start()+hist_done() pairs per thread
 * into one shared histogram (as marud's dispatch does), with histograms on
 * and then off, and prints ns per pair for each.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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

static double timed(long threads)
{
	pthread_t th[64];
	uint64_t t0 = mono_ns();
	long i;

	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, run, NULL))
			exit(1);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	/* per pair, as one thread sees it */
	return (double)(mono_ns() - t0) / (double)per_thread;
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
