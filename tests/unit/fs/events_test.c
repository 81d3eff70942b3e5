// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/events_test.c: the event thread of a mount (fs/events.c)
 * on a scripted event stream (fake.h's fake_events) with a running
 * notifier: each event reaches the .maru/events ring, bumps its
 * directory's change counter and invalidates the kernel's entry; the
 * stream is acked at once on subscribing and, once caught up, up to the
 * last event handled; an event of this mount's own publish is not acked
 * by itself but rides on the next one; a lost stream is closed and
 * subscribed again, and the events after it are applied; an overflow
 * counts as one (handles of the time before fail).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "dcache.h"
#include "events.h"
#include "evring.h"
#include "fake.h"
#include "notify.h"

#define LOSE	UINT32_MAX	/* a script entry that loses the stream */

static struct mfs m;
static struct events *ev;
static struct {
	pthread_mutex_t lock;
	struct maru_event q[16];
	unsigned int head, tail;
	uint64_t acks[64];
	unsigned int nacks, opens, closes;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int s_open(struct maru_events **out)
{
	pthread_mutex_lock(&st.lock);
	st.opens++;
	pthread_mutex_unlock(&st.lock);
	*out = (struct maru_events *)&st;
	return 0;
}

static int s_next(struct maru_event *out, int ms)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int rc = 0;

	pthread_mutex_lock(&st.lock);
	if (st.head < st.tail) {
		*out = st.q[st.head++ % 16];
		rc = out->type == LOSE ? -ECONNRESET : 1;
	}
	pthread_mutex_unlock(&st.lock);
	if (!rc && ms)
		nanosleep(&ts, NULL);
	return rc;
}

static int s_ack(uint64_t seq)
{
	pthread_mutex_lock(&st.lock);
	if (st.nacks < 64)
		st.acks[st.nacks++] = seq;
	pthread_mutex_unlock(&st.lock);
	return 0;
}

static void s_close(void)
{
	pthread_mutex_lock(&st.lock);
	st.closes++;
	pthread_mutex_unlock(&st.lock);
}

static const struct fake_events script = { s_open, s_next, s_ack, s_close };

static void push(uint64_t seq, uint32_t type, uint32_t flags, const char *name)
{
	struct maru_event e;

	memset(&e, 0, sizeof(e));
	e.seq = seq;
	e.type = type;
	e.flags = flags;
	e.parent = 1;
	e.ino = 100 + seq;
	snprintf(e.name, sizeof(e.name), "%s", name);
	snprintf(e.path, sizeof(e.path), "/%s", name);
	pthread_mutex_lock(&st.lock);
	st.q[st.tail++ % 16] = e;
	pthread_mutex_unlock(&st.lock);
}

/* A copy of the script's counters (never assert under st.lock: a failed
 * assertion would leave it held and the event thread stuck on it). */
static void counts(unsigned int *head, unsigned int *nacks, uint64_t *ack1,
		   unsigned int *opens, unsigned int *closes)
{
	pthread_mutex_lock(&st.lock);
	*head = st.head;
	*nacks = st.nacks;
	*ack1 = st.nacks > 1 ? st.acks[1] : 0;
	*opens = st.opens;
	*closes = st.closes;
	pthread_mutex_unlock(&st.lock);
}

/* Wait (at most 5 s) until seq was acked; 1 if it was. */
static int acked(uint64_t seq)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	unsigned int i;
	int n, found = 0;

	for (n = 0; n < 2500 && !found; n++) {
		pthread_mutex_lock(&st.lock);
		for (i = 0; i < st.nacks; i++)
			found |= st.acks[i] == seq;
		pthread_mutex_unlock(&st.lock);
		if (!found)
			nanosleep(&ts, NULL);
	}
	return found;
}

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	pthread_mutex_lock(&st.lock);
	st.head = st.tail = st.nacks = st.opens = st.closes = 0;
	pthread_mutex_unlock(&st.lock);
	fake_events = &script;
	return notify_start(m.nt);
}

static void start(void)
{
	assert_int_equal(events_start(&m, &ev), 0);
}

static int teardown(void **state)
{
	events_stop(ev);
	notify_stop(m.nt);
	events_free(ev);
	ev = NULL;
	fake_events = NULL;
	fake_unmount(&m);
	return 0;
}

static void test_events_applied(void **state)
{
	uint64_t seq0 = dcache_dir_seq(m.dc, 1), ack1;
	unsigned int head, nacks, opens, closes;
	struct ev_reader *r;

	assert_int_equal(ring_reader_open(m.ring, &r), 0);
	push(1, MARU_EV_PUBLISH, 0, "a");
	push(2, MARU_EV_UNLINK, 0, "a");
	start();
	assert_true(acked(0));		/* said on subscribing */
	assert_true(acked(2));
	counts(&head, &nacks, &ack1, &opens, &closes);
	assert_int_equal(nacks, 2);	/* caught up: one ack for both */
	assert_int_equal(ack1, 2);
	assert_true(dcache_dir_seq(m.dc, 1) - seq0 >= 2);
	assert_true(fk.inval_entries >= 1);
	assert_string_equal(fk.last_inval, "a");
	ring_reader_read(m.ring, fake_req(&m), r, 4096);
	assert_non_null(strstr(fk.last_buf, "1 0.000000000 publish /a\n"));
	assert_non_null(strstr(fk.last_buf, "2 0.000000000 unlink /a\n"));
	ring_reader_close(m.ring, r);
	assert_int_equal(opens, 1);
}

static void test_own_rides_on_next(void **state)
{
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	unsigned int head, nacks, opens, closes;
	uint64_t ack1;

	push(5, MARU_EV_PUBLISH, MARU_EV_F_OWN, "mine");
	start();
	assert_true(acked(0));
	nanosleep(&ts, NULL);
	counts(&head, &nacks, &ack1, &opens, &closes);
	assert_int_equal(head, 1);	/* handled */
	assert_int_equal(nacks, 1);	/* and not acked by itself */
	push(6, MARU_EV_MKDIR, 0, "d");
	assert_true(acked(6));
	counts(&head, &nacks, &ack1, &opens, &closes);
	assert_int_equal(nacks, 2);	/* 6 covers 5 */
}

static void test_lost_stream(void **state)
{
	unsigned int head, nacks, opens, closes;
	uint64_t ack1;

	push(1, MARU_EV_PUBLISH, 0, "a");
	push(2, LOSE, 0, "");
	push(3, MARU_EV_RMDIR, 0, "gone");
	start();
	assert_true(acked(3));
	counts(&head, &nacks, &ack1, &opens, &closes);
	assert_int_equal(opens, 2);
	assert_true(closes >= 1);
}

static void test_overflow(void **state)
{
	push(9, MARU_EV_OVERFLOW, 0, "");
	start();
	assert_true(acked(9));
	assert_int_equal(__atomic_load_n(&m.overflows, __ATOMIC_ACQUIRE), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_events_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_rides_on_next, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/events", tests, NULL, NULL);
}
