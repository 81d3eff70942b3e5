/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/cancel.c: struct maru_cancel, a token one thread fires to end the
 * libmaru calls of another (marufs fires it on a FUSE INTERRUPT). A token
 * is a flag and an eventfd: firing sets both, so a call blocked in poll()
 * on its socket wakes at once; waits on a mutex or a condition variable
 * look at the flag every CANCEL_SLICE_MS. The token bound to a thread is a
 * thread-local pointer: no lock, no registration per call.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "maru/libmaru.h"
#include "cancel.h"
#include "clock.h"

struct maru_cancel {
	atomic_int fired;
	atomic_uint_fast64_t fire_at;	/* mono ms it counts as fired from; 0: none */
	int efd;		/* readable once fired (EFD_NONBLOCK) */
};

static __thread struct maru_cancel *bound;

int maru_cancel_new(struct maru_cancel **out)
{
	struct maru_cancel *t;

	if (!out)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->efd < 0) {
		int err = -errno;

		free(t);
		return err;
	}
	*out = t;
	return 0;
}

void maru_cancel_free(struct maru_cancel *t)
{
	if (!t)
		return;
	if (bound == t)
		bound = NULL;
	close(t->efd);
	free(t);
}

struct maru_cancel *maru_cancel_bind(struct maru_cancel *t)
{
	struct maru_cancel *old = bound;

	bound = t;
	return old;
}

void maru_cancel_fire(struct maru_cancel *t)
{
	uint64_t one = 1;

	if (t && !atomic_exchange(&t->fired, 1) && write(t->efd, &one, sizeof(one)) < 0) {
		/* the counter is full only if nobody ever read it: still readable */
	}
}

static void drain(struct maru_cancel *t)
{
	uint64_t v;

	if (read(t->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing written (yet); a write racing a reset only
		 * wakes a wait that then finds the flag clear */
	}
}

void maru_cancel_fire_after(struct maru_cancel *t, unsigned int ms)
{
	uint64_t at, cur;

	if (!t)
		return;
	if (!ms) {
		maru_cancel_fire(t);
		return;
	}
	at = mono_ms() + ms;
	cur = atomic_load(&t->fire_at);
	while ((!cur || at < cur) && !atomic_compare_exchange_weak(&t->fire_at, &cur, at))
		;
}

void maru_cancel_reset(struct maru_cancel *t)
{
	if (!t)
		return;
	atomic_store(&t->fire_at, 0);
	if (atomic_exchange(&t->fired, 0))
		drain(t);
}

static int fired(struct maru_cancel *t)
{
	uint64_t at = atomic_load(&t->fire_at);

	return atomic_load(&t->fired) || (at && mono_ms() >= at);
}

int maru_cancel_fired(const struct maru_cancel *t)
{
	return t ? fired((struct maru_cancel *)t) : 0;
}

int cancel_check(void)
{
	return bound && fired(bound) ? -EINTR : 0;
}

/* The wait until deadline_ms, cut at the thread token's fire_at. */
static uint64_t wait_until(uint64_t deadline_ms)
{
	uint64_t at = bound ? atomic_load(&bound->fire_at) : 0;

	return at && at < deadline_ms ? at : deadline_ms;
}

int cancel_fd(void)
{
	return bound ? bound->efd : -1;
}

int cancel_poll(int fd, short events, uint64_t deadline_ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = cancel_fd(), .events = POLLIN } };
	uint64_t now;
	int rc;

	uint64_t until;

	for (;;) {
		if (cancel_check())
			return -EINTR;
		now = mono_ms();
		if (now >= deadline_ms)
			return -ETIMEDOUT;
		until = wait_until(deadline_ms);
		p[0].revents = p[1].revents = 0;
		rc = poll(p, 2, (int)(until - now > 60000 ? 60000 : until - now));
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc > 0 && p[0].revents)
			return 0;
		/* the token's descriptor woke us but the flag is clear: a fire
		 * that raced a reset; empty it and wait on */
		if (rc > 0 && p[1].revents && !cancel_check())
			drain(bound);
	}
}

int cancel_lock(pthread_mutex_t *m, uint64_t deadline_ms)
{
	struct timespec ts;
	uint64_t now, until;
	int rc;

	for (;;) {
		if (cancel_check())
			return -EINTR;
		now = mono_ms();
		if (now >= deadline_ms)
			return pthread_mutex_trylock(m) ? -ETIMEDOUT : 0;
		until = deadline_ms - now < CANCEL_SLICE_MS ? deadline_ms : now + CANCEL_SLICE_MS;
		ns_to_timespec(until * 1000000ull, &ts);
		rc = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
		if (rc == 0)
			return 0;
		if (rc != ETIMEDOUT)
			return -rc;
	}
}
