/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/ns_test.c: fs/ns.c, the FUSE handlers of the namespace,
 * against the fake libmaru and libfuse: lookup answers a positive entry
 * (counted, its name remembered) or a negative one; forget lets the inode
 * go; getattr of a file this mount writes gives its pending's size;
 * truncate(2) with no writer here publishes a new version; unlink orphans
 * this mount's pending of the name and rename moves it; mknod publishes an
 * empty file and refuses other types; create hands back a handle (direct_io
 * when write-only); readdir lists ".", "..", ".maru" then the names from an
 * offset on; statfs, access, mkdir and rmdir pass marud's answers through.
 * While marud cannot be reached (the fake answers ETIMEDOUT), lookup,
 * getattr, readdir and statfs answer what it said last (away.c), a name
 * never looked up or listed fails, and a listing is never just "." "..".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "away.h"
#include "fake.h"
#include "handle.h"
#include "ns.h"
#include "pending.h"

static struct mfs m;
static uint64_t rename_seq_reply;

int __wrap_maru_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			   const char *nn, unsigned int flags, uint64_t *seq);
int __wrap_maru_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			   const char *nn, unsigned int flags, uint64_t *seq)
{
	*seq = rename_seq_reply;
	return 0;
}

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

static void test_lookup_forget(void **state)
{
	uint64_t ino = fake_publish(1, "a", "xyz"), parent;
	char name[16];

	ns_lookup(fake_req(&m), 1, "a");
	assert_int_equal(fk.last_len, ino);	/* the entry's inode */
	assert_int_equal(m.cnt.lookup_pos, 1);
	assert_int_equal(itab_name(m.tab, ino, &parent, name, sizeof(name)), 0);
	assert_string_equal(name, "a");
	ns_lookup(fake_req(&m), 1, "nope");
	assert_int_equal(fk.last_len, 0);	/* negative entry */
	assert_int_equal(m.cnt.lookup_neg, 1);
	ns_forget(fake_req(&m), ino, 1);
	assert_int_equal(itab_name(m.tab, ino, &parent, name, sizeof(name)), -ENOENT);
	assert_int_equal(fk.replies, 3);
}

static void test_getattr_and_truncate(void **state)
{
	uint64_t ino = fake_publish(1, "b", "twelve bytes");
	struct maru_attr a;
	struct handle *h;
	struct stat st;

	ns_getattr(fake_req(&m), ino, NULL);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_len, 12);
	/* truncate(2) with no writer here: a new version, published now */
	itab_remember(m.tab, ino, 1, "b");
	memset(&st, 0, sizeof(st));
	st.st_size = 3;
	ns_setattr(fake_req(&m), ino, &st, FUSE_SET_ATTR_SIZE, NULL);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(fake_named(1, "b")->size, 3);
	itab_forget(m.tab, ino, 1);
	/* a file this mount writes: its pending's size */
	assert_int_equal(handle_create(&m, 1, "c", 0644, 0, 0, O_RDWR | O_CREAT, &h, &a), 0);
	assert_int_equal(handle_write(h, "12345", 5, 0), 5);
	ns_getattr(fake_req(&m), a.ino, NULL);
	assert_int_equal(fk.last_len, 5);
	ns_access(fake_req(&m), a.ino, R_OK);
	assert_int_equal(fk.last_err, 0);
	ns_access(fake_req(&m), 9999, R_OK);
	assert_int_equal(fk.last_err, ENOENT);
	handle_close(h);
	itab_forget(m.tab, a.ino, 1);
}

static void test_unlink_rename_pending(void **state)
{
	struct maru_attr a, b;
	struct handle *h, *g;
	struct pending *p;

	assert_int_equal(handle_create(&m, 1, "d", 0644, 0, 0, O_RDWR | O_CREAT, &h, &a), 0);
	assert_int_equal(handle_write(h, "x", 1, 0), 1);
	ns_unlink(fake_req(&m), 1, "d");
	assert_int_equal(fk.last_err, 0);
	assert_null(pend_of_name(&m, 1, "d"));
	handle_close(h);
	assert_int_equal(fk.publishes, 0);	/* its name went: never published */

	assert_int_equal(handle_create(&m, 1, "e", 0644, 0, 0, O_RDWR | O_CREAT, &h, &a), 0);
	assert_int_equal(handle_create(&m, 1, "f", 0644, 0, 0, O_RDWR | O_CREAT, &g, &b), 0);
	rename_seq_reply = 0;	/* only this mount's pending moved: no event */
	ns_rename(fake_req(&m), 1, "e", 1, "f", 0);
	assert_int_equal(fk.last_err, 0);
	assert_null(pend_of_name(&m, 1, "e"));
	p = pend_of_name(&m, 1, "f");
	assert_non_null(p);
	assert_int_equal(pend_ino(p), a.ino);	/* e's moved over f's */
	pend_put(p);
	ns_rename(fake_req(&m), 1, "f", 1, "g", 4);	/* RENAME_WHITEOUT */
	assert_int_equal(fk.last_err, EINVAL);
	handle_close(g);	/* renamed over: never published */
	assert_int_equal(fk.publishes, 0);
	handle_close(h);
	assert_int_equal(fk.publishes, 1);
	itab_forget(m.tab, a.ino, 1);
	itab_forget(m.tab, b.ino, 1);
}

