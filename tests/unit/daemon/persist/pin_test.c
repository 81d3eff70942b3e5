/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/pin_test.c: TTL pins across a warm restart
 * (JR_PIN: daemon/dir/pinver.c writes it, record.c's walk puts every pin
 * in a checkpoint, replay.c applies it) over the journal fixture: a pin
 * comes back with its wall-clock deadline (not extended), an unpin and a
 * replace come back unpinned, a deadline that passed while "marud was
 * down" applies as nothing, a checkpoint keeps pins, and a cap lowered
 * between two starts refuses a replayed pin (counted as a record that did
 * not apply) while the name itself comes back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "dir.h"
#include "journal_fixture.h"

#define ROOT	DIR_ROOT_ID

static void reopen(struct wfx *f, struct persist_restore_stats *st)
{
	struct journal_scan sc;

	wclose(f);
	wopen(f, 1);
	memset(st, 0, sizeof(*st));
	assert_int_equal(persist_restore(f->p, f->pool, &sc, st), 0);
	assert_int_equal(dir_check(f->d), 0);
	dir_set_persist(f->d, f->p);
}

static uint64_t ino_of(struct wfx *f, const char *name)
{
	struct dir_attr at;

	assert_int_equal(dir_lookup(f->d, NULL, ROOT, name, strlen(name), &at), 0);
	return at.ino;
}

static uint32_t left_of(struct wfx *f, const char *name)
{
	uint32_t left = 99999;

	assert_int_equal(dir_pin_left(f->d, ino_of(f, name), &left), 0);
	return left;
}

static uint64_t pins(struct wfx *f)
{
	struct dir_stats st;

	dir_stats(f->d, &st);
	return st.pins;
}

static void test_pins_replay(void **state)
{
	struct timespec nap = { 1, 100 * 1000 * 1000 };
	struct persist_restore_stats st;
	struct wfx f;
	uint64_t a;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	a = wfx_put(&f, ROOT, "a", "pinned bytes");
	wfx_put(&f, ROOT, "b", "unpinned again");
	wfx_put(&f, ROOT, "c", "a short pin");
	wfx_put(&f, ROOT, "d", "replaced after its pin");
	assert_int_equal(dir_pin(f.d, a, 60, 0, NULL), 0);
	assert_int_equal(dir_pin(f.d, ino_of(&f, "b"), 60, 0, NULL), 0);
	assert_int_equal(dir_pin(f.d, ino_of(&f, "b"), 0, 0, NULL), 0);
	assert_int_equal(dir_pin(f.d, ino_of(&f, "c"), 1, 0, NULL), 0);
	assert_int_equal(dir_pin(f.d, ino_of(&f, "d"), 60, 0, NULL), 0);
	wfx_put(&f, ROOT, "d", "a new version");
	nanosleep(&nap, NULL);		/* c's deadline passes while "down" */
	reopen(&f, &st);
	assert_int_equal(st.skipped, 0);
	assert_true(ino_of(&f, "a") == a);
	assert_true(left_of(&f, "a") >= 58 && left_of(&f, "a") <= 59);	/* not extended */
	assert_int_equal(left_of(&f, "b"), 0);
	assert_int_equal(left_of(&f, "c"), 0);
	assert_int_equal(left_of(&f, "d"), 0);
	assert_int_equal(pins(&f), 1);
	wclose(&f);
	free(f.pool);
}

static void test_checkpoint_keeps_pins(void **state)
{
	struct persist_restore_stats st;
	struct wfx f;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	wfx_put(&f, ROOT, "a", "pinned bytes");
	wfx_put(&f, ROOT, "b", "pinned too");
	assert_int_equal(dir_pin(f.d, ino_of(&f, "a"), 100, 0, NULL), 0);
	assert_int_equal(dir_pin(f.d, ino_of(&f, "b"), 200, 0, NULL), 0);
	/* the checkpoint is now the whole journal: the pins must be in it */
	assert_int_equal(persist_checkpoint(f.p), 0);
	reopen(&f, &st);
	assert_int_equal(st.skipped, 0);
	assert_true(left_of(&f, "a") >= 99 && left_of(&f, "a") <= 100);
	assert_true(left_of(&f, "b") >= 199 && left_of(&f, "b") <= 200);
	/* and again, through a checkpoint of the restored directory */
	assert_int_equal(persist_checkpoint(f.p), 0);
	reopen(&f, &st);
	assert_int_equal(pins(&f), 2);
	wclose(&f);
	free(f.pool);
}

static void test_lowered_cap_refuses_a_replayed_pin(void **state)
{
	struct persist_restore_stats st;
	struct wfx f;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	wfx_put(&f, ROOT, "a", "pinned bytes");
	assert_int_equal(dir_pin(f.d, ino_of(&f, "a"), 100, 0, NULL), 0);
	wfx_pin_max_bytes = 0;
	reopen(&f, &st);
	wfx_pin_max_bytes = UINT64_MAX;
	assert_int_equal(st.skipped, 1);
	assert_int_equal(left_of(&f, "a"), 0);	/* the name is back, unpinned */
	assert_int_equal(pins(&f), 0);
	wclose(&f);
	free(f.pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pins_replay),
		cmocka_unit_test(test_checkpoint_keeps_pins),
		cmocka_unit_test(test_lowered_cap_refuses_a_replayed_pin),
	};

	return cmocka_run_group_tests_name("persist_pin", tests, NULL, NULL);
}
