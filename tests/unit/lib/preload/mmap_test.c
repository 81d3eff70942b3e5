// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/preload/mmap_test.c: the shim's mmap (lib/preload/mmap.c):
 * a shared or private read-only mapping of a whole-page range is the
 * pool mapping's, munmap gives it back; an executable, private writable,
 * past-the-end or unaligned one goes to the kernel.
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

static void test_mmap(void **state)
{
	int fd = open(path, O_RDONLY);
	uint8_t *p;

	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 4096);
	assert_ptr_equal(p, fm.bytes + 4096);
	assert_int_equal(p[0], pool_byte(4096));
	assert_int_equal(munmap(p, 8192), 0);
	assert_int_equal(fm.unmaps, 1);
	/* a private read-only view is served too */
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_ptr_equal(p, fm.bytes);
	assert_int_equal(munmap(p, 4096), 0);
	/* the kernel's: executable, private writable, past the end, unaligned */
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED && p != fm.bytes);
	assert_int_equal(p[0], 'd');
	assert_int_equal(munmap(p, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED && p != fm.bytes);
	assert_int_equal(p[0], 'd');
	assert_int_equal(munmap(p, 4096), 0);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, FSIZE - 4096);
	assert_true(p != MAP_FAILED && p != fm.bytes + FSIZE - 4096);
	assert_int_equal(munmap(p, 8192), 0);
	assert_ptr_equal(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 100), MAP_FAILED);
	assert_int_equal(fm.unmaps, 3);		/* the two served, the one past the end */
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mmap, setup, teardown),
	};

	return cmocka_run_group_tests_name("preload/mmap", tests, NULL, NULL);
}
