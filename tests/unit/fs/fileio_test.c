/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/fileio_test.c: fs/fileio.c, file_read_full() against the
 * fake libmaru: short reads inside the file are continued until the range
 * is whole; the file's end stops it short; an error with nothing read is
 * the answer, an error after some bytes gives those bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"
#include "fileio.h"

static struct maru_file *f;

static int setup(void **state)
{
	fake_reset();
	f = fake_lease(fake_publish(1, "f", "0123456789abcdef"));
	return 0;
}

static int teardown(void **state)
{
	maru_file_close(f);
	assert_int_equal(fk.files_open, 0);
	return 0;
}

static void test_short_reads_continued(void **state)
{
	char buf[16];

	fk.pread_max = 3;	/* every pread gives three bytes at most */
	assert_int_equal(file_read_full(f, buf, 10, 2), 10);
	assert_memory_equal(buf, "23456789ab", 10);
}

static void test_end_of_file(void **state)
{
	char buf[32];

	fk.pread_max = 5;
	assert_int_equal(file_read_full(f, buf, sizeof(buf), 10), 6);
	assert_memory_equal(buf, "abcdef", 6);
	assert_int_equal(file_read_full(f, buf, 4, 16), 0);
	assert_int_equal(file_read_full(f, buf, 0, 0), 0);
}

static void test_errors(void **state)
{
	char buf[16];

	fk.pread_err = -EIO;	/* from the first call */
	assert_int_equal(file_read_full(f, buf, 8, 0), -EIO);
	fk.preads = 0;
	fk.pread_err_after = 2;	/* two short reads, then the error */
	fk.pread_max = 3;
	assert_int_equal(file_read_full(f, buf, 12, 0), 6);
	assert_memory_equal(buf, "012345", 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_short_reads_continued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_end_of_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/fileio", tests, NULL, NULL);
}
