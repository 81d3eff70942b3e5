/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/record_test.c: the writing side
 * (daemon/persist/record.c). A full metadata area refuses new names with
 * ENOSPC (counted in the directory's stats) and takes them again once
 * names are removed; the first id handed out writes an id mark a batch
 * above it, and no other until the batch is used; a removal recorded
 * while the half is full follows the checkpoint it triggers, so a restart
 * does not bring the name back; without a journal every call is a no-op.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "journal_fixture.h"

#define ROOT	DIR_ROOT_ID

struct seen {
	uint32_t n[16];
	uint64_t ids;		/* the last JR_IDS mark */
};

static int count(void *arg, uint32_t type, const void *body, uint32_t blen)
{
	struct seen *s = arg;
	struct persist_item it;

	if (type < 16)
		s->n[type]++;
	if (type == JR_IDS && !persist_dec(type, body, blen, &it))
		s->ids = it.id;
	return 0;
}

static void scan(struct wfx *f, struct seen *s)
{
	struct journal_scan sc;

	memset(s, 0, sizeof(*s));
	assert_int_equal(persist_journal_scan(f->j, count, s, &sc), 0);
}

static void test_full_area_refuses_then_takes_again(void **state)
{
	struct dir_attr at;
	struct dir_stats ds;
	char name[64];
	struct wfx f;
	int i, n = 0, rc = 0;

	/* two halves of 32 KiB: a few hundred names fit */
	wnew(&f, 64 << 10, 16 << 20, 1);
	for (i = 0; i < 5000 && !rc; i++) {
		snprintf(name, sizeof(name), "a-rather-long-name-to-fill-the-area-%05d", i);
		rc = dir_mkdir(f.d, ROOT, name, strlen(name), 0755, 0, 0, &at);
		if (!rc)
			n++;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 50);
	dir_stats(f.d, &ds);
	assert_true(ds.enospc >= 1);
	/* remove half: a checkpoint then makes room again */
	for (i = 0; i < n / 2; i++) {
		snprintf(name, sizeof(name), "a-rather-long-name-to-fill-the-area-%05d", i);
		assert_int_equal(dir_rmdir(f.d, ROOT, name, strlen(name)), 0);
	}
	assert_int_equal(dir_mkdir(f.d, ROOT, "again", 5, 0755, 0, 0, &at), 0);
	wclose(&f);
	free(f.pool);
}

static void test_id_mark_once_per_batch(void **state)
{
	struct seen s;
	struct wfx f;
	uint64_t ino;

	wnew(&f, 1 << 20, 4 << 20, 1);
	scan(&f, &s);
	assert_int_equal(s.n[JR_IDS], 1);	/* the checkpoint's */
	ino = wfx_put(&f, ROOT, "a", "1");
	wfx_put(&f, ROOT, "b", "2");
	scan(&f, &s);
	/* the checkpoint's mark still covers these ids: no new one */
	assert_int_equal(s.n[JR_IDS], 1);
	assert_true(s.ids > ino);
	assert_int_equal(s.n[JR_FILE], 2);
	wclose(&f);
	free(f.pool);
}

static void test_removal_follows_the_checkpoint(void **state)
{
	struct persist_restore_stats st;
	struct journal_scan sc;
	struct dir_attr at;
	char name[32];
	struct wfx f;
	int i;

	wnew(&f, 64 << 10, 16 << 20, 1);
	wfx_put(&f, ROOT, "victim", "v");
	/* fill the half with replaces until the next removal must checkpoint */
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "r%d", i % 4);
		wfx_put(&f, ROOT, name, "x");
	}
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "victim", 6), 0);
	wclose(&f);
	wopen(&f, 1);
	assert_int_equal(persist_restore(f.p, f.pool, &sc, &st), 0);
	assert_int_equal(dir_lookup(f.d, f.s, ROOT, "victim", 6, &at), -ENOENT);
	assert_int_equal(dir_lookup(f.d, f.s, ROOT, "r3", 2, &at), 0);
	wclose(&f);
	free(f.pool);
}

static void test_no_journal_is_a_noop(void **state)
{
	struct persist_item it = { .type = JR_REMOVE, .id = 5 };
	struct persist_stats ps;

	persist_write(NULL, &it, "unlink", 1);
	persist_write_file(NULL, &it, "publish");
	persist_ids(NULL, 100);
	assert_int_equal(persist_room(NULL, JR_FILE, 10, 1, 0, 0), 0);
	persist_stats(NULL, &ps);
	assert_int_equal(ps.sync + ps.bg + ps.failed, 0);
	assert_null(persist_journal(NULL));
	persist_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_area_refuses_then_takes_again),
		cmocka_unit_test(test_id_mark_once_per_batch),
		cmocka_unit_test(test_removal_follows_the_checkpoint),
		cmocka_unit_test(test_no_journal_is_a_noop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
