// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/preload/preload_test.c: the shim's set-up
 * (lib/preload/preload.c), which reads its environment once: with
 * MARU_PRELOAD_MIN=64K (set by meson) a read of 64 KiB is served from the
 * mapping and one byte less goes to the disk; run with the argument "off"
 * (and MARU_PRELOAD=0) nothing is served, read or mmap, and libmaru is
 * never asked.
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

static void test_min_from_env(void **state)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, MIN_READ - 1, 4096), MIN_READ - 1);
	assert_true(all('d', MIN_READ - 1));
	assert_int_equal(pread(fd, buf, MIN_READ, 4096), MIN_READ);
	assert_true(from_pool(4096, MIN_READ));
	assert_int_equal(fm.maps, 1);
	close(fd);
}

static void test_off(void **state)
{
	int fd = open(path, O_RDONLY);
	uint8_t *p;

	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(all('d', 128 << 10));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED && p != fm.bytes);
	assert_int_equal(munmap(p, 4096), 0);
	assert_int_equal(fm.calls, 0);
	close(fd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest on[] = {
		cmocka_unit_test_setup_teardown(test_min_from_env, setup, teardown),
	};
	const struct CMUnitTest off[] = {
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
	};

	if (argc > 1 && !strcmp(argv[1], "off"))
		return cmocka_run_group_tests_name("preload (MARU_PRELOAD=0)", off, NULL, NULL);
	return cmocka_run_group_tests_name("preload", on, NULL, NULL);
}
