/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/clock.h: clocks for marud, marufs and libmaru. now_ns() is wall
 * time for timestamps; mono_ns(), deadline_ms() and cond_init_mono() are for
 * every wait: a condition variable made by cond_init_mono() is waited on with
 * an absolute deadline from deadline_ms().
 */
#ifndef MARU_CLOCK_H
#define MARU_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

uint64_t now_ns(void);		/* CLOCK_REALTIME */
uint64_t mono_ns(void);		/* CLOCK_MONOTONIC */
uint64_t mono_ms(void);		/* CLOCK_MONOTONIC, milliseconds */
void ns_to_timespec(uint64_t ns, struct timespec *ts);
/* *ts = CLOCK_MONOTONIC now + ms, for pthread_cond_timedwait on a mono cond. */
void deadline_ms(struct timespec *ts, unsigned int ms);
/* Sleep ms milliseconds on the monotonic clock, through signals. */
void sleep_ms(uint64_t ms);
/* pthread_cond_init on CLOCK_MONOTONIC; 0 or -errno. */
int cond_init_mono(pthread_cond_t *c);

#endif
