/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cancel_test.c: lib/cancel.c, struct maru_cancel and the
 * waits transport.c makes through it. A token is not fired until fired,
 * reset clears it (and its descriptor's readiness), fire_after fires at
 * its time (the earliest of several), a bound token is this thread's only
 * and free unbinds it. cancel_poll returns 0 when the socket is ready,
 * -ETIMEDOUT at the deadline and -EINTR at once when the token fires from
 * another thread or its time comes, and a fire that raced a reset does
 * not end it early; cancel_lock takes a free mutex, gives up at the
 * deadline or within a slice of the token firing, never holding the mutex
 * then. Real: eventfds, a pipe, threads, the monotonic clock; nothing is
 * faked.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "maru/libmaru.h"
#include "cancel.h"
#include "clock.h"

static void sleep_ms_(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void test_fire_reset(void **state)
{
	struct maru_cancel *t;

	(void)state;
	assert_int_equal(maru_cancel_new(NULL), -EINVAL);
	assert_int_equal(maru_cancel_new(&t), 0);
	assert_int_equal(maru_cancel_fired(t), 0);
	assert_int_equal(maru_cancel_fired(NULL), 0);
	maru_cancel_fire(t);
	assert_int_equal(maru_cancel_fired(t), 1);
	maru_cancel_fire(t);	/* twice is once */
	assert_int_equal(maru_cancel_fired(t), 1);
	maru_cancel_reset(t);
	assert_int_equal(maru_cancel_fired(t), 0);
	/* NULL everywhere is nothing */
	maru_cancel_fire(NULL);
	maru_cancel_fire_after(NULL, 10);
	maru_cancel_reset(NULL);
	maru_cancel_free(NULL);
	maru_cancel_free(t);
}

/* Bound to this thread only; its descriptor turns readable when fired. */
static void *other_thread(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)(cancel_check() == 0 && cancel_fd() == -1);
}

static void test_bind(void **state)
{
	struct maru_cancel *t, *u;
	pthread_t th;
	void *ok;
	int fd;

	(void)state;
	assert_int_equal(maru_cancel_new(&t), 0);
	assert_int_equal(maru_cancel_new(&u), 0);
	assert_int_equal(cancel_fd(), -1);
	assert_int_equal(cancel_check(), 0);
	assert_null(maru_cancel_bind(t));
	fd = cancel_fd();
	assert_true(fd >= 0);
	assert_false(readable(fd));
	maru_cancel_fire(t);
	assert_int_equal(cancel_check(), -EINTR);
	assert_true(readable(fd));
	/* another thread has no token: not cancelled */
	assert_int_equal(pthread_create(&th, NULL, other_thread, NULL), 0);
	assert_int_equal(pthread_join(th, &ok), 0);
	assert_true(ok != NULL);
	/* reset: not fired, not readable */
	maru_cancel_reset(t);
	assert_int_equal(cancel_check(), 0);
	assert_false(readable(fd));
	/* bind returns the old one; binding NULL unbinds */
	assert_ptr_equal(maru_cancel_bind(u), t);
	assert_int_not_equal(cancel_fd(), fd);
	maru_cancel_fire(t);
	assert_int_equal(cancel_check(), 0);	/* not this thread's now */
	assert_ptr_equal(maru_cancel_bind(NULL), u);
	assert_int_equal(cancel_fd(), -1);
	/* freeing the bound token unbinds it */
	maru_cancel_bind(u);
	maru_cancel_free(u);
	assert_int_equal(cancel_fd(), -1);
	assert_null(maru_cancel_bind(NULL));
	maru_cancel_free(t);
}

static void test_fire_after(void **state)
{
	struct maru_cancel *t;
	uint64_t t0, ms;

	(void)state;
	assert_int_equal(maru_cancel_new(&t), 0);
	maru_cancel_fire_after(t, 150);
	assert_int_equal(maru_cancel_fired(t), 0);
	/* a later time does not delay it, an earlier one brings it forward */
	maru_cancel_fire_after(t, 5000);
	maru_cancel_fire_after(t, 100);
	t0 = mono_ms();
	while (!maru_cancel_fired(t) && mono_ms() - t0 < 2000)
		sleep_ms_(5);
	ms = mono_ms() - t0;
	assert_int_equal(maru_cancel_fired(t), 1);
	assert_true(ms >= 90 && ms < 1000);
	/* reset drops the time too */
	maru_cancel_reset(t);
	maru_cancel_fire_after(t, 50);
	maru_cancel_reset(t);
	sleep_ms_(100);
	assert_int_equal(maru_cancel_fired(t), 0);
	/* 0: now */
	maru_cancel_fire_after(t, 0);
	assert_int_equal(maru_cancel_fired(t), 1);
	maru_cancel_free(t);
}

static void test_poll_ready_and_deadline(void **state)
{
	struct maru_cancel *t;
	uint64_t t0, ms;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	/* no token bound: the socket or the clock */
	t0 = mono_ms();
	assert_int_equal(cancel_poll(p[0], POLLIN, t0 + 100), -ETIMEDOUT);
	ms = mono_ms() - t0;
	assert_true(ms >= 100 && ms < 1000);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(cancel_poll(p[0], POLLIN, mono_ms() + 1000), 0);
	/* a deadline already past: -ETIMEDOUT even when ready */
	assert_int_equal(cancel_poll(p[0], POLLIN, mono_ms() - 1), -ETIMEDOUT);
	/* bound and not fired: the same */
	assert_int_equal(maru_cancel_new(&t), 0);
	maru_cancel_bind(t);
	assert_int_equal(cancel_poll(p[0], POLLIN, mono_ms() + 1000), 0);
	/* fired: -EINTR even when ready */
	maru_cancel_fire(t);
	assert_int_equal(cancel_poll(p[0], POLLIN, mono_ms() + 1000), -EINTR);
	/* no descriptor at all: the token and the clock */
	maru_cancel_reset(t);
	assert_int_equal(cancel_poll(-1, 0, mono_ms() + 50), -ETIMEDOUT);
	maru_cancel_bind(NULL);
	maru_cancel_free(t);
	close(p[0]);
	close(p[1]);
}

struct firer {
	struct maru_cancel *t;
	int after_ms;
};

static void *fire_main(void *arg)
{
	struct firer *f = arg;

	sleep_ms_(f->after_ms);
	maru_cancel_fire(f->t);
	return NULL;
}

/* Fired from another thread while this one waits: it wakes at once. */
static void test_poll_fired_meanwhile(void **state)
{
	struct firer f = { .after_ms = 100 };
	uint64_t t0, ms;
	pthread_t th;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(maru_cancel_new(&f.t), 0);
	maru_cancel_bind(f.t);
	assert_int_equal(pthread_create(&th, NULL, fire_main, &f), 0);
	t0 = mono_ms();
	assert_int_equal(cancel_poll(p[0], POLLIN, t0 + 10000), -EINTR);
	ms = mono_ms() - t0;
	assert_true(ms >= 90 && ms < 2000);
	pthread_join(th, NULL);
	/* its time comes while this one waits: the same */
	maru_cancel_reset(f.t);
	maru_cancel_fire_after(f.t, 100);
	t0 = mono_ms();
	assert_int_equal(cancel_poll(p[0], POLLIN, t0 + 10000), -EINTR);
	ms = mono_ms() - t0;
	assert_true(ms >= 90 && ms < 2000);
	maru_cancel_bind(NULL);
	maru_cancel_free(f.t);
	close(p[0]);
	close(p[1]);
}

/* A fire that raced a reset leaves the descriptor readable: ignored. */
static void test_poll_fire_raced_reset(void **state)
{
	struct maru_cancel *t;
	uint64_t v = 1;

	(void)state;
	assert_int_equal(maru_cancel_new(&t), 0);
	maru_cancel_bind(t);
	/* the eventfd written, the flag clear: what a lost race leaves */
	assert_int_equal(write(cancel_fd(), &v, sizeof(v)), sizeof(v));
	assert_true(readable(cancel_fd()));
	assert_int_equal(cancel_poll(-1, 0, mono_ms() + 100), -ETIMEDOUT);
	/* and it was emptied on the way */
	assert_false(readable(cancel_fd()));
	maru_cancel_bind(NULL);
	maru_cancel_free(t);
}

struct holder {
	pthread_mutex_t *m;
	int ms;
};

static void *hold_main(void *arg)
{
	struct holder *h = arg;

	pthread_mutex_lock(h->m);
	sleep_ms_(h->ms);
	pthread_mutex_unlock(h->m);
	return NULL;
}

static void test_lock(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct holder h = { .m = &m, .ms = 600 };
	struct firer f = { .after_ms = 100 };
	uint64_t t0, ms;
	pthread_t th, tf;

	(void)state;
	/* free: taken, even with the deadline past */
	assert_int_equal(cancel_lock(&m, mono_ms() + 100), 0);
	pthread_mutex_unlock(&m);
	assert_int_equal(cancel_lock(&m, mono_ms() - 1), 0);
	pthread_mutex_unlock(&m);
	/* held by another: -ETIMEDOUT at the deadline, not held */
	assert_int_equal(pthread_create(&th, NULL, hold_main, &h), 0);
	while (!pthread_mutex_trylock(&m)) {
		pthread_mutex_unlock(&m);
		sleep_ms_(1);
	}
	t0 = mono_ms();
	assert_int_equal(cancel_lock(&m, t0 + 100), -ETIMEDOUT);
	ms = mono_ms() - t0;
	assert_true(ms >= 100 && ms < 500);
	/* the token fires while it waits: -EINTR within a slice or so */
	assert_int_equal(maru_cancel_new(&f.t), 0);
	maru_cancel_bind(f.t);
	assert_int_equal(pthread_create(&tf, NULL, fire_main, &f), 0);
	t0 = mono_ms();
	assert_int_equal(cancel_lock(&m, t0 + 10000), -EINTR);
	ms = mono_ms() - t0;
	/* not the deadline's 10 s: a slice after the fire, give or take load */
	assert_true(ms >= 90 && ms < 2000);
	pthread_join(tf, NULL);
	/* the holder lets go: taken */
	maru_cancel_reset(f.t);
	assert_int_equal(cancel_lock(&m, mono_ms() + 10000), 0);
	pthread_mutex_unlock(&m);
	pthread_join(th, NULL);
	/* fired before: -EINTR even for a free mutex */
	maru_cancel_fire(f.t);
	assert_int_equal(cancel_lock(&m, mono_ms() + 1000), -EINTR);
	assert_int_equal(pthread_mutex_trylock(&m), 0);
	pthread_mutex_unlock(&m);
	maru_cancel_bind(NULL);
	maru_cancel_free(f.t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fire_reset),
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_fire_after),
		cmocka_unit_test(test_poll_ready_and_deadline),
		cmocka_unit_test(test_poll_fired_meanwhile),
		cmocka_unit_test(test_poll_fire_raced_reset),
		cmocka_unit_test(test_lock),
	};

	return cmocka_run_group_tests_name("cancel", tests, NULL, NULL);
}
