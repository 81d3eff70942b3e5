/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/hist.c: the histograms of hist.h. A thread takes a stripe
 * number once (a counter, thread-local), so two threads observing the same
 * histogram add to different cache lines unless more threads than stripes
 * run at once; a reader sums the stripes with relaxed loads, so a scrape
 * may see a count a moment before its sum, never a lost one.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hist.h"

/* Upper bounds in ns: 1, 2.5, 5 per decade, 1 us .. 10 s. */
static const uint64_t bound_ns[HIST_BOUNDS] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
	100000000, 250000000, 500000000, 1000000000, 2500000000ull,
	5000000000ull, 10000000000ull,
};

static const double bound_s[HIST_BOUNDS] = {
	1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
	1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

/* Ages: 1 ms, 10 ms, 100 ms, 1 s, 10 s, 1 min, 5 min, 15 min, 1 h, 6 h, 1 d, 7 d. */
static const uint64_t age_ns[HIST_AGE_BOUNDS] = {
	1000000ull, 10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
	60000000000ull, 300000000000ull, 900000000000ull, 3600000000000ull,
	21600000000000ull, 86400000000000ull, 604800000000000ull,
};

static const double age_s[HIST_AGE_BOUNDS] = {
	0.001, 0.01, 0.1, 1, 10, 60, 300, 900, 3600, 21600, 86400, 604800,
};

_Static_assert(HIST_AGE_BOUNDS <= HIST_BOUNDS, "ages fit in a histogram");

/* -1: not set up yet (init() runs once); 0 off; 1 on */
static atomic_int state = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_uint next_stripe;
static __thread unsigned int my_stripe = ~0u;

/*
 * The span's clock. clock_gettime() costs ~45 ns in this project's VMs,
 * two of them most of an observation; where the kernel itself keeps time
 * with the TSC (its clocksource is "tsc": invariant, synchronized across
 * CPUs) a span is read with rdtsc (~20 ns) and scaled by tsc_mult, ns per
 * tick in 32.32 fixed point, measured once against CLOCK_MONOTONIC.
 */
static int use_tsc;
static uint64_t tsc_mult;

#if defined(__x86_64__)
#include <x86intrin.h>

static int kernel_uses_tsc(void)
{
	char cs[16] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return 0;
	if (!fgets(cs, sizeof(cs), f))
		cs[0] = '\0';
	fclose(f);
	return !strcmp(cs, "tsc\n");
}

/* A (tsc, ns) pair read close together: not split by a preemption. */
static int tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t a, b, n;
	int i;

	for (i = 0; i < 16; i++) {
		a = __rdtsc();
		n = mono_ns();
		b = __rdtsc();
		if (b > a && b - a < 20000) {
			*tsc = a + (b - a) / 2;
			*ns = n;
			return 0;
		}
	}
	return -1;
}

/* Ticks per ns over 200 us: the pairs' ~50 ns of reading error is 0.03%. */
static void tsc_calibrate(void)
{
	uint64_t t0, n0, t1 = 0, n1 = 0;

	if (!kernel_uses_tsc() || tsc_pair(&t0, &n0))
		return;
	do {
		if (tsc_pair(&t1, &n1))
			return;
	} while (n1 - n0 < 200000);
	if (t1 <= t0)
		return;
	tsc_mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
	use_tsc = tsc_mult != 0;
}

static inline uint64_t ticks(void)
{
	return use_tsc ? __rdtsc() : mono_ns();
}

static inline uint64_t ticks_ns(uint64_t t)
{
	return use_tsc ? (uint64_t)(((unsigned __int128)t * tsc_mult) >> 32) : t;
}
#else
static void tsc_calibrate(void)
{
}

static inline uint64_t ticks(void)
{
	return mono_ns();
}

static inline uint64_t ticks_ns(uint64_t t)
{
	return t;
}
#endif

