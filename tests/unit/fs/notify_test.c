/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/notify_test.c: fs/notify.c, the invalidation queue: jobs run
 * in order on the notifier thread, a waiting handler returns once its job
 * was sent, "drop everything" covers the dentry table and every inode,
 * calls run behind the invalidations, expectations are met by the event of
 * their own name (and only while the stream is up), and a NULL notifier
 * accepts every call.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dcache.h"
#include "fake.h"
#include "inode.h"
#include "notify.h"

static struct mfs m;

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	assert_int_equal(notify_start(m.nt), 0);
	return 0;
}

static int teardown(void **state)
{
	fake_unmount(&m);
	return 0;
}

/* Returns once every job queued before it ran. */
static void sync_queue(void)
{
	notify_inval_entry(m.nt, 1, "sync", 1);
}

static void test_entry_waits_until_sent(void **state)
{
	notify_inval_entry(m.nt, 1, "a", 1);
	assert_int_equal(fk.inval_entries, 1);
	assert_string_equal(fk.last_inval, "a");
	assert_int_equal(m.cnt.inval_entry, 1);
	notify_inval_inode(m.nt, 77);
	sync_queue();
	assert_int_equal(fk.inval_inodes, 1);
	assert_int_equal(m.cnt.inval_inode, 1);
}

static void test_inval_all(void **state)
{
	dcache_note(m.dc, 1, "x", 10);
	dcache_note(m.dc, 1, "y", 10);
	itab_remember(m.tab, 50, 1, "x");
	notify_inval_all(m.nt);
	sync_queue();
	assert_int_equal(fk.inval_entries, 3);	/* x, y, then "sync" */
	assert_int_equal(fk.inval_inodes, 2);	/* 50 and the root */
	assert_int_equal(dcache_count(m.dc), 0);
	itab_forget(m.tab, 50, 1);
}

static void call_fn(void *arg, uint64_t val)
{
	*(uint64_t *)arg = val + (uint64_t)fk.inval_entries;
}

static void test_call_runs_in_order(void **state)
{
	uint64_t got = 0;

	notify_inval_entry(m.nt, 1, "before", 0);
	notify_call(m.nt, call_fn, &got, 100);
	sync_queue();
	assert_int_equal(got, 101);	/* after the one entry queued before it */
}

static void test_expectations(void **state)
{
	struct ev_expect *w;

	assert_null(notify_expect(m.nt, 1, "p"));	/* no stream yet */
	notify_stream_up(m.nt, 1);
	w = notify_expect(m.nt, 1, "p");
	assert_non_null(w);
	notify_name_changed(m.nt, 1, "other", 1);
	notify_name_changed(m.nt, 1, "p", 1);
	assert_int_equal(notify_expect_wait(m.nt, w, 1), 1);
	assert_string_equal(fk.last_inval, "p");	/* applied: sent already */

	w = notify_expect(m.nt, 1, "q");
	notify_name_changed(m.nt, 1, "q", 0);	/* a removal meets nobody */
	assert_int_equal(notify_expect_wait(m.nt, w, 0), 0);	/* bounded wait */

	w = notify_expect(m.nt, 1, "r");
	notify_expect_cancel(m.nt, w);
	notify_stream_up(m.nt, 0);
	assert_null(notify_expect(m.nt, 1, "s"));
}

static void test_null_notifier(void **state)
{
	notify_inval_entry(NULL, 1, "a", 1);
	notify_inval_inode(NULL, 1);
	notify_inval_all(NULL);
	notify_name_changed(NULL, 1, "a", 1);
	assert_null(notify_expect(NULL, 1, "a"));
	assert_int_equal(notify_expect_wait(NULL, NULL, 1), 0);
	notify_expect_cancel(NULL, NULL);
	assert_int_equal(fk.inval_entries, 0);
}

static void test_stop_frees_queued(void **state)
{
	notify_stop(m.nt);
	notify_inval_entry(m.nt, 1, "late", 1);	/* queued, never sent, freed */
	notify_inval_all(m.nt);
	assert_int_equal(fk.inval_entries, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_entry_waits_until_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inval_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_runs_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expectations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_notifier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_frees_queued, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/notify", tests, NULL, NULL);
}
