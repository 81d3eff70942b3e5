/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/hist.h: latency histograms for marud, libmaru and marufs
 * (hist.c), cheap enough for every request: an observation is one bucket
 * search and two relaxed atomic adds on a stripe of the histogram picked
 * by the calling thread, so threads seldom share a cache line. Buckets
 * are fixed, 1-2.5-5 per decade from 1 us to 10 s (22 bounds, then +Inf);
 * written as a Prometheus histogram by hist_put() through prom.h.
 *
 * Runtime switch: MARU_HISTOGRAMS=0 in the environment (read once, at the
 * first use), marud's --no-histograms or marufs's -o histograms=0 turn
 * every observation and its clock reads off; the families stay, empty.
 */
#ifndef MARU_HIST_H
#define MARU_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "prom.h"

#define HIST_BOUNDS	22
#define HIST_STRIPES	4

struct hist_stripe {
	uint64_t n[HIST_BOUNDS + 1];	/* per bucket, not cumulative; last: +Inf */
	uint64_t sum_ns;
} __attribute__((aligned(64)));

struct hist {
	struct hist_stripe s[HIST_STRIPES];
};

/* 1 while histograms are on (the environment's word, or hist_enable()'s). */
int hist_on(void);
/* Turn them on or off in this copy of the code (marud, marufs options). */
void hist_enable(int on);
/* The start of a timed span: mono ns, or 0 while histograms are off. */
uint64_t hist_start(void);
/* The span from t0 (hist_start()) to now; nothing when t0 is 0. */
void hist_done(struct hist *h, uint64_t t0);
/* One observation of ns nanoseconds. */
void hist_observe(struct hist *h, uint64_t ns);
/* The sum of the stripes: counts[HIST_BOUNDS + 1], *sum_ns. */
void hist_read(const struct hist *h, uint64_t *counts, uint64_t *sum_ns);
/* Its samples under name{labels} (the family head written by the caller). */
void hist_put(struct prom *p, const char *name, const char *labels, const struct hist *h);
/* The same, with one label key="val" (val escaped) before le. */
void hist_put_label(struct prom *p, const char *name, const char *key, const char *val,
		    const struct hist *h);
/*
 * Ages rather than latencies (how old an evicted version was): the same
 * struct with its own bounds, 1 ms .. 1 day (HIST_AGE_BOUNDS, then +Inf).
 * Use only these two on such a histogram.
 */
#define HIST_AGE_BOUNDS	12
void hist_observe_age(struct hist *h, uint64_t ns);
void hist_put_age(struct prom *p, const char *name, const char *labels, const struct hist *h);
/* 1 if no observation was made (a family's empty children are skipped). */
int hist_empty(const struct hist *h);

#endif
