/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/pendlife_test.c: fs/pendlife.c, the life of a pending
 * version with handles on it, against the fake libmaru: publish at the last
 * active writer's flush once data was written (else at release), never
 * after a failed write, for an unlinked name, a killed writer or an
 * untouched rewrite; a refused publish; an older pool generation; readers
 * keeping the bytes of an abandoned version; and a publish under way
 * winning over the name going or a handle failing meanwhile.
 */
#include <errno.h>
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
	assert_int_equal(fk.files_open, 0);	/* every file closed */
	return 0;
}

/* A new pending for (1, name) with one writer attached. */
static struct pending *new_writer(const char *name, uint64_t src, int modified, int *act)
{
	struct maru_file *f;
	struct pending *p;

	assert_int_equal(maru_file_create(NULL, 1, name, 0100644, 0, 0, 0, 0, &f), 0);
	p = pend_adopt(&m, f, 1, name, src, modified);
	assert_non_null(p);
	assert_int_equal(pend_attach_writer(p, 0, act), 0);
	return p;
}

static void write_text(struct pending *p, const char *text)
{
	assert_int_equal(pend_io_begin(p), 0);
	assert_int_equal(pend_write(p, text, strlen(text), 0), (ssize_t)strlen(text));
	pend_io_end(p);
}

static void test_publish_at_flush(void **state)
{
	struct maru_attr a;
	struct pending *p;
	int act;

	p = new_writer("a", 0, 1, &act);
	write_text(p, "hello");
	assert_int_equal(pend_set_active(p, &act, 0), 0);
	assert_int_equal(pend_finish(p, 1), 0);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(pend_state_of(p), PEND_PUBLISHED);
	pend_fail(p, -EIO, "a test");	/* refused: */
	assert_int_equal(pend_state_of(p), PEND_PUBLISHED);	/* final */
	assert_non_null(fake_named(1, "a"));
	assert_int_equal(fake_named(1, "a")->size, 5);
	assert_null(pend_of_name(&m, 1, "a"));	/* off the name table */
	assert_int_equal(pend_io_begin(p), -EAGAIN);	/* a write needs a new version */
	assert_int_equal(pend_attr(p, &a), 0);	/* still readable */
	assert_int_equal(a.size, 5);
	pend_release(p, 1, 0, &act, 0);
	assert_int_equal(fk.publishes, 1);	/* release does not publish again */
	assert_int_equal(m.cnt.publishes, 1);
	pend_put(p);
}

static void test_empty_flush_then_release(void **state)
{
	struct pending *p;
	int act;

	p = new_writer("b", 0, 1, &act);
	assert_int_equal(pend_set_active(p, &act, 0), 0);
	assert_int_equal(pend_finish(p, 1), 0);	/* no data yet: the shell's dup2 */
	assert_int_equal(fk.publishes, 0);
	assert_ptr_equal(pend_of_name(&m, 1, "b"), p);
	pend_put(p);
	pend_release(p, 1, 0, &act, 0);	/* the last writer goes: publish */
	assert_int_equal(fk.publishes, 1);
	pend_put(p);
}

static void test_failed_write_never_publishes(void **state)
{
	struct pending *p;
	int act;

	p = new_writer("c", 0, 1, &act);
	write_text(p, "part");
	pend_fail(p, -ENOSPC, "a test");
	assert_int_equal(pend_io_begin(p), -ENOSPC);
	pend_set_active(p, &act, 0);
	assert_int_equal(pend_finish(p, 1), -ENOSPC);
	assert_int_equal(fk.publishes, 0);
	assert_int_equal(m.cnt.abandons, 1);
	pend_release(p, 1, 0, &act, 0);
	assert_int_equal(fk.publishes, 0);
	pend_put(p);
}

static void test_unlinked_killed_untouched(void **state)
{
	struct pending *p;
	int act;

	p = new_writer("d", 0, 1, &act);
	write_text(p, "x");
	pend_unlinked(&m, 1, "d");
	assert_null(pend_of_name(&m, 1, "d"));
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);

	p = new_writer("e", 0, 1, &act);
	write_text(p, "x");
	pend_set_killed(p, 1);
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);

	p = new_writer("f", 55, 0, &act);	/* a rewrite nobody changed */
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);
	assert_int_equal(fk.publishes, 0);
	assert_int_equal(m.cnt.abandons, 3);
}

