// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/preload/cache_test.c: the shim's read cache
 * (lib/preload/cache.c): O_RDWR descriptors are not even asked about, a
 * file the fake does not map is asked about once ("not ours" is kept), a
 * pending file's mapping is let go; one mapping per open, kept at close for
 * the next open of the same version (not for a changed one); dup2 onto a
 * descriptor forgets its entry; a fork child is served on its own.
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

#include "maru/libmaru.h"

#include "fixture.h"

static void test_not_served(void **state)
{
	int fd = open(path, O_RDWR), o;

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(all('d', 128 << 10));
	close(fd);
	assert_int_equal(fm.calls, 0);		/* not even asked */
	o = open(other, O_RDONLY);
	assert_true(o >= 0);
	assert_int_equal(read(o, buf, 128 << 10), 128 << 10);
	assert_true(all('o', 128 << 10));
	assert_int_equal(read(o, buf, 128 << 10), 128 << 10);
	assert_int_equal(fm.calls, 1);		/* "not ours" is remembered */
	close(o);
	/* a pending file: mapped, let go, read from the disk */
	fm.flags = MARU_MAP_PENDING;
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('d', 128 << 10));
	assert_int_equal(fm.unmaps, 1);
	close(fd);
}

static void test_kept_across_opens(void **state)
{
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };
	int fd = open(path, O_RDONLY), o;

	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	close(fd);
	assert_int_equal(fm.unmaps, 0);		/* kept */
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, buf, 128 << 10, 4096), 128 << 10);
	assert_true(from_pool(4096, 128 << 10));
	assert_int_equal(fm.maps, 1);
	/* dup2 onto it: the entry goes with the old file */
	o = open(other, O_RDONLY);
	assert_int_equal(dup2(o, fd), fd);
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('o', 128 << 10));
	close(fd);
	close(o);
	/* another version (its mtime changed): mapped anew */
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(from_pool(0, 128 << 10));
	assert_int_equal(fm.maps, 2);
	close(fd);
}

static void test_fork_child(void **state)
{
	int fd = open(path, O_RDONLY), status;
	pid_t pid;

	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ssize_t n = pread(fd, buf, 128 << 10, 8192);

		_exit(n == 128 << 10 && from_pool(8192, 128 << 10) && fm.maps == 2 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fm.maps, 1);		/* the parent's own is untouched */
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_not_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept_across_opens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_child, setup, teardown),
	};

	return cmocka_run_group_tests_name("preload/cache", tests, NULL, NULL);
}
