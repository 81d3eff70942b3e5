// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/evring_test.c: the .maru/events ring (fs/evring.c) against
 * the fake libfuse reply side: each event type's line ("seq sec.nsec type
 * path", a rename with "old -> new", a nameless one as "/"); a reader sees
 * only what came after it opened, gets whole lines while its buffer allows
 * and the rest of a long line on the next read; a reader that fell more
 * than the ring behind skips to the oldest line kept; a blocked read wakes
 * on the next event, and every read ends empty once the ring stops; poll
 * answers at once.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "evring.h"
#include "fake.h"

#define RING_LINES	4096	/* evring.c's ring size */

static struct mfs m;

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	return 0;
}

static int teardown(void **state)
{
	fake_unmount(&m);
	return 0;
}

static struct maru_event ev(uint64_t seq, uint32_t type, const char *path)
{
	struct maru_event e;

	memset(&e, 0, sizeof(e));
	e.seq = seq;
	e.time_ns = 12 * 1000000000ULL + 5;
	e.type = type;
	snprintf(e.path, sizeof(e.path), "%s", path);
	return e;
}

static void test_format(void **state)
{
	static const struct { uint32_t type; const char *name; } types[] = {
		{ MARU_EV_PUBLISH, "publish" }, { MARU_EV_REPLACE, "replace" },
		{ MARU_EV_UNLINK, "unlink" }, { MARU_EV_EVICT, "evict" },
		{ MARU_EV_MKDIR, "mkdir" }, { MARU_EV_RMDIR, "rmdir" },
		{ MARU_EV_SETATTR, "setattr" }, { MARU_EV_SYMLINK, "symlink" },
		{ MARU_EV_LINK, "link" }, { MARU_EV_MKNOD, "mknod" },
		{ MARU_EV_OVERFLOW, "overflow" }, { MARU_EV_GENERATION, "generation" },
		{ 9999, "unknown" },
	};
	struct maru_event e;
	char line[256], want[256];
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		e = ev(7, types[i].type, "/a/b");
		snprintf(want, sizeof(want), "7 12.000000005 %s /a/b\n", types[i].name);
		assert_int_equal(evring_format(&e, line, sizeof(line)), (int)strlen(want));
		assert_string_equal(line, want);
	}
	e = ev(8, MARU_EV_RENAME, "/x");
	snprintf(e.path2, sizeof(e.path2), "/y/z");
	evring_format(&e, line, sizeof(line));
	assert_string_equal(line, "8 12.000000005 rename /x -> /y/z\n");
	/* no path: the names; no name either: the root */
	e = ev(9, MARU_EV_RENAME, "");
	snprintf(e.name, sizeof(e.name), "n1");
	snprintf(e.name2, sizeof(e.name2), "n2");
	evring_format(&e, line, sizeof(line));
	assert_string_equal(line, "9 12.000000005 rename n1 -> n2\n");
	e = ev(10, MARU_EV_OVERFLOW, "");
	evring_format(&e, line, sizeof(line));
	assert_string_equal(line, "10 12.000000005 overflow /\n");
}

static void read_into(struct ev_reader *r, size_t size)
{
	ring_reader_read(m.ring, fake_req(&m), r, size);
	assert_int_equal(fk.last_err, 0);
}

static void test_reader_lines(void **state)
{
	struct maru_event e = ev(1, MARU_EV_PUBLISH, "/before");
	struct ev_reader *r;

	evring_append(m.ring, &e);
	assert_int_equal(ring_reader_open(m.ring, &r), 0);
	e = ev(2, MARU_EV_PUBLISH, "/one");
	evring_append(m.ring, &e);
	e = ev(3, MARU_EV_UNLINK, "/two");
	evring_append(m.ring, &e);
	read_into(r, 4096);
	assert_string_equal(fk.last_buf,
			    "2 12.000000005 publish /one\n3 12.000000005 unlink /two\n");
	/* whole lines only while the buffer allows: the second waits */
	e = ev(4, MARU_EV_PUBLISH, "/three");
	evring_append(m.ring, &e);
	e = ev(5, MARU_EV_PUBLISH, "/four");
	evring_append(m.ring, &e);
	read_into(r, 40);
	assert_string_equal(fk.last_buf, "4 12.000000005 publish /three\n");
	/* a buffer shorter than a line: the line in pieces */
	read_into(r, 10);
	assert_string_equal(fk.last_buf, "5 12.00000");
	read_into(r, 100);
	assert_string_equal(fk.last_buf, "0005 publish /four\n");
	ring_reader_close(m.ring, r);
}

static void test_reader_skips_ahead(void **state)
{
	struct ev_reader *r;
	struct maru_event e;
	uint64_t i;

	assert_int_equal(ring_reader_open(m.ring, &r), 0);
	for (i = 1; i <= RING_LINES + 5; i++) {
		e = ev(i, MARU_EV_PUBLISH, "/f");
		evring_append(m.ring, &e);
	}
	read_into(r, 30);
	assert_string_equal(fk.last_buf, "6 12.000000005 publish /f\n");
	ring_reader_close(m.ring, r);
}

static void *append_later(void *arg)
{
	struct maru_event e = ev(42, MARU_EV_MKDIR, "/late");

	usleep(50 * 1000);
	evring_append(m.ring, &e);
	return arg;
}

static void *stop_later(void *arg)
{
	usleep(50 * 1000);
	evring_stop(m.ring);
	return arg;
}

static void test_blocking_and_stop(void **state)
{
	struct ev_reader *r, *r2;
	pthread_t th;
	int replies;

	assert_int_equal(ring_reader_open(m.ring, &r), 0);
	assert_int_equal(ring_reader_open(m.ring, &r2), 0);
	assert_int_equal(pthread_create(&th, NULL, append_later, NULL), 0);
	read_into(r, 256);
	pthread_join(th, NULL);
	assert_string_equal(fk.last_buf, "42 12.000000005 mkdir /late\n");
	/* r has read everything: it blocks until the ring stops, then empty */
	assert_int_equal(pthread_create(&th, NULL, stop_later, NULL), 0);
	read_into(r, 256);
	pthread_join(th, NULL);
	assert_int_equal(fk.last_len, 0);
	replies = fk.replies;
	ring_reader_poll(m.ring, fake_req(&m), r2, NULL);
	assert_int_equal(fk.replies, replies + 1);
	ring_reader_close(m.ring, r2);
	ring_reader_close(m.ring, r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test_setup_teardown(test_reader_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_skips_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocking_and_stop, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/evring", tests, NULL, NULL);
}
