/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/pendslot_test.c: fs/pendslot.c, a handle's seat on the
 * pending version, against the fake libmaru: a write-only open is direct_io
 * and its flush publishes; a write after that copies on write; a create
 * links its inode to its pending; a reader's seat shares this mount's
 * pending or reports none; truncate, fallocate, fsync and attributes go to
 * the seat's version; a writable zero-copy pin marks it mapped; a killed
 * writer's flush publishes nothing and a failed release neither; a write,
 * fsync or truncate that failed in transfer fails the version: its fsync and
 * close return the error and nothing is ever published.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"
#include "pending_priv.h"

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

static void test_open_write_flush_cow(void **state)
{
	uint64_t ino = fake_publish(1, "a", "old");
	struct pend_slot s;
	int direct;

	itab_remember(m.tab, ino, 1, "a");
	pend_slot_init(&s, &m, ino, 1);
	assert_int_equal(pend_slot_open(&s, O_WRONLY, &direct), 0);
	assert_true(direct);	/* write-only */
	assert_int_not_equal(pend_slot_version(&s), 0);
	assert_int_equal(pend_slot_write(&s, "new", 3, 0), 3);
	assert_int_equal(pend_slot_flush(&s, 0), 0);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(fake_named(1, "a")->size, 3);
	/* published under the writer: the next write copies on write */
	assert_int_equal(pend_slot_write(&s, "newer", 5, 0), 5);
	assert_int_equal(m.cnt.cow_rewrites, 1);
	assert_int_equal(pend_slot_release(&s, 0), 1);	/* publishes */
	assert_int_equal(fk.publishes, 2);
	assert_int_equal(fake_named(1, "a")->size, 5);
	itab_forget(m.tab, ino, 1);
}

static void test_create_and_reader(void **state)
{
	struct pend_slot w, r, none;
	struct maru_attr a;
	char buf[8] = "";
	int direct, stale;

	pend_slot_init(&w, &m, 0, 1);
	assert_int_equal(pend_slot_create(&w, 1, "b", 0644, 0, 0, O_RDWR | O_CREAT, &a,
					  &direct), 0);
	assert_false(direct);
	assert_int_equal(w.ino, a.ino);
	assert_int_equal(pend_live_version(&m, a.ino), a.ino);	/* linked */
	assert_int_equal(pend_slot_write(&w, "hello", 5, 0), 5);
	/* a reader of the inode shares what this mount writes */
	pend_slot_init(&r, &m, a.ino, 0);
	assert_int_equal(pend_slot_reader(&r, NULL), 0);
	assert_int_equal(pend_slot_read(&r, buf, 5, 0, &stale), 5);
	assert_false(stale);
	assert_string_equal(buf, "hello");
	assert_int_equal(pend_slot_attr(&r, &a), 0);
	assert_int_equal(a.size, 5);
	assert_int_equal(pend_slot_write(&r, "x", 1, 0), -EBADF);	/* not a writer */
	/* an inode nobody writes here: no seat, the handle leases */
	pend_slot_init(&none, &m, 4242, 0);
	assert_int_equal(pend_slot_reader(&none, NULL), -ENOENT);
	assert_int_equal(pend_slot_read(&none, buf, 1, 0, &stale), -ENOENT);
	assert_int_equal(pend_slot_version(&none), 0);
	assert_int_equal(pend_slot_release(&none, 0), 0);
	assert_int_equal(pend_slot_release(&w, 0), 1);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(pend_slot_release(&r, 0), 1);
	itab_forget(m.tab, a.ino, 1);
}

static void test_resize_sync_zc(void **state)
{
	struct maru_file *f;
	struct pending *held;
	struct pend_slot s;
	struct maru_attr a;
	int direct, pending, writable;

	pend_slot_init(&s, &m, 0, 1);
	assert_int_equal(pend_slot_create(&s, 1, "c", 0644, 0, 0, O_WRONLY | O_CREAT, &a,
					  &direct), 0);
	assert_int_equal(pend_slot_fallocate(&s, 100), 0);
	assert_int_equal(pend_slot_truncate(&s, 10, &a), 0);
	assert_int_equal(a.size, 10);
	assert_int_equal(pend_slot_sync(&s), 0);
	assert_int_equal(pend_slot_zc_begin(&s, 1, &f, &pending, &writable, &held), 0);
	assert_true(pending && writable);
	assert_true(pend_marked(held, PM_MAPPED));
	pend_zc_end(held);
	assert_int_equal(pend_slot_release(&s, 1), 1);	/* failed: never published */
	assert_int_equal(fk.publishes, 0);
	itab_forget(m.tab, a.ino, 1);
}

