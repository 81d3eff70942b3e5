/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/pin_test.c: fs/pin.c, the versions held between the VFS's
 * LOOKUP after a stale open and its OPEN: a want is consumed by one lookup,
 * a pin is taken over by one open, a newer pin of an inode replaces the
 * older, unused pins expire after PIN_TTL_MS, a pending's pin detaches its
 * reader when dropped, and a full table drops (or, for wants, ignores)
 * what it cannot hold.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake.h"
#include "pending.h"
#include "pin.h"

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
	assert_int_equal(fk.files_open, 0);
	return 0;
}

static void test_want_once(void **state)
{
	assert_false(pin_wanted(m.pins, 1, "a"));
	pin_want(m.pins, 1, "a");
	pin_want(m.pins, 1, "a");	/* one slot per name */
	assert_false(pin_wanted(m.pins, 2, "a"));
	assert_true(pin_wanted(m.pins, 1, "a"));
	assert_false(pin_wanted(m.pins, 1, "a"));
}

static void test_put_take(void **state)
{
	uint64_t ino = fake_publish(1, "b", "x");
	struct maru_file *f;
	struct pending *p;

	assert_false(pin_take(m.pins, ino, &f, &p));
	pin_put(m.pins, ino, fake_lease(ino), NULL);
	pin_put(m.pins, ino, fake_lease(ino), NULL);	/* the newer replaces the older */
	assert_int_equal(pin_count(m.pins), 1);
	assert_int_equal(fk.files_open, 1);
	assert_true(pin_take(m.pins, ino, &f, &p));
	assert_non_null(f);
	assert_null(p);
	assert_int_equal(pin_count(m.pins), 0);
	maru_file_close(f);
}

static void test_expiry(void **state)
{
	uint64_t ino = fake_publish(1, "c", "x");
	struct maru_file *f;
	struct pending *p;

	pin_want(m.pins, 1, "c");
	pin_put(m.pins, ino, fake_lease(ino), NULL);
	usleep(2100 * 1000);	/* PIN_TTL_MS is 2000 */
	pin_expire(m.pins);
	assert_int_equal(pin_count(m.pins), 0);
	assert_int_equal(fk.files_open, 0);	/* the lease was closed */
	assert_false(pin_wanted(m.pins, 1, "c"));
	assert_false(pin_take(m.pins, ino, &f, &p));
}

static void test_pending_pin(void **state)
{
	struct maru_file *f;
	struct pending *p;
	int act = 0;

	assert_int_equal(maru_file_create(NULL, 1, "d", 0100644, 0, 0, 0, 0, &f), 0);
	p = pend_adopt(&m, f, 1, "d", 0, 1);
	assert_int_equal(pend_attach_reader(p, &act), 0);
	pin_put(m.pins, pend_ino(p), NULL, p);	/* the pin owns that reader */
	pend_put(p);
	assert_int_equal(fk.files_open, 1);
	pin_drop_all(m.pins);	/* its reader detached: the pending goes */
	assert_int_equal(fk.files_open, 0);
	assert_int_equal(pin_count(m.pins), 0);
}

static void test_full_table(void **state)
{
	uint64_t ino[70];
	char name[16];
	int i;

	for (i = 0; i < 70; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = fake_publish(1, name, "x");
		pin_put(m.pins, ino[i], fake_lease(ino[i]), NULL);
	}
	assert_int_equal(pin_count(m.pins), 64);
	assert_int_equal(fk.files_open, 64);	/* the rest were closed */
	pin_drop_all(m.pins);
	assert_int_equal(fk.files_open, 0);
}

/*
 * Wants are told apart by parent and name (same name under 64 parents),
 * the 65th is not kept, and each is consumed once.
 */
static void test_wants_full(void **state)
{
	uint64_t parent;

	for (parent = 1; parent <= 65; parent++)
		pin_want(m.pins, parent, "w");
	assert_false(pin_wanted(m.pins, 65, "w"));	/* the table was full */
	assert_false(pin_wanted(m.pins, 1, "x"));
	for (parent = 1; parent <= 64; parent++)
		assert_true(pin_wanted(m.pins, parent, "w"));
	for (parent = 1; parent <= 64; parent++)
		assert_false(pin_wanted(m.pins, parent, "w"));
	pin_want(m.pins, 65, "w");	/* room again */
	assert_true(pin_wanted(m.pins, 65, "w"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_want_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_take, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_pin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wants_full, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/pin", tests, NULL, NULL);
}
