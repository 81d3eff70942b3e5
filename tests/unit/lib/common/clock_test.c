/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/clock_test.c: the clocks (common/clock.c): wall and
 * monotonic time, conversions, sleeping, and a condition variable made by
 * cond_init_mono() timing out at a deadline_ms() deadline on the
 * monotonic clock.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "maru/libmaru.h"
#include "superblock.h"
#include "addr.h"
#include "clock.h"
#include "hash.h"
#include "parse.h"

static void test_clocks(void **state)
{
	uint64_t m1 = mono_ns(), m2;
	struct timespec ts;

	(void)state;
	assert_true(now_ns() > 1600000000ull * 1000000000ull);
	m2 = mono_ns();
	assert_true(m2 >= m1);
	assert_true(mono_ms() >= m2 / 1000000u);
	ns_to_timespec(3000000123ull, &ts);
	assert_int_equal(ts.tv_sec, 3);
	assert_int_equal(ts.tv_nsec, 123);
	m1 = mono_ms();
	sleep_ms(20);
	assert_true(mono_ms() - m1 >= 20);
}

static void test_cond_deadline(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	struct timespec ts;
	uint64_t t0;
	int rc;

	(void)state;
	assert_int_equal(cond_init_mono(&cv), 0);
	pthread_mutex_lock(&mu);
	t0 = mono_ms();
	deadline_ms(&ts, 50);
	do
		rc = pthread_cond_timedwait(&cv, &mu, &ts);
	while (rc == 0);
	pthread_mutex_unlock(&mu);
	assert_int_equal(rc, ETIMEDOUT);
	/* the deadline is on CLOCK_MONOTONIC: neither early nor a wall-clock away */
	assert_true(mono_ms() - t0 >= 49);
	assert_true(mono_ms() - t0 < 5000);
	pthread_cond_destroy(&cv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_cond_deadline),
	};

	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
