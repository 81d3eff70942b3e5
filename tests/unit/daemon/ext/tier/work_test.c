// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/ext/tier/work_test.c: the tier's threads
 * (daemon/ext/tier/work.c) over a real pool file, with requests queued the
 * way the hooks queue them: a worker brings a read request's pieces in and
 * the request holds their units until it ends; a write request prepares
 * its pieces, holds nothing and ends by itself; requests are served front
 * first (the front one's unit is used first); a request is found by
 * connection and id (connection 0: any), not once ended; when the budget
 * is full of held units the worker stalls instead of evicting them, and
 * goes on once the hold is let go, evicting that unit to make room.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tfix.h"

static struct tfix f;
static struct tier t;
static pthread_mutexattr_t errcheck;

/* A failed assertion leaves t.lock held: teardown lets it go (EPERM when
 * this thread does not hold it). */
static void let_go(void)
{
	pthread_mutex_unlock(&t.lock);
}

static int setup(void **state)
{
	pthread_mutexattr_init(&errcheck);
	pthread_mutexattr_settype(&errcheck, PTHREAD_MUTEX_ERRORCHECK);
	static uint8_t buf[1 << 16];
	uint64_t off;

	if (tf_open(&f))
		return -1;
	memset(buf, 0x3c, sizeof(buf));
	for (off = 0; off < TF_SIZE; off += sizeof(buf))
		if (pwrite(f.fd, buf, sizeof(buf), (off_t)off) != (ssize_t)sizeof(buf))
			return -1;
	tf_drop(&f);
	memset(&t, 0, sizeof(t));
	pthread_mutex_init(&t.lock, &errcheck);
	pthread_cond_init(&t.work, NULL);
	pthread_cond_init(&t.done, NULL);
	t.r = f.r;
	t.budget = TF_SIZE;
	t.workers = 1;
	t.sweep_ms = 10000;	/* one measure at start, then out of the way */
	if (tier_cache_init(&t))
		return -1;
	return tier_threads_start(&t);
}

static int teardown(void **state)
{
	let_go();
	tier_threads_stop(&t);
	while (t.reqs) {
		t.reqs->inflight = 0;
		tier_req_end(&t, t.reqs);
	}
	tier_cache_free(&t);
	pthread_cond_destroy(&t.done);
	pthread_cond_destroy(&t.work);
	pthread_mutex_destroy(&t.lock);
	tf_close(&f);
	return 0;
}

/* A request of one piece [off, off+len), at the back of the queue; lock held. */
static struct treq *queue(uint64_t conn, const char *id, int write, uint64_t off,
			  uint64_t len)
{
	struct treq *q = calloc(1, sizeof(*q)), **tail = &t.reqs, *prev = NULL;

	assert_non_null(q);
	q->conn = conn;
	q->write = write;
	snprintf(q->id, sizeof(q->id), "%s", id);
	q->p = calloc(1, sizeof(*q->p));
	assert_non_null(q->p);
	q->p[0] = (struct piece){ off, len };
	q->n = q->cap = 1;
	while (*tail) {
		prev = *tail;
		tail = &(*tail)->next;
	}
	q->prev = prev;
	*tail = q;
	pthread_cond_broadcast(&t.work);
	return q;
}

/* Wait (lock held) until cond holds, at most 10 s; its value. */
#define WAIT_FOR(cond) ({						\
	int _ok = 0, _i;						\
	for (_i = 0; _i < 1000 && !(_ok = (cond)); _i++) {		\
		struct timespec _ts;					\
		clock_gettime(CLOCK_REALTIME, &_ts);			\
		_ts.tv_nsec += 10 * 1000 * 1000;			\
		_ts.tv_sec += _ts.tv_nsec / 1000000000L;		\
		_ts.tv_nsec %= 1000000000L;				\
		pthread_cond_timedwait(&t.done, &t.lock, &_ts);		\
	}								\
	_ok;								\
})

static void test_read_holds_until_end(void **state)
{
	struct treq *q;

	pthread_mutex_lock(&t.lock);
	q = queue(5, "r", 0, TIER_UNIT + 4096, 8192);
	assert_true(WAIT_FOR(q->next_piece == q->n && !q->inflight));
	assert_int_equal(t.u[1].holds, 1);
	assert_int_equal(t.u[1].state, U_WARM);
	assert_true(t.u[1].bytes >= 8192);
	assert_int_equal(t.loaded_bytes, 8192);
	assert_ptr_equal(tier_req_find(&t, 5, "r"), q);
	assert_ptr_equal(tier_req_find(&t, 0, "r"), q);
	assert_null(tier_req_find(&t, 6, "r"));
	assert_null(tier_req_find(&t, 5, "other"));
	tier_req_end(&t, q);		/* freed: nothing in flight */
	assert_int_equal(t.u[1].holds, 0);
	assert_null(t.reqs);
	assert_null(tier_req_find(&t, 5, "r"));
	pthread_mutex_unlock(&t.lock);
	assert_int_equal(tf_resident(&f, TIER_UNIT + 4096, 8192), 8192);
}

static void test_write_ends_itself(void **state)
{
	pthread_mutex_lock(&t.lock);
	queue(5, "", 1, 2 * TIER_UNIT, 4096);
	assert_true(WAIT_FOR(t.reqs == NULL));
	assert_int_equal(t.u[2].holds, 0);
	assert_int_equal(t.loaded_bytes, 4096);
	pthread_mutex_unlock(&t.lock);
	assert_int_equal(tf_resident(&f, 2 * TIER_UNIT, 4096), 4096);
}

static void test_front_first(void **state)
{
	struct treq *a, *b;

	pthread_mutex_lock(&t.lock);
	a = queue(1, "a", 0, 3 * TIER_UNIT, 4096);
	b = queue(1, "b", 0, 0, 4096);
	assert_true(WAIT_FOR(a->next_piece == 1 && b->next_piece == 1 && !a->inflight &&
			     !b->inflight));
	assert_true(t.u[3].used < t.u[0].used);
	tier_req_end(&t, a);
	tier_req_end(&t, b);
	pthread_mutex_unlock(&t.lock);
}

static void test_stall_on_held_budget(void **state)
{
	struct treq *held, *q;

	pthread_mutex_lock(&t.lock);
	held = queue(1, "held", 0, 0, TIER_UNIT);
	assert_true(WAIT_FOR(held->next_piece == 1 && !held->inflight));
	assert_int_equal(t.u[0].holds, 1);
	t.budget = TIER_UNIT;
	q = queue(2, "next", 0, TIER_UNIT, 4096);
	assert_true(WAIT_FOR(t.stalls > 0));
	assert_int_equal(q->next_piece, 0);	/* not loaded over a held unit */
	assert_int_equal(t.u[0].bytes, TIER_UNIT);
	tier_req_end(&t, held);			/* the hold goes: room can be made */
	assert_true(WAIT_FOR(q->next_piece == 1 && !q->inflight));
	assert_int_equal(t.u[0].bytes, 0);
	assert_true(t.evicted_bytes >= TIER_UNIT);
	assert_int_equal(t.u[1].holds, 1);
	tier_req_end(&t, q);
	pthread_mutex_unlock(&t.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_holds_until_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_ends_itself, setup, teardown),
		cmocka_unit_test_setup_teardown(test_front_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stall_on_held_budget, setup, teardown),
	};

	return cmocka_run_group_tests_name("tier/work", tests, NULL, NULL);
}
