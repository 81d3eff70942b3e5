/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/route_events_test.c: lib/cluster/route_events.c,
 * the pools' event streams merged: every event of every pool comes out
 * once, numbered in one sequence, a file's id tagged with its pool, a
 * directory's (and each parent's) the router's id by path, or 0 when this
 * client never saw it; acknowledging merged event M acknowledges on each
 * pool its last event delivered up to M; the stream is up while every
 * pool's is, their losses summed; none waiting: 0 after the timeout;
 * closing closes every pool's stream.
 * Real: route*.c, members.c over loopback, the reader threads. Faked: etcd
 * (fake_etcd.c) and the pools' streams (route_fixture.c's route_ops).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "client_priv.h"
#include "route_fixture.h"
#include "route_priv.h"

static int setup(void **state)
{
	static struct rf f;

	rf_setup(&f, 3, 0);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	rf_teardown(*state);
	return 0;
}

static void ev(struct rf *f, int pool, uint64_t seq, uint32_t type, uint64_t ino,
	       const char *path)
{
	struct maru_event e;

	memset(&e, 0, sizeof(e));
	e.event_size = sizeof(e);
	e.seq = seq;
	e.type = type;
	e.ino = ino;
	e.parent = 77;		/* the pool's id: replaced by the router's */
	snprintf(e.path, sizeof(e.path), "%s", path);
	rf_event(f, pool, &e);
}

static void test_merged(void **state)
{
	struct rf *f = *state;
	struct route *r = f->c->route;
	struct route_events *re;
	struct maru_event out[4];
	uint64_t d = route_dir_intern(r, "d");
	int i, seen[3] = { 0 };

	ev(f, 0, 10, MARU_EV_PUBLISH, 5, "/d/a");
	ev(f, 2, 30, MARU_EV_UNLINK, 6, "/b");
	ev(f, 1, 20, MARU_EV_MKDIR, 9, "/d");
	ev(f, 1, 21, MARU_EV_MKDIR, 9, "/never/seen");
	assert_int_equal(route_events_open(f->c, &re), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(route_events_next(re, &out[i], 2000), 1);
		assert_int_equal(out[i].seq, (uint64_t)i + 1);
		if (!strcmp(out[i].path, "/d/a")) {
			assert_int_equal(out[i].ino, route_tag(0, 5));
			assert_int_equal(out[i].parent, d);
			seen[0]++;
		} else if (!strcmp(out[i].path, "/b")) {
			assert_int_equal(out[i].ino, route_tag(2, 6));
			assert_int_equal(out[i].parent, MARU_ROOT_ID);
			seen[1]++;
		} else if (!strcmp(out[i].path, "/d")) {
			assert_int_equal(out[i].ino, d);
			seen[2]++;
		} else {
			assert_string_equal(out[i].path, "/never/seen");
			assert_int_equal(out[i].ino, 0);
			assert_int_equal(out[i].parent, 0);
		}
	}
	assert_int_equal(seen[0] + seen[1] + seen[2], 3);
	assert_int_equal(route_events_next(re, &out[0], 100), 0);
	route_events_close(re);
	for (i = 0; i < 3; i++)
		assert_int_equal(f->pool[i].ev_open, 0);
}

static void test_ack(void **state)
{
	struct rf *f = *state;
	struct route_events *re;
	struct maru_event e;
	uint64_t first0 = 0, last1 = 0, want1 = 0;
	int i;

	ev(f, 0, 10, MARU_EV_PUBLISH, 5, "/a");
	ev(f, 0, 11, MARU_EV_PUBLISH, 5, "/a");
	ev(f, 1, 20, MARU_EV_PUBLISH, 6, "/b");
	assert_int_equal(route_events_open(f->c, &re), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(route_events_next(re, &e, 2000), 1);
		if (route_slot_of(e.ino) == 0 && !first0)
			first0 = e.seq;
		if (route_slot_of(e.ino) == 1)
			last1 = e.seq;
	}
	if (last1 < first0)
		want1 = 20;
	/* up to the first event of pool 0 */
	assert_int_equal(route_events_ack(re, first0), 0);
	assert_int_equal(f->pool[0].acked, 10);
	assert_int_equal(f->pool[1].acked, want1);
	assert_int_equal(f->pool[2].acked, 0);
	assert_int_equal(route_events_ack(re, 3), 0);
	assert_int_equal(f->pool[0].acked, 11);
	assert_int_equal(f->pool[1].acked, 20);
	assert_int_equal(f->pool[2].acked, 0);
	route_events_close(re);
}

static void test_up_and_timeout(void **state)
{
	struct rf *f = *state;
	struct route_events *re;
	struct maru_event e;
	struct timespec a, b;
	uint64_t losses = 99;
	long ms;
	int i;

	assert_int_equal(route_events_open(f->c, &re), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(f->pool[i].ev_open, 1);
	assert_int_equal(route_events_up(re, &losses), 1);
	assert_int_equal(losses, 0 + 1 + 2);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(route_events_next(re, &e, 150), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	assert_true(ms >= 140 && ms < 1000);
	/* nothing delivered: acknowledging nothing is fine */
	assert_int_equal(route_events_ack(re, 0), 0);
	route_events_close(re);
}

static void test_pool_away_not_up(void **state)
{
	struct route_events *re;
	uint64_t losses;
	struct rf f;

	(void)state;
	rf_setup(&f, 2, 2u);
	assert_int_equal(route_events_open(f.c, &re), 0);
	assert_int_equal(f.pool[0].ev_open, 1);
	assert_int_equal(f.pool[1].ev_open, 0);
	assert_int_equal(route_events_up(re, &losses), 0);
	route_events_close(re);
	rf_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_merged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_up_and_timeout, setup, teardown),
		cmocka_unit_test(test_pool_away_not_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
