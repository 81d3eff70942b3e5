/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/nsdir_test.c: fs/nsdir.c, the FUSE handlers that list a
 * directory and tell the pool's space. Real: nsdir.c and away.c (what the
 * mount last heard). Faked (tests/unit/fs/fake.c): libmaru's readdir and
 * statfs, libfuse's replies; fuse_add_direntry writes "name\n". Cases:
 * ".", ".." and (at the root only) ".maru" then the names from any offset,
 * a buffer that holds only some entries, an error after the dots comes on
 * the next call, statfs's arithmetic from marud's figures, and while marud
 * cannot be reached: the names last listed from the offset asked, the
 * space last told, an error rather than a listing cut to "." and "..".
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "away.h"
#include "fake.h"
#include "ns.h"

#define BLOCK	4096u

static struct mfs m;

static int setup(void **state)
{
	(void)state;
	fake_reset();
	fake_mount(&m);
	return 0;
}

static int setup_away(void **state)
{
	setup(state);
	assert_int_equal(away_new(&m.aw), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (m.aw) {
		away_free(m.aw);
		m.aw = NULL;
	}
	fake_unmount(&m);
	return 0;
}

static const char *list(fuse_ino_t dir, size_t size, off_t off)
{
	int before = fk.replies;

	fk.last_err = -1;
	ns_readdir(fake_req(&m), dir, size, off, NULL);
	assert_int_equal(fk.replies, before + 1);	/* exactly one reply */
	assert_int_equal(fk.last_err, 0);
	return fk.last_buf;
}

static int list_err(fuse_ino_t dir, off_t off)
{
	int before = fk.replies;

	ns_readdir(fake_req(&m), dir, 4096, off, NULL);
	assert_int_equal(fk.replies, before + 1);
	return fk.last_err;
}

/* Every offset: the dots, ".maru" at the root only, then the names. */
static void test_offsets(void **state)
{
	(void)state;
	fake_publish(1, "x", "1");
	fake_publish(1, "y", "2");
	fake_publish(5, "z", "3");
	assert_string_equal(list(1, 4096, 0), ".\n..\n.maru\nx\ny\n");
	assert_string_equal(list(1, 4096, 1), "..\n.maru\nx\ny\n");
	assert_string_equal(list(1, 4096, 2), ".maru\nx\ny\n");
	assert_string_equal(list(1, 4096, 3), "x\ny\n");
	assert_string_equal(list(1, 4096, 4), "y\n");	/* x's offset: after it */
	assert_string_equal(list(1, 4096, 5), "");	/* the end */
	/* not the root: no .maru */
	assert_string_equal(list(5, 4096, 0), ".\n..\nz\n");
	assert_string_equal(list(5, 4096, 3), "z\n");
}

/* A buffer that holds only some entries: those, and the next call goes on. */
static void test_small_buffer(void **state)
{
	(void)state;
	fake_publish(1, "alpha", "1");
	fake_publish(1, "beta", "2");
	assert_string_equal(list(1, 8, 0), ".\n..\n");	/* ".maru\n" does not fit */
	assert_string_equal(list(1, 11, 2), ".maru\n");
	assert_string_equal(list(1, 10, 3), "alpha\n");
	assert_string_equal(list(1, 0, 0), "");		/* nothing fits */
}

/* marud refuses (not away): after the dots the next call gets the error. */
static void test_error_after_dots(void **state)
{
	(void)state;
	fake_publish(1, "x", "1");
	fk.away_rc = -EIO;
	assert_string_equal(list(1, 4096, 0), ".\n..\n.maru\n");
	assert_int_equal(list_err(1, 3), EIO);
	fk.away_rc = -ENOENT;
	assert_int_equal(list_err(7, 2), ENOENT);
}

static void test_statfs(void **state)
{
	struct statvfs *st = &fk.last_statvfs;

	(void)state;
	fk.statfs = (struct maru_statfs){ .capacity = 1000 * BLOCK, .free = 300 * BLOCK,
					  .evictable = 200 * BLOCK, .names = 40, .dirs = 2 };
	ns_statfs(fake_req(&m), 1);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(st->f_bsize, BLOCK);
	assert_int_equal(st->f_frsize, BLOCK);
	assert_int_equal(st->f_blocks, 1000);
	assert_int_equal(st->f_bfree, 300);
	assert_int_equal(st->f_bavail, 500);	/* free + evictable */
	assert_int_equal(st->f_ffree, 500);
	assert_int_equal(st->f_favail, 500);
	assert_int_equal(st->f_files, 542);	/* df -i: used = names + dirs */
	assert_int_equal(st->f_namemax, MARU_NAME_MAX);
	fk.away_rc = -EIO;
	ns_statfs(fake_req(&m), 1);
	assert_int_equal(fk.last_err, EIO);
}

/* Away: the names last listed, from the offset asked. */
static void test_away_listing(void **state)
{
	(void)state;
	fake_publish(1, "x", "1");
	fake_publish(1, "y", "2");
	fake_publish(5, "z", "3");
	assert_string_equal(list(1, 4096, 0), ".\n..\n.maru\nx\ny\n");
	fk.away_rc = -ETIMEDOUT;
	assert_string_equal(list(1, 4096, 0), ".\n..\n.maru\nx\ny\n");
	assert_string_equal(list(1, 4096, 4), "y\n");
	assert_string_equal(list(1, 4096, 5), "");
	/* never listed here: the error, not "." and ".." alone */
	assert_int_equal(list_err(5, 0), ETIMEDOUT);
}

/* The first error that says marud is away is the one answered. */
static void test_away_first_error(void **state)
{
	(void)state;
	fake_publish(5, "z", "3");
	fk.away_rc = -ECONNREFUSED;
	assert_int_equal(list_err(5, 0), ECONNREFUSED);
	/* known away now: not asked again at once, ETIMEDOUT (away.h) */
	fk.away_rc = 0;
	assert_int_equal(list_err(5, 0), ETIMEDOUT);
}

/* Away: the space last told stands in. */
static void test_away_statfs(void **state)
{
	(void)state;
	fk.statfs = (struct maru_statfs){ .capacity = 64 * BLOCK, .free = 8 * BLOCK };
	ns_statfs(fake_req(&m), 1);
	assert_int_equal(fk.last_statvfs.f_blocks, 64);
	fk.statfs.capacity = 0;		/* what a marud that answered would say now */
	fk.away_rc = -ETIMEDOUT;
	memset(&fk.last_statvfs, 0, sizeof(fk.last_statvfs));
	ns_statfs(fake_req(&m), 1);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_statvfs.f_blocks, 64);
	assert_int_equal(fk.last_statvfs.f_bfree, 8);
}

/* Away and never told: the error. */
static void test_away_statfs_never(void **state)
{
	(void)state;
	fk.away_rc = -ETIMEDOUT;
	ns_statfs(fake_req(&m), 1);
	assert_int_equal(fk.last_err, ETIMEDOUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_offsets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_after_dots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statfs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_away_listing, setup_away, teardown),
		cmocka_unit_test_setup_teardown(test_away_first_error, setup_away, teardown),
		cmocka_unit_test_setup_teardown(test_away_statfs, setup_away, teardown),
		cmocka_unit_test_setup_teardown(test_away_statfs_never, setup_away, teardown),
	};

	return cmocka_run_group_tests_name("fs/nsdir", tests, NULL, NULL);
}
