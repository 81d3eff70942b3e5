/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/event_test.c: the event ring (daemon/dir/event.c):
 * every change sends its event with paths, waiters wake, a full ring
 * reads as DEV_OVERFLOW, dir_events_kick wakes every waiter, and
 * dir_events_gap pushes an overflow between ordinary events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fixture.h"


/* ---- events ---- */

struct waiter {
	struct dir *d;
	uint64_t after;
	int rc;
	struct dir_event ev;
};


static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	int rc = dir_events_wait(w->d, w->after, &w->ev, 1, 10000);

	__atomic_store_n(&w->rc, rc, __ATOMIC_SEQ_CST);
	return NULL;
}


static void test_events(void **state)
{
	struct fx f;
	struct dir_event *ev = calloc(16, sizeof(*ev));
	struct waiter w;
	pthread_t th;
	char name[16];
	int i, n;

	assert_non_null(ev);
	fx_open(&f, 64, DIR_EVICT_LRU, 8);
	for (i = 1; i <= 20; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		do_mkdir(&f, ROOT, name);
	}
	assert_int_equal(dir_event_seq(f.d), 20);
	/* Events 1..12 fell out of the 8-entry ring. */
	n = dir_events_wait(f.d, 0, ev, 16, 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].type, DEV_OVERFLOW);
	assert_int_equal(ev[0].seq, 12);
	n = dir_events_wait(f.d, 12, ev, 16, 0);
	assert_int_equal(n, 8);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "/d%d", i + 13);
		assert_int_equal(ev[i].seq, 13 + i);
		assert_int_equal(ev[i].type, DEV_MKDIR);
		assert_string_equal(ev[i].path, name);
		assert_string_equal(ev[i].name, name + 1);
		assert_int_equal(ev[i].parent, ROOT);
	}
	n = dir_events_wait(f.d, 17, ev, 2, 0);
	assert_int_equal(n, 2);
	assert_int_equal(ev[1].seq, 19);
	/* Nothing new: timeout returns 0. */
	assert_int_equal(dir_events_wait(f.d, 20, ev, 16, 20), 0);
	/* A waiter wakes on the next event. */
	w = (struct waiter){ f.d, 20, -1 };
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	assert_int_equal(dir_rmdir(f.d, ROOT, "d20", 3), 0);
	pthread_join(th, NULL);
	assert_int_equal(w.rc, 1);
	assert_int_equal(w.ev.type, DEV_RMDIR);
	assert_string_equal(w.ev.path, "/d20");
	/* And on a kick, with nothing. */
	w = (struct waiter){ f.d, 21, -1 };
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	while (__atomic_load_n(&w.rc, __ATOMIC_SEQ_CST) == -1) {
		struct timespec ts = { 0, 2000000 };

		dir_events_kick(f.d);
		nanosleep(&ts, NULL);
	}
	pthread_join(th, NULL);
	assert_int_equal(w.rc, 0);
	fx_close(&f);
	free(ev);
}

/* A gap is one DEV_OVERFLOW in order, the events around it intact. */
static void test_gap(void **state)
{
	struct dir_event ev[4];
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 8);
	do_mkdir(&f, ROOT, "a");
	dir_events_gap(f.d);
	do_mkdir(&f, ROOT, "b");
	assert_int_equal(dir_event_seq(f.d), 3);
	assert_int_equal(dir_events_wait(f.d, 0, ev, 4, 0), 3);
	assert_int_equal(ev[0].type, DEV_MKDIR);
	assert_string_equal(ev[0].path, "/a");
	assert_int_equal(ev[1].type, DEV_OVERFLOW);
	assert_int_equal(ev[1].seq, 2);
	assert_string_equal(ev[1].path, "");
	assert_int_equal(ev[2].type, DEV_MKDIR);
	assert_int_equal(ev[2].seq, 3);
	assert_string_equal(ev[2].path, "/b");
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_gap),
	};

	return cmocka_run_group_tests_name("event", tests, NULL, NULL);
}
