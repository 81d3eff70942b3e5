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
 * counts as one (handles of the time before fail). Without hostages: a
 * stream libmaru lost and redialled by itself (maru_events_up's count) and
 * the first of a run of MARU_EV_F_UNWAITED events each drop the kernel's
 * cached names and the directory attributes, once, and the stream's return
 * is acked at once. Emulated: marud and libmaru (the script), the kernel
 * (fake.c's notify calls); real: the event thread, notifier, dcache, dattr.
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
#include <unistd.h>

#include <cmocka.h>

#include "dattr.h"
#include "dcache.h"
#include "events.h"
#include "evring.h"
#include "fake.h"
#include "notify.h"

#define LOSE	UINT32_MAX	/* a script entry that loses the stream */
#define SILENT	(UINT32_MAX - 1)	/* libmaru lost it by itself (a partition) */
#define BACK	(UINT32_MAX - 2)	/* and redialled it */

static struct mfs m;
static struct events *ev;
static struct {
	pthread_mutex_t lock;
	struct maru_event q[16];
	unsigned int head, tail;
	uint64_t acks[64];
	unsigned int nacks, opens, closes;
	uint64_t losses;
	int down;
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
		if (out->type == SILENT) {
			st.losses++;
			st.down = 1;
			rc = 0;
		} else if (out->type == BACK) {
			st.down = 0;
			rc = 0;
		}
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

static int s_up(uint64_t *losses)
{
	pthread_mutex_lock(&st.lock);
	*losses = st.losses;
	pthread_mutex_unlock(&st.lock);
	return !st.down;
}

static const struct fake_events script = { s_open, s_next, s_ack, s_close, s_up };

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
	st.losses = 0;
	st.down = 0;
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

/* Wait (at most 5 s) for the script to be read to its end. */
static void drained(void)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	unsigned int head, tail;
	int n;

	for (n = 0; n < 2500; n++) {
		pthread_mutex_lock(&st.lock);
		head = st.head;
		tail = st.tail;
		pthread_mutex_unlock(&st.lock);
		if (head == tail)
			break;
		nanosleep(&ts, NULL);
	}
	assert_int_equal(head, tail);
}

static void mark(void *arg, uint64_t val)
{
	(void)val;
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
}

/*
 * Wait (at most 5 s) until the notifier ran what was queued so far (the
 * invalidations of the events read): a call queued now runs after them.
 */
static void applied(void)
{
	int done = 0, n;

	notify_call(m.nt, mark, &done, 0);
	for (n = 0; n < 2500 && !__atomic_load_n(&done, __ATOMIC_ACQUIRE); n++)
		usleep(2000);
	assert_true(__atomic_load_n(&done, __ATOMIC_ACQUIRE));
}

/* A cached name and directory attributes, as a lookup leaves them. */
static void cache_some(const char *name)
{
	struct maru_attr a = { .ino = 1, .state = MARU_STATE_DIR, .mode = 040755 };

	dcache_note(m.dc, 1, name, 30);
	dattr_put(m.da, &a, dattr_gen(m.da, 1));
	assert_int_equal(dattr_get(m.da, 1, &a), 0);
}

/*
 * Every name the kernel had was invalidated (name: the last one, unless an
 * event's own invalidation followed), and the directory attributes went.
 */
static void dropped(const char *name)
{
	struct maru_attr a;

	for (int i = 0; i < 2500 && dcache_count(m.dc); i++)
		usleep(2000);
	assert_int_equal(dcache_count(m.dc), 0);
	if (name)
		assert_string_equal(fk.last_inval, name);
	assert_int_equal(dattr_get(m.da, 1, &a), -ENOENT);
}

static void test_silent_loss_drops_caches(void **state)
{
	unsigned int head, nacks, opens, closes;
	uint64_t ack1;
	int before;

	assert_int_equal(dattr_new(30, &m.da), 0);
	push(1, MARU_EV_MKDIR, 0, "d");
	start();
	assert_true(acked(1));
	drained();
	applied();	/* d's invalidation ran: "cached" is the last one */
	cache_some("cached");
	before = fk.inval_entries;
	push(2, SILENT, 0, "");
	drained();
	dropped("cached");
	assert_true(fk.inval_entries > before);
	/* while it is down, nothing is kept for the directory */
	cache_some("meanwhile");
	push(3, BACK, 0, "");
	drained();
	dropped("meanwhile");
	/* back: acked at once (the new stream is waited on again), one open only */
	counts(&head, &nacks, &ack1, &opens, &closes);
	assert_int_equal(opens, 1);
	assert_int_equal(nacks, 3);	/* 0 on subscribing, 1, 0 on the return */
	dattr_free(m.da);
	m.da = NULL;
}

static void test_unwaited_drops_caches_once(void **state)
{
	int before;

	assert_int_equal(dattr_new(30, &m.da), 0);
	start();
	assert_true(acked(0));
	cache_some("cached");
	push(4, MARU_EV_PUBLISH, MARU_EV_F_UNWAITED, "x");
	assert_true(acked(4));
	dropped(NULL);
	/* the next flagged events of the run drop nothing more */
	cache_some("kept");
	before = fk.inval_entries;
	push(5, MARU_EV_PUBLISH, MARU_EV_F_UNWAITED, "y");
	assert_true(acked(5));
	assert_int_equal(dcache_count(m.dc), 1);
	assert_int_equal(fk.inval_entries, before + 1);	/* "y" itself */
	/* a run that ends and starts again drops them again */
	push(6, MARU_EV_PUBLISH, 0, "z");
	push(7, MARU_EV_PUBLISH, MARU_EV_F_UNWAITED, "w");
	assert_true(acked(7));
	dropped(NULL);
	dattr_free(m.da);
	m.da = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_events_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_rides_on_next, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_loss_drops_caches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwaited_drops_caches_once, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/events", tests, NULL, NULL);
}