static void test_mknod_create(void **state)
{
	struct fuse_file_info fi;

	ns_mknod(fake_req(&m), 1, "n", S_IFREG | 0644, 0);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(fk.last_len, fake_named(1, "n")->ino);
	itab_forget(m.tab, fake_named(1, "n")->ino, 1);
	ns_mknod(fake_req(&m), 1, "p", S_IFIFO | 0644, 0);
	assert_int_equal(fk.last_err, EINVAL);	/* link.c's, not here */

	memset(&fi, 0, sizeof(fi));
	fi.flags = O_WRONLY | O_CREAT;
	ns_create(fake_req(&m), 1, "q", 0644, &fi);
	assert_int_equal(fk.last_err, 0);
	assert_int_not_equal(fi.fh, 0);
	assert_true(fk.last_direct_io);
	assert_int_equal(handle_write(fh_handle(&fi), "q", 1, 0), 1);
	handle_close(fh_handle(&fi));
	assert_int_equal(fk.publishes, 2);
	itab_forget(m.tab, fake_named(1, "q")->ino, 1);
	ns_mkdir(fake_req(&m), 1, "dir", 0755);
	assert_int_equal(fk.last_err, ENOSYS);	/* the fake's answer */
	ns_rmdir(fake_req(&m), 1, "dir");
	assert_int_equal(fk.last_err, ENOSYS);
}

static void test_readdir_statfs(void **state)
{
	fake_publish(1, "x", "1");
	fake_publish(1, "y", "2");
	fake_publish(2, "z", "3");	/* another directory */
	ns_readdir(fake_req(&m), 1, 4096, 0, NULL);
	assert_string_equal(fk.last_buf, ".\n..\n.maru\nx\ny\n");
	ns_readdir(fake_req(&m), 1, 4096, 3, NULL);	/* after .maru */
	assert_string_equal(fk.last_buf, "x\ny\n");
	ns_readdir(fake_req(&m), 1, 7, 0, NULL);	/* room for "." and ".." only */
	assert_string_equal(fk.last_buf, ".\n..\n");
	ns_statfs(fake_req(&m), 1);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_namemax, MARU_NAME_MAX);
}

static void test_away(void **state)
{
	uint64_t x;

	assert_int_equal(away_new(&m.aw), 0);
	fake_publish(1, "x", "hello");
	fake_publish(1, "y", "2");
	x = fake_named(1, "x")->ino;
	ns_lookup(fake_req(&m), 1, "x");
	assert_int_equal(fk.last_len, x);
	ns_readdir(fake_req(&m), 1, 4096, 0, NULL);
	ns_statfs(fake_req(&m), 1);
	fk.away_rc = -ETIMEDOUT;
	ns_lookup(fake_req(&m), 1, "x");
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_len, x);
	ns_getattr(fake_req(&m), x, NULL);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_len, 5);	/* its size */
	ns_lookup(fake_req(&m), 1, "y");	/* only listed: no attributes */
	assert_int_equal(fk.last_err, ETIMEDOUT);
	ns_lookup(fake_req(&m), 1, "never");
	assert_int_equal(fk.last_err, ETIMEDOUT);
	ns_readdir(fake_req(&m), 1, 4096, 0, NULL);
	assert_int_equal(fk.last_err, 0);
	assert_non_null(strstr(fk.last_buf, "\nx\n"));
	assert_non_null(strstr(fk.last_buf, "\ny\n"));
	ns_readdir(fake_req(&m), 2, 4096, 0, NULL);	/* nothing known: the error */
	assert_int_equal(fk.last_err, ETIMEDOUT);
	ns_statfs(fake_req(&m), 1);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_namemax, MARU_NAME_MAX);
	fk.away_rc = 0;
	itab_forget(m.tab, x, 2);
	away_free(m.aw);
	m.aw = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_getattr_and_truncate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_rename_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mknod_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_statfs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_away, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/ns", tests, NULL, NULL);
}
