// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/preload/read_test.c: the shim's reads (lib/preload/read.c).
 * A file the fake maps answers reads of at least MARU_PRELOAD_MIN (64 KiB,
 * set by meson) with the mapping's bytes, not the disk's: read and readv
 * move the offset, pread and preadv do not, nothing past the size; smaller
 * reads go to the disk; a mapping whose check fails goes to the disk, then
 * for good.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

static void test_reads_served(void **state)
{
	struct iovec v[2] = { { buf, 40 << 10 }, { buf + (40 << 10), 40 << 10 } };
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(from_pool(0, 128 << 10));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 128 << 10);
	assert_int_equal(read(fd, buf, MIN_READ), MIN_READ);
	assert_true(from_pool(128 << 10, MIN_READ));
	/* small: the disk, at the offset the served reads left */
	assert_int_equal(read(fd, buf, 100), 100);
	assert_true(all('d', 100));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (128 << 10) + MIN_READ + 100);
	/* pread: at its offset, the file offset untouched */
	assert_int_equal(pread(fd, buf, 100 << 10, 500 << 10), 100 << 10);
	assert_true(from_pool(500 << 10, 100 << 10));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (128 << 10) + MIN_READ + 100);
	assert_int_equal(pread(fd, buf, 128 << 10, FSIZE - 10), 10);
	assert_true(from_pool(FSIZE - 10, 10));
	assert_int_equal(pread(fd, buf, 128 << 10, FSIZE), 0);
	/* readv and preadv over two buffers */
	assert_int_equal(lseek(fd, 4096, SEEK_SET), 4096);
	assert_int_equal(readv(fd, v, 2), 80 << 10);
	assert_true(from_pool(4096, 80 << 10));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 4096 + (80 << 10));
	assert_int_equal(preadv(fd, v, 2, 8192), 80 << 10);
	assert_true(from_pool(8192, 80 << 10));
	assert_int_equal(fm.maps, 1);		/* one mapping per open */
	close(fd);
}

static void test_check_fails(void **state)
{
	int fd = open(path, O_RDONLY);

	fm.check_rc = -ESTALE;
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('d', 128 << 10));
	fm.check_rc = 0;			/* for good: no more from this mapping */
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('d', 128 << 10));
	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(all('d', 128 << 10));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reads_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_fails, setup, teardown),
	};

	return cmocka_run_group_tests_name("preload/read", tests, NULL, NULL);
}
