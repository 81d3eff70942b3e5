/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/pendio_test.c: fs/pendio.c, I/O on a pending version
 * against the fake libmaru: a write that fails moves the version to FAILED
 * and every later write gets its error; the marks writes, truncates and
 * mappings leave (and the killed mark set and cleared); fallocate extends
 * the size; reads and the file handed to fn stop once nothing is readable;
 * and the zero-copy pin tells each state apart.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"
#include "notify.h"
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

static struct pending *new_writer(const char *name, uint64_t src, int *act)
{
	struct maru_file *f;
	struct pending *p;

	assert_int_equal(maru_file_create(NULL, 1, name, 0100644, 0, 0, 0, 0, &f), 0);
	p = pend_adopt(&m, f, 1, name, src, 0);
	assert_non_null(p);
	assert_int_equal(pend_attach_writer(p, 0, act), 0);
	return p;
}

static void test_failed_write_fails_version(void **state)
{
	static char big[80 * 1024];	/* past what a fake version holds */
	struct pending *p;
	int act;

	p = new_writer("a", 0, &act);
	assert_int_equal(pend_io_begin(p), 0);
	assert_int_equal(pend_write(p, big, sizeof(big), 0), -ENOSPC);
	pend_io_end(p);
	assert_int_equal(pend_state_of(p), PEND_FAILED);
	assert_int_equal(pend_io_begin(p), -ENOSPC);	/* every later write */
	assert_int_equal(pend_truncate(p, 0, 1), -ESTALE);	/* not live */
	assert_int_equal(pend_reserve(p, 10), -EPERM);
	pend_release(p, 1, 0, &act, 0);
	assert_int_equal(fk.publishes, 0);
	pend_put(p);
}

static void test_marks(void **state)
{
	struct maru_attr a;
	struct pending *p;
	int act;

	assert_int_equal(notify_start(m.nt), 0);
	p = new_writer("b", 77, &act);
	assert_int_equal(p->marks, 0);
	assert_int_equal(pend_truncate(p, 0, 0), 0);	/* an O_TRUNC: not data */
	assert_true(pend_marked(p, PM_MODIFIED));
	assert_false(pend_marked(p, PM_WROTE));
	assert_int_equal(pend_io_begin(p), 0);
	assert_int_equal(pend_write(p, "abc", 3, 0), 3);
	assert_true(pend_marked(p, PM_WROTE));
	assert_int_equal(pend_truncate_held(p, 2, &a), 0);
	assert_int_equal(a.size, 2);
	assert_int_equal(pend_fallocate_held(p, 4000), 0);	/* mode 0 extends */
	assert_int_equal(fake_ver(pend_ino(p))->size, 4000);
	assert_int_equal(fake_ver(pend_ino(p))->reserved, 4000);
	assert_ptr_equal(pend_file_held(p), p->file);
	pend_io_end(p);
	pend_mapped(p);
	pend_direct_wrote(p);
	assert_true(pend_marked(p, PM_MAPPED));
	assert_true(pend_marked(p, PM_DIRECT));
	pend_set_killed(p, 1);	/* a rewrite that wrote: old pages dropped */
	assert_true(pend_marked(p, PM_KILLED));
	assert_int_equal(fk.inval_inodes, 1);
	pend_set_killed(p, 0);	/* a live writer flushed after it */
	assert_false(pend_marked(p, PM_KILLED));
	assert_int_equal(pend_sync(p), 0);
	pend_release(p, 1, 0, &act, 1);
	pend_put(p);
	notify_stop(m.nt);
}

static int file_fn(void *arg, struct maru_file *f)
{
	*(int *)arg += 1;
	return 7;
}

static void test_reads_and_zero_copy(void **state)
{
	struct maru_file *f;
	struct pending *p;
	int act, ract, pending, writable, calls = 0;
	char buf[8] = "";

	p = new_writer("c", 0, &act);
	assert_int_equal(pend_io_begin(p), 0);
	assert_int_equal(pend_write(p, "data", 4, 0), 4);
	pend_io_end(p);
	assert_int_equal(pend_read(p, buf, 4, 0), 4);
	assert_memory_equal(buf, "data", 4);
	assert_int_equal(pend_with_file(p, file_fn, &calls), 7);
	assert_int_equal(calls, 1);
	assert_int_equal(pend_zc_begin(p, 1, &f, &pending, &writable), 0);
	pend_io_end(p);
	assert_true(pending && writable);
	pend_fail(p, -EIO, "a test");
	assert_int_equal(pend_zc_begin(p, 1, &f, &pending, &writable), 0);
	pend_io_end(p);
	assert_true(pending && !writable);	/* failed: readable, not writable */
	assert_int_equal(pend_attach_reader(p, &ract), 0);
	pend_release(p, 1, 0, &act, 0);	/* abandoned, the reader left */
	assert_int_equal(pend_zc_begin(p, 0, &f, &pending, &writable), -ENOENT);
	assert_int_equal(pend_read(p, buf, 4, 0), 4);	/* still its bytes */
	pend_unpin(p);
	assert_int_equal(pend_read(p, buf, 4, 0), -ENOENT);
	assert_int_equal(pend_with_file(p, file_fn, &calls), -ENOENT);
	assert_int_equal(calls, 1);
	fk.epoch++;
	assert_int_equal(pend_zc_begin(p, 0, &f, &pending, &writable), -EIO);
	pend_put(p);
}

static void test_published_is_readonly(void **state)
{
	struct maru_file *f;
	struct pending *p;
	int act, pending, writable;

	p = new_writer("d", 0, &act);
	assert_int_equal(pend_io_begin(p), 0);
	assert_int_equal(pend_write(p, "x", 1, 0), 1);
	pend_io_end(p);
	pend_set_active(p, &act, 0);
	assert_int_equal(pend_finish(p, 1), 0);
	assert_int_equal(pend_io_begin(p), -EAGAIN);	/* a new version, please */
	assert_int_equal(pend_sync(p), 0);	/* nothing to sync any more */
	assert_int_equal(pend_zc_begin(p, 1, &f, &pending, &writable), 0);
	pend_io_end(p);
	assert_false(pending);
	assert_false(writable);
	pend_release(p, 1, 0, &act, 0);
	pend_put(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_failed_write_fails_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_and_zero_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_published_is_readonly, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/pendio", tests, NULL, NULL);
}