static void init(void)
{
	const char *v = getenv("MARU_HISTOGRAMS");
	int on = !(v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no")));

	if (on)
		tsc_calibrate();
	/* hist_enable() may have said otherwise already: keep its word */
	atomic_compare_exchange_strong(&state, &(int){ -1 }, on);
}

int hist_on(void)
{
	/* acquire: a thread that sees the state sees use_tsc and tsc_mult */
	int s = atomic_load_explicit(&state, memory_order_acquire);

	if (s >= 0)
		return s;
	pthread_once(&once, init);
	return atomic_load(&state);
}

void hist_enable(int on)
{
	if (on)
		pthread_once(&once, init);	/* the clock is set up before it is used */
	atomic_store(&state, on ? 1 : 0);
}

uint64_t hist_start(void)
{
	return hist_on() ? ticks() | 1 : 0;
}

void hist_done(struct hist *h, uint64_t t0)
{
	uint64_t now;

	if (!t0)
		return;
	now = ticks();
	hist_observe(h, now > t0 ? ticks_ns(now - t0) : 0);
}

/* The first of n bounds >= ns; n: +Inf. */
static unsigned int bucket_of(const uint64_t *bound, unsigned int n, uint64_t ns)
{
	unsigned int lo = 0, hi = n;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (bound[mid] < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void add(struct hist *h, unsigned int b, uint64_t ns)
{
	struct hist_stripe *s;

	if (my_stripe == ~0u)
		my_stripe = atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) %
			    HIST_STRIPES;
	s = &h->s[my_stripe];
	__atomic_add_fetch(&s->n[b], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->sum_ns, ns, __ATOMIC_RELAXED);
}

void hist_observe(struct hist *h, uint64_t ns)
{
	add(h, bucket_of(bound_ns, HIST_BOUNDS, ns), ns);
}

/* An age's +Inf bucket is n[HIST_AGE_BOUNDS]: hist_put_age() reads that far. */
void hist_observe_age(struct hist *h, uint64_t ns)
{
	add(h, bucket_of(age_ns, HIST_AGE_BOUNDS, ns), ns);
}

void hist_read(const struct hist *h, uint64_t *counts, uint64_t *sum_ns)
{
	unsigned int i, b;

	memset(counts, 0, sizeof(uint64_t) * (HIST_BOUNDS + 1));
	*sum_ns = 0;
	for (i = 0; i < HIST_STRIPES; i++) {
		for (b = 0; b <= HIST_BOUNDS; b++)
			counts[b] += __atomic_load_n(&h->s[i].n[b], __ATOMIC_RELAXED);
		*sum_ns += __atomic_load_n(&h->s[i].sum_ns, __ATOMIC_RELAXED);
	}
}

int hist_empty(const struct hist *h)
{
	uint64_t counts[HIST_BOUNDS + 1], sum;
	unsigned int b;

	hist_read(h, counts, &sum);
	for (b = 0; b <= HIST_BOUNDS; b++)
		if (counts[b])
			return 0;
	return 1;
}

void hist_put(struct prom *p, const char *name, const char *labels, const struct hist *h)
{
	uint64_t counts[HIST_BOUNDS + 1], sum;

	hist_read(h, counts, &sum);
	prom_histogram(p, name, labels, bound_s, counts, HIST_BOUNDS, (double)sum / 1e9);
}

void hist_put_age(struct prom *p, const char *name, const char *labels, const struct hist *h)
{
	uint64_t counts[HIST_BOUNDS + 1], sum;

	hist_read(h, counts, &sum);
	prom_histogram(p, name, labels, age_s, counts, HIST_AGE_BOUNDS, (double)sum / 1e9);
}

void hist_put_label(struct prom *p, const char *name, const char *key, const char *val,
		    const struct hist *h)
{
	char labels[256];

	if (prom_label_text(labels, sizeof(labels), key, val))
		return;
	hist_put(p, name, labels, h);
}
