/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/bdi_test.c: fs/bdi.c on files the test writes (a mountinfo
 * text and a sysfs folder under a temp dir; nothing of the machine's is
 * read or written): the mount's device found by its path, escapes in it
 * understood, the last of stacked mounts taken, a missing one -ENOENT; the
 * old read_ahead_kb reported and the new one written, a missing device
 * -ENOENT.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "bdi.h"

static char dir[PATH_MAX], info[PATH_MAX + 16];

static int setup(void **state)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/maru-bdi-test.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(info, sizeof(info), "%s/mountinfo", dir);
	f = fopen(info, "w");
	assert_non_null(f);
	fputs("22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
	      "40 22 0:39 / /mnt/maru rw,nosuid,nodev - fuse.marufs maru://a rw\n"
	      "41 22 0:40 / /mnt/kv\\040cache rw - fuse.marufs maru://b rw\n"
	      "42 40 0:41 / /mnt/maru rw - fuse.marufs maru://c rw\n"
	      "43 22 8:1 / /mnt/maru/sub rw - ext4 /dev/sda1 rw\n", f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_find(void **state)
{
	unsigned int a = 0, b = 0;

	assert_int_equal(bdi_find(info, "/mnt/kv cache", &a, &b), 0);
	assert_int_equal(a, 0);
	assert_int_equal(b, 40);
	/* stacked: the newest mount on the path */
	assert_int_equal(bdi_find(info, "/mnt/maru", &a, &b), 0);
	assert_int_equal(b, 41);
	assert_int_equal(bdi_find(info, "/mnt/maru/sub", &a, &b), 0);
	assert_int_equal(a, 8);
	assert_int_equal(b, 1);
	assert_int_equal(bdi_find(info, "/mnt", &a, &b), -ENOENT);
	assert_int_equal(bdi_find(info, "/mnt/kv", &a, &b), -ENOENT);
	assert_int_equal(bdi_find("/nonexistent/mountinfo", "/", &a, &b), -ENOENT);
}

static void test_set(void **state)
{
	char path[PATH_MAX + 64], buf[32] = "";
	unsigned int was = 7;
	FILE *f;
	char cmd[3 * PATH_MAX + 200];

	snprintf(path, sizeof(path), "%s/class/bdi/0:41", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && echo 128 > %s/read_ahead_kb", path, path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(bdi_set_readahead(dir, 0, 41, 1024, &was), 0);
	assert_int_equal(was, 128);
	strcat(path, "/read_ahead_kb");
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "1024\n");
	/* a device sysfs does not have */
	assert_int_equal(bdi_set_readahead(dir, 0, 99, 1024, &was), -ENOENT);
	assert_int_equal(was, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_find, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