static void test_refused_publish(void **state)
{
	struct pending *p;
	int act;

	p = new_writer("i", 0, 1, &act);
	write_text(p, "x");
	pend_set_active(p, &act, 0);
	fk.publish_rc = -ENOENT;	/* the directory went away meanwhile */
	assert_int_equal(pend_finish(p, 1), 0);
	assert_int_equal(m.cnt.publish_failures, 1);
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);

	p = new_writer("j", 0, 1, &act);
	write_text(p, "x");
	pend_set_active(p, &act, 0);
	fk.publish_rc = -ENOSPC;
	assert_int_equal(pend_finish(p, 1), -ENOSPC);
	fk.publish_rc = 0;
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);
	assert_int_equal(fk.publishes, 0);
}

static void test_older_generation(void **state)
{
	struct maru_attr a;
	struct pending *p;
	int act;

	p = new_writer("k", 0, 1, &act);
	write_text(p, "x");
	fk.epoch++;	/* marud restarted */
	assert_true(pend_stale(p));
	assert_false(pend_live(p));
	assert_int_equal(pend_io_begin(p), -EIO);
	assert_int_equal(pend_attr(p, &a), -ENOENT);
	assert_int_equal(pend_sync(p), -EIO);
	pend_set_active(p, &act, 0);
	assert_int_equal(pend_finish(p, 1), -EIO);
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);
	assert_int_equal(fk.publishes, 0);
}

static void test_reader_keeps_abandoned_bytes(void **state)
{
	struct pending *p;
	char buf[8] = "";
	int act, ract;

	p = new_writer("l", 0, 1, &act);
	write_text(p, "kept");
	assert_int_equal(pend_attach_reader(p, &ract), 0);
	pend_unlinked(&m, 1, "l");
	pend_release(p, 1, 0, &act, 0);	/* abandoned: a reader is still there */
	assert_int_equal(fk.publishes, 0);
	assert_int_equal(pend_read(p, buf, sizeof(buf) - 1, 0), 4);
	assert_string_equal(buf, "kept");
	assert_int_equal(fk.files_open, 1);
	pend_unpin(p);	/* the last reader goes: the file closes */
	assert_int_equal(fk.files_open, 0);
	assert_int_equal(pend_read(p, buf, sizeof(buf), 0), -ENOENT);
	pend_put(p);
}

static const char *race_name;
static int race_fail;

/* As marud publishes: the name goes, or a dying handle fails the version. */
static void race_hook(void)
{
	struct pending *p = pend_of_name(&m, 1, race_name);

	if (race_fail && p)
		pend_fail(p, -EIO, "a test");
	else
		pend_unlinked(&m, 1, race_name);
	if (p)
		pend_put(p);
}

static void test_publish_under_way_wins(void **state)
{
	struct pending *p;
	int act;

	p = new_writer("r", 0, 1, &act);
	write_text(p, "x");
	pend_set_active(p, &act, 0);
	race_name = "r";
	race_fail = 0;
	fk.publish_hook = race_hook;
	assert_int_equal(pend_finish(p, 1), 0);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(pend_state_of(p), PEND_PUBLISHED);	/* not orphaned */
	assert_false(pend_live(p));
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);

	p = new_writer("s", 0, 1, &act);
	write_text(p, "y");
	pend_set_active(p, &act, 0);
	race_name = "s";
	race_fail = 1;
	assert_int_equal(pend_finish(p, 1), 0);
	fk.publish_hook = NULL;
	assert_int_equal(fk.publishes, 2);
	assert_int_equal(pend_state_of(p), PEND_PUBLISHED);	/* not failed */
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);
	assert_int_equal(m.cnt.abandons, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_publish_at_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_flush_then_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_never_publishes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlinked_killed_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_publish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_older_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_keeps_abandoned_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_publish_under_way_wins, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/pendlife", tests, NULL, NULL);
}
