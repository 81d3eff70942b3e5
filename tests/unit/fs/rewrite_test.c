/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/rewrite_test.c: fs/rewrite.c, where a pending version comes
 * from, against the fake libmaru: a write-open joins this mount's live
 * pending of the inode or starts a rewrite (a copy of the published bytes,
 * or empty with O_TRUNC); a stale inode is served from what its name holds
 * now; a create makes the name's first pending, joins one, or refuses
 * O_EXCL; copy-on-write joins the name's live pending, rewrites what is
 * published, or makes a private orphaned copy when the name moved on; a
 * truncate with no writer here truncates this mount's pending or publishes
 * a new version at once.
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
#include "notify.h"
#include "pending_priv.h"
#include "rewrite.h"

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

/* Let go of a pending nobody attached to: abandon it unpublished. */
static void drop(struct pending *p)
{
	int act;

	assert_int_equal(pend_attach_writer(p, 0, &act), 0);
	pend_release(p, 1, 0, &act, 1);
	pend_put(p);
}

static void test_open_rewrites_or_joins(void **state)
{
	uint64_t ino = fake_publish(1, "a", "published");
	struct pending *p, *q;
	int moved = 0;
	char buf[16] = "";

	itab_remember(m.tab, ino, 1, "a");
	assert_int_equal(rewrite_for_open(&m, ino, 0, &p, &moved), 0);
	assert_false(moved);
	assert_int_equal(fk.rewrites, 1);
	assert_int_equal(p->src_ino, ino);
	assert_false(pend_marked(p, PM_MODIFIED));	/* a copy, unchanged yet */
	assert_int_equal(pend_read(p, buf, sizeof(buf) - 1, 0), 9);
	assert_string_equal(buf, "published");
	/* the second writer joins it: linked to the inode, no new rewrite */
	assert_int_equal(rewrite_for_open(&m, ino, 1, &q, &moved), 1);	/* has bytes */
	assert_ptr_equal(q, p);
	assert_int_equal(fk.rewrites, 1);
	pend_put(q);
	drop(p);
	itab_forget(m.tab, ino, 1);
}

static void test_open_trunc_and_stale(void **state)
{
	uint64_t old = fake_publish(1, "b", "old"), now;
	struct pending *p;
	int moved = 0;

	assert_int_equal(notify_start(m.nt), 0);
	itab_remember(m.tab, old, 1, "b");
	assert_int_equal(rewrite_for_open(&m, old, 1, &p, &moved), 0);	/* empty already */
	assert_int_equal(fake_ver(pend_ino(p))->size, 0);
	assert_true(pend_marked(p, PM_MODIFIED));
	drop(p);
	/* the name was replaced since the kernel looked it up */
	now = fake_publish(1, "b", "newer");
	fake_ver(old)->published = 0;
	assert_int_not_equal(now, old);
	assert_int_equal(rewrite_for_open(&m, old, 0, &p, &moved), 0);
	assert_true(moved);	/* served under the old inode: direct_io */
	assert_int_equal(fake_ver(pend_ino(p))->size, 5);
	notify_inval_entry(m.nt, 9, "sync", 1);	/* waits for those before it */
	assert_int_equal(fk.inval_entries, 2);	/* the stale entry dropped, sync */
	drop(p);
	itab_forget(m.tab, old, 1);
	notify_stop(m.nt);
}

static void test_create(void **state)
{
	struct pending *p, *q;

	assert_int_equal(rewrite_for_create(&m, 1, "c", 0644, 0, 0, O_CREAT | O_TRUNC, &p), 0);
	assert_int_equal(fk.creates, 1);
	assert_true(pend_marked(p, PM_MODIFIED));
	assert_int_equal(pend_of_name(&m, 1, "c"), p);
	pend_put(p);
	/* joins this mount's pending; truncates it once attached */
	assert_int_equal(rewrite_for_create(&m, 1, "c", 0644, 0, 0, O_CREAT | O_TRUNC, &q), 1);
	assert_ptr_equal(q, p);
	pend_put(q);
	assert_int_equal(rewrite_for_create(&m, 1, "c", 0644, 0, 0, O_CREAT | O_EXCL, &q),
			 -EEXIST);
	drop(p);
	/* without O_TRUNC a published file keeps its bytes */
	fake_publish(1, "d", "kept");
	assert_int_equal(rewrite_for_create(&m, 1, "d", 0644, 0, 0, O_CREAT, &p), 0);
	assert_int_equal(fake_ver(pend_ino(p))->size, 4);
	drop(p);
}

static void test_cow(void **state)
{
	uint64_t ino = fake_publish(1, "e", "v1");
	struct pending *old, *p, *q;
	char buf[8] = "";
	int act;

	itab_remember(m.tab, ino, 1, "e");
	assert_int_equal(rewrite_for_open(&m, ino, 0, &old, &act), 0);
	assert_int_equal(pend_attach_writer(old, 0, &act), 0);
	assert_int_equal(rewrite_for_open(&m, ino, 0, &q, &act), 0);
	/* the name has a live pending (old itself): cow joins it */
	assert_int_equal(rewrite_for_cow(&m, old, 1, &p), 0);
	assert_ptr_equal(p, old);
	pend_put(p);
	pend_put(q);
	assert_int_equal(pend_io_begin(old), 0);
	assert_int_equal(pend_write(old, "v2", 2, 0), 2);
	pend_io_end(old);
	pend_set_active(old, &act, 0);
	assert_int_equal(pend_finish(old, 1), 0);	/* published */
	/* published meanwhile: a fresh rewrite of it */
	assert_int_equal(rewrite_for_cow(&m, old, 1, &p), 0);
	assert_int_not_equal(pend_ino(p), pend_ino(old));
	assert_int_equal(p->src_ino, pend_ino(old));
	assert_int_equal(m.cnt.cow_rewrites, 1);
	drop(p);
	/* the name moved on: a private copy, orphaned from the start */
	assert_int_equal(maru_unlink(NULL, 1, "e"), 0);
	assert_int_equal(rewrite_for_cow(&m, old, 2, &p), 0);
	assert_int_equal(pend_state_of(p), PEND_ORPHANED);
	assert_false(pend_has_name(p));
	assert_int_equal(pend_read(p, buf, sizeof(buf) - 1, 0), 2);
	assert_string_equal(buf, "v2");
	drop(p);
	pend_release(old, 1, 0, &act, 0);
	pend_put(old);
	itab_forget(m.tab, ino, 1);
}

static void test_truncate(void **state)
{
	uint64_t ino = fake_publish(1, "f", "twelve bytes");
	struct maru_attr a;
	struct pending *p;
	int moved;

	itab_remember(m.tab, ino, 1, "f");
	/* nobody writes it here: a new version, published at once */
	assert_int_equal(pend_truncate_ino(&m, ino, 3, &a), 0);
	assert_int_equal(a.size, 3);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(fake_named(1, "f")->size, 3);
	/* this mount writes it: its pending is truncated, nothing published */
	ino = fake_named(1, "f")->ino;
	itab_remember(m.tab, ino, 1, "f");
	assert_int_equal(rewrite_for_open(&m, ino, 0, &p, &moved), 0);
	assert_int_equal(pend_truncate_ino(&m, ino, 1, &a), 0);
	assert_int_equal(a.size, 1);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(fake_ver(pend_ino(p))->size, 1);
	drop(p);
	itab_forget(m.tab, ino, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_rewrites_or_joins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_trunc_and_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncate, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/rewrite", tests, NULL, NULL);
}
