/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/vdir_test.c: fs/vdir.c, the .maru/ directory through its
 * own handler table: lookups, the listing, stats (marud's text, then
 * marufs's), the pool text, the events stream, and what .maru/ refuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "evring.h"
#include "fake.h"
#include "vdir.h"

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
	return 0;
}

static void test_claims_and_lookup(void **state)
{
	assert_true(vdir_claims(FUSE_ROOT_ID, ".maru"));
	assert_true(vdir_claims(VIRT_INO_DIR, "anything"));
	assert_false(vdir_claims(FUSE_ROOT_ID, "maru"));
	assert_false(vdir_claims(5, ".maru"));
	vdir_ops.lookup(fake_req(&m), FUSE_ROOT_ID, ".maru");
	assert_int_equal(fk.last_len, (size_t)VIRT_INO_DIR);
	vdir_ops.lookup(fake_req(&m), VIRT_INO_DIR, "stats");
	assert_int_equal(fk.last_len, (size_t)VIRT_INO_STATS);
	vdir_ops.lookup(fake_req(&m), VIRT_INO_DIR, "nope");
	assert_int_equal(fk.last_err, ENOENT);
}

static void test_readdir(void **state)
{
	vdir_ops.readdir(fake_req(&m), VIRT_INO_DIR, 4096, 0, NULL);
	assert_string_equal(fk.last_buf, ".\n..\nstats\nevents\npool\nhints\n");
	vdir_ops.readdir(fake_req(&m), VIRT_INO_DIR, 4096, 3, NULL);
	assert_string_equal(fk.last_buf, "events\npool\nhints\n");
}

static void test_stats(void **state)
{
	struct fuse_file_info fi;

	memset(&fi, 0, sizeof(fi));
	fi.flags = O_RDONLY;
	m.cnt.ops[OP_LOOKUP] = 3;
	vdir_ops.open(fake_req(&m), VIRT_INO_STATS, &fi);
	assert_int_not_equal(fi.fh, 0);
	assert_true(fi.direct_io);
	vdir_ops.read(fake_req(&m), VIRT_INO_STATS, 8192, 0, &fi);
	assert_int_equal(strncmp(fk.last_buf, "marud_up 1\n", 11), 0);
	assert_non_null(strstr(fk.last_buf, "marufs_fuse_ops_total{op=\"lookup\"} 3\n"));
	vdir_ops.read(fake_req(&m), VIRT_INO_STATS, 4, 0, &fi);	/* split reads */
	assert_string_equal(fk.last_buf, "maru");
	vdir_ops.read(fake_req(&m), VIRT_INO_STATS, 4, 1 << 20, &fi);
	assert_int_equal(fk.last_len, 0);
	vdir_ops.release(fake_req(&m), VIRT_INO_STATS, &fi);
	assert_int_equal(fk.last_err, 0);
}

static void test_pool_text(void **state)
{
	struct maru_pool_info pi;
	char buf[4096];
	int n;

	memset(&pi, 0, sizeof(pi));
	pi.generation = 42;
	pi.size = 1 << 30;
	pi.align = 2 << 20;
	pi.data_path = MARU_DATA_TCP;
	pi.coherence = MARU_COHERENCE_FLUSH;
	pi.uuid[0] = 0xab;
	n = vdir_pool_text(&m, &pi, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_non_null(strstr(buf, "uri maru+unix:///fake.sock\n"));	/* the mount's URI */
	assert_non_null(strstr(buf, "uuid ab000000-0000-0000-0000-000000000000\n"));
	assert_non_null(strstr(buf, "capacity 1073741824\nalign 2097152\ndata_path tcp\n"));
	assert_non_null(strstr(buf, "generation 42\ncoherence flush\n"));
	n = vdir_pool_text(&m, &pi, buf, 8);	/* clipped, still a string */
	assert_int_equal(n, 7);
	assert_int_equal(strlen(buf), 7);
}

static void test_events(void **state)
{
	struct fuse_file_info fi;
	struct maru_event e;

	memset(&fi, 0, sizeof(fi));
	fi.flags = O_RDONLY;
	vdir_ops.open(fake_req(&m), VIRT_INO_EVENTS, &fi);
	assert_true(fi.nonseekable);
	memset(&e, 0, sizeof(e));
	e.seq = 9;
	e.time_ns = 1000000001;
	e.type = MARU_EV_RENAME;
	snprintf(e.path, sizeof(e.path), "/a");
	snprintf(e.path2, sizeof(e.path2), "/b");
	evring_append(m.ring, &e);
	e.seq = 10;
	e.type = MARU_EV_PUBLISH;
	evring_append(m.ring, &e);
	vdir_ops.read(fake_req(&m), VIRT_INO_EVENTS, 4096, 0, &fi);
	assert_string_equal(fk.last_buf, "9 1.000000001 rename /a -> /b\n"
			    "10 1.000000001 publish /a\n");
	vdir_ops.release(fake_req(&m), VIRT_INO_EVENTS, &fi);
}

static void test_refusals(void **state)
{
	struct fuse_file_info fi;

	memset(&fi, 0, sizeof(fi));
	fi.flags = O_WRONLY;
	vdir_ops.open(fake_req(&m), VIRT_INO_STATS, &fi);
	assert_int_equal(fk.last_err, EACCES);
	fi.flags = O_RDONLY;
	vdir_ops.open(fake_req(&m), VIRT_INO_DIR, &fi);
	assert_int_equal(fk.last_err, EISDIR);
	vdir_ops.mkdir(fake_req(&m), FUSE_ROOT_ID, ".maru", 0755);
	assert_int_equal(fk.last_err, EEXIST);
	vdir_ops.mkdir(fake_req(&m), VIRT_INO_DIR, "x", 0755);
	assert_int_equal(fk.last_err, EACCES);
	vdir_ops.unlink(fake_req(&m), VIRT_INO_DIR, "stats");
	assert_int_equal(fk.last_err, EPERM);
	vdir_ops.rmdir(fake_req(&m), FUSE_ROOT_ID, ".maru");
	assert_int_equal(fk.last_err, EBUSY);
	vdir_ops.rename(fake_req(&m), FUSE_ROOT_ID, ".maru", FUSE_ROOT_ID, "x", 0);
	assert_int_equal(fk.last_err, EBUSY);
	vdir_ops.rename(fake_req(&m), FUSE_ROOT_ID, ".maru", FUSE_ROOT_ID, "x", 2);
	assert_int_equal(fk.last_err, EINVAL);
	vdir_ops.getxattr(fake_req(&m), VIRT_INO_STATS, "user.maru.state", 64);
	assert_int_equal(fk.last_err, ENODATA);
	vdir_ops.setxattr(fake_req(&m), VIRT_INO_STATS, "user.maru.hint", "read", 4, 0);
	assert_int_equal(fk.last_err, ENOTSUP);
	fk.last_xattr = 99;
	vdir_ops.listxattr(fake_req(&m), VIRT_INO_STATS, 0);
	assert_int_equal(fk.last_xattr, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claims_and_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/vdir", tests, NULL, NULL);
}
