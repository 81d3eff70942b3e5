/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/cancel.h: the cancel token a thread binds (maru_cancel_bind) and the
 * waits of transport.c that end when it fires: a socket readable, a pause,
 * a mutex. Each wait also ends at the call's deadline (monotonic ms).
 */
#ifndef MARU_CANCEL_H
#define MARU_CANCEL_H

#include <pthread.h>
#include <stdint.h>

/* -EINTR if the calling thread's token fired, else 0. */
int cancel_check(void);
/* The descriptor that turns readable when this thread's token fires; -1: none. */
int cancel_fd(void);
/*
 * Wait until fd has events (fd < 0: nothing but the token and the clock):
 * 0, -ETIMEDOUT at deadline_ms, -EINTR when the thread's token fired.
 */
int cancel_poll(int fd, short events, uint64_t deadline_ms);
/* Lock m before deadline_ms: 0, -ETIMEDOUT or -EINTR (then m is not held). */
int cancel_lock(pthread_mutex_t *m, uint64_t deadline_ms);
/* Slice of a condition wait: at most this long between looks at the token. */
#define CANCEL_SLICE_MS	20

#endif
