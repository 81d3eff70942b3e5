/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/pending_test.c: fs/pending.c, the pending version's
 * references, names and states against the fake libmaru: every edge of the
 * state diagram is taken and every other move refused (the state left as
 * it was); an unlinked name orphans a writing version (still writable,
 * never published) and leaves a failed one failed; one pending per name,
 * renamed with its name, also while the name table grows; and the one place a pending's size is read.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
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

/* The diagram of pending.c, written out again: from, to. */
static const int edges[][2] = {
	{ PEND_WRITING, PEND_ORPHANED }, { PEND_WRITING, PEND_FAILED },
	{ PEND_WRITING, PEND_PUBLISHED }, { PEND_WRITING, PEND_ABANDONED },
	{ PEND_ORPHANED, PEND_FAILED }, { PEND_ORPHANED, PEND_ABANDONED },
	{ PEND_FAILED, PEND_ABANDONED },
	/* a publish under way wins over a name gone or a handle failed */
	{ PEND_ORPHANED, PEND_PUBLISHED }, { PEND_FAILED, PEND_PUBLISHED },
};

static int is_edge(int from, int to)
{
	size_t i;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		if (edges[i][0] == from && edges[i][1] == to)
			return 1;
	return 0;
}

static void test_state_moves(void **state)
{
	struct maru_file *f;
	struct pending *p;
	int from, to, legal = 0;

	assert_int_equal(maru_file_create(NULL, 1, "s", 0100644, 0, 0, 0, 0, &f), 0);
	p = pend_adopt(&m, f, 1, "s", 0, 1);
	assert_int_equal(pend_state_of(p), PEND_WRITING);	/* where every one starts */
	for (from = 0; from < PEND_NSTATES; from++) {
		for (to = 0; to < PEND_NSTATES; to++) {
			p->state = from;
			assert_int_equal(pend_move_legal(from, to), is_edge(from, to));
			if (is_edge(from, to)) {
				assert_int_equal(pend_move(p, to), 0);
				assert_int_equal(pend_state_of(p), to);
				legal++;
			} else {
				assert_int_equal(pend_move(p, to), -EINVAL);
				assert_int_equal(pend_state_of(p), from);	/* untouched */
			}
		}
	}
	assert_int_equal(legal, 9);
	assert_int_equal(pend_move(p, PEND_NSTATES), -EINVAL);	/* no such state */
	assert_int_equal(pend_move(p, -1), -EINVAL);
	assert_string_equal(pend_state_name(PEND_ORPHANED), "orphaned");
	p->state = PEND_ABANDONED;
	pend_put(p);
}

static void test_unlink_orphans(void **state)
{
	struct pending *p;
	int act;

	p = new_writer("o", 0, 1, &act);
	write_text(p, "x");
	pend_unlinked(&m, 1, "o");
	assert_int_equal(pend_state_of(p), PEND_ORPHANED);
	assert_true(pend_live(p));	/* a dup'd descriptor still writes it */
	write_text(p, "yy");
	pend_fail(p, -ENOSPC, "a test");
	assert_int_equal(pend_state_of(p), PEND_FAILED);
	assert_int_equal(pend_io_begin(p), -ENOSPC);
	pend_release(p, 1, 0, &act, 0);
	assert_int_equal(pend_state_of(p), PEND_ABANDONED);
	assert_int_equal(fk.publishes, 0);
	pend_put(p);

	/* a failed version stays failed when its name goes */
	p = new_writer("o2", 0, 1, &act);
	pend_fail(p, -EIO, "a test");
	pend_unlinked(&m, 1, "o2");
	assert_int_equal(pend_state_of(p), PEND_FAILED);
	assert_null(pend_of_name(&m, 1, "o2"));
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);

	/* renamed over: the target's version is orphaned, the source moves */
	p = new_writer("o3", 0, 1, &act);
	pend_renamed(&m, 1, "o4", 1, "o3");
	assert_int_equal(pend_state_of(p), PEND_ORPHANED);
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);
	assert_int_equal(fk.publishes, 0);
}

static void test_one_pending_per_name(void **state)
{
	struct maru_file *f;
	struct pending *p, *q;
	char name[16];
	uint64_t parent;
	int act;

	p = new_writer("g", 0, 1, &act);
	assert_int_equal(maru_file_create(NULL, 1, "g", 0100644, 0, 0, 0, 0, &f), 0);
	q = pend_adopt(&m, f, 1, "g", 0, 1);	/* another thread lost the race */
	assert_ptr_equal(q, p);
	pend_put(q);
	assert_int_equal(pend_count(&m), 1);
	pend_renamed(&m, 1, "g", 2, "h");
	assert_null(pend_of_name(&m, 1, "g"));
	q = pend_of_name(&m, 2, "h");
	assert_ptr_equal(q, p);
	pend_put(q);
	assert_int_equal(pend_where(p, &parent, name, sizeof(name)), 0);
	assert_int_equal(parent, 2);
	assert_string_equal(name, "h");
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);
	assert_int_equal(pend_count(&m), 0);
}

/* More names than the table starts with: it grows, every one stays found. */
static void test_many_names(void **state)
{
	enum { N = 3 * PTAB_MIN };
	struct pending *p[N], *q;
	char name[16];
	int i, act;

	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		p[i] = new_writer(name, 0, 1, &act);
	}
	assert_int_equal(pend_count(&m), N);
	for (i = 0; i < N; i += 2) {
		snprintf(name, sizeof(name), "n%d", i);
		pend_renamed(&m, 1, name, 3, name);
	}
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		q = pend_of_name(&m, i % 2 ? 1 : 3, name);
		assert_ptr_equal(q, p[i]);
		pend_put(q);
		assert_null(pend_of_name(&m, i % 2 ? 3 : 1, name));
	}
	for (i = 0; i < N; i++) {
		pend_release(p[i], 1, 0, &act, 0);
		pend_put(p[i]);
	}
	assert_int_equal(pend_count(&m), 0);
}

static void test_size_overlay(void **state)
{
	uint64_t src = fake_publish(1, "m", "old!");
	struct maru_attr a;
	struct pending *p;
	int act;

	p = new_writer("m", src, 1, &act);
	write_text(p, "a longer text");
	assert_int_equal(pend_ino_attr(&m, src, &a), 0);	/* not linked: marud's */
	assert_int_equal(a.size, 4);
	itab_remember(m.tab, src, 1, "m");
	pend_link_ino(&m, src, p);
	assert_int_equal(pend_ino_attr(&m, src, &a), 0);	/* this mount's pending */
	assert_int_equal(a.size, 13);
	assert_int_equal(a.ino, pend_ino(p));
	assert_int_equal(pend_truncate(p, 2, 1), 0);
	assert_int_equal(pend_ino_attr(&m, src, &a), 0);
	assert_int_equal(a.size, 2);
	assert_int_equal(pend_reserve(p, 1 << 16), 0);
	assert_int_equal(fake_ver(pend_ino(p))->reserved, 1 << 16);
	pend_release(p, 1, 0, &act, 0);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(pend_reserve(p, 1), -EPERM);	/* published: immutable */
	itab_forget(m.tab, src, 1);
	pend_put(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_moves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_orphans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_pending_per_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_overlay, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/pending", tests, NULL, NULL);
}
