/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/clock.c: the project's one set of clocks. Wall time (REALTIME)
 * only for timestamps shown to people; every timeout, deadline and condition
 * variable runs on CLOCK_MONOTONIC so a clock step cannot stretch or cut a wait.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "clock.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t now_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t mono_ms(void)
{
	return mono_ns() / 1000000ull;
}

void sleep_ms(uint64_t ms)
{
	struct timespec ts;

	ns_to_timespec(ms * 1000000ull, &ts);
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

void ns_to_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

void deadline_ms(struct timespec *ts, unsigned int ms)
{
	ns_to_timespec(mono_ns() + (uint64_t)ms * 1000000ull, ts);
}

int cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int rc;

	rc = pthread_condattr_init(&ca);
	if (rc)
		return -rc;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return -rc;
}