static void test_killed_flush(void **state)
{
	struct pend_slot s;
	struct maru_attr a;
	int direct;

	pend_slot_init(&s, &m, 0, 1);
	assert_int_equal(pend_slot_create(&s, 1, "d", 0644, 0, 0, O_WRONLY | O_CREAT, &a,
					  &direct), 0);
	assert_int_equal(pend_slot_write(&s, "half", 4, 0), 4);
	assert_int_equal(pend_slot_flush(&s, 1), 0);
	assert_int_equal(fk.publishes, 0);
	pend_slot_release(&s, 0);	/* abandons what the killed writer left */
	assert_int_equal(fk.publishes, 0);
	assert_int_equal(m.cnt.abandons, 1);
	itab_forget(m.tab, a.ino, 1);
}

/*
 * A link cut mid-write, as libmaru reports it: part of a write landed and
 * the rest failed with ETIMEDOUT. Every later write, the fsync and the
 * close (flush) say ETIMEDOUT; nothing is published, ever, though a second
 * writer attached meanwhile flushes too.
 */
static void test_failed_write_poisons(void **state)
{
	struct pend_slot s, t;
	struct maru_attr a;
	int direct;

	pend_slot_init(&s, &m, 0, 1);
	assert_int_equal(pend_slot_create(&s, 1, "e", 0644, 0, 0, O_WRONLY | O_CREAT, &a,
					  &direct), 0);
	pend_slot_init(&t, &m, a.ino, 1);
	assert_int_equal(pend_slot_open(&t, O_WRONLY, &direct), 0);
	assert_int_equal(pend_slot_version(&t), pend_slot_version(&s));
	assert_int_equal(pend_slot_write(&s, "first MiB", 9, 0), 9);
	fk.pwrite_err = -ETIMEDOUT;
	fk.pwrite_part = 3;
	assert_int_equal(pend_slot_write(&s, "second", 6, 9), -ETIMEDOUT);
	assert_int_equal(pend_slot_write(&t, "more", 4, 15), -ETIMEDOUT);
	assert_int_equal(pend_slot_sync(&s), -ETIMEDOUT);
	assert_int_equal(pend_slot_flush(&t, 0), 0);	/* s is still active */
	assert_int_equal(pend_slot_flush(&s, 0), -ETIMEDOUT);
	assert_int_equal(fk.publishes, 0);
	assert_null(fake_named(1, "e"));
	assert_int_equal(pend_slot_release(&t, 0), 1);
	assert_int_equal(pend_slot_release(&s, 0), 1);
	assert_int_equal(fk.publishes, 0);
	assert_null(fake_named(1, "e"));
	itab_forget(m.tab, a.ino, 1);
}

/* An fsync or a truncate that failed in transfer poisons the version too. */
static void test_failed_sync_truncate_poison(void **state)
{
	struct pend_slot s;
	struct maru_attr a;
	int direct;

	pend_slot_init(&s, &m, 0, 1);
	assert_int_equal(pend_slot_create(&s, 1, "f", 0644, 0, 0, O_WRONLY | O_CREAT, &a,
					  &direct), 0);
	assert_int_equal(pend_slot_write(&s, "bytes", 5, 0), 5);
	fk.sync_err = -EIO;
	assert_int_equal(pend_slot_sync(&s), -EIO);
	assert_int_equal(pend_slot_sync(&s), -EIO);	/* every time */
	assert_int_equal(pend_slot_flush(&s, 0), -EIO);
	assert_int_equal(pend_slot_release(&s, 0), 1);
	itab_forget(m.tab, a.ino, 1);

	pend_slot_init(&s, &m, 0, 1);
	assert_int_equal(pend_slot_create(&s, 1, "g", 0644, 0, 0, O_WRONLY | O_CREAT, &a,
					  &direct), 0);
	assert_int_equal(pend_slot_write(&s, "bytes", 5, 0), 5);
	fk.truncate_err = -EINVAL;	/* refused: the version is as it was */
	assert_int_equal(pend_slot_truncate(&s, 2, &a), -EINVAL);
	fk.truncate_err = -ECONNRESET;	/* lost on the way: unknown */
	assert_int_equal(pend_slot_truncate(&s, 2, &a), -ECONNRESET);
	assert_int_equal(pend_slot_flush(&s, 0), -ECONNRESET);
	assert_int_equal(pend_slot_release(&s, 0), 1);
	assert_int_equal(fk.publishes, 0);
	assert_null(fake_named(1, "f"));
	assert_null(fake_named(1, "g"));
	itab_forget(m.tab, a.ino, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_write_flush_cow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_and_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resize_sync_zc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_poisons, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_sync_truncate_poison, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("fs/pendslot", tests, NULL, NULL);
}
