/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/ops_test.c: marufs's fuse_lowlevel_ops table, fs/ops.c,
 * against the fake libmaru and libfuse: every request marufs serves has an entry; the kernel is asked
 * for what publishing needs (atomic O_TRUNC, no writeback cache, no
 * automatic page drops, never SPLICE_MOVE); each request is counted and
 * routed: .maru/ to vdir.c, names that are not plain files to link.c,
 * the rest to ns.c and the open handle; open, write, flush, read and
 * release go through the table as the kernel sends them.
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

#include "fake.h"
#include "inode.h"
#include "ops.h"
#include "vdir.h"

static struct mfs m;
static struct fuse_lowlevel_ops ops;
static int mknods;

/* link.c's libmaru calls, which ops.c's table reaches. */
int __wrap_maru_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			   const char *nn, unsigned int flags, uint64_t *seq);
int __wrap_maru_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			   const char *nn, unsigned int flags, uint64_t *seq)
{
	*seq = 0;
	return 0;
}

int __wrap_maru_symlink(struct maru_client *c, uint64_t parent, const char *name,
			const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out);
int __wrap_maru_symlink(struct maru_client *c, uint64_t parent, const char *name,
			const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	return -ENOSYS;
}

int __wrap_maru_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size);
int __wrap_maru_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size)
{
	return -ENOSYS;
}

int __wrap_maru_link(struct maru_client *c, uint64_t ino, uint64_t newparent,
		     const char *newname, struct maru_attr *out);
int __wrap_maru_link(struct maru_client *c, uint64_t ino, uint64_t newparent,
		     const char *newname, struct maru_attr *out)
{
	return -ENOSYS;
}

int __wrap_maru_mknod(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
		      struct maru_attr *out);
int __wrap_maru_mknod(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
		      struct maru_attr *out)
{
	mknods++;
	return -ENOSYS;
}

int __wrap_fuse_reply_readlink(fuse_req_t req, const char *link);
int __wrap_fuse_reply_readlink(fuse_req_t req, const char *link)
{
	return 0;
}

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	ops_init(&ops);
	mknods = 0;
	return 0;
}

static int teardown(void **state)
{
	fake_unmount(&m);
	assert_int_equal(fk.files_open, 0);
	return 0;
}

static void test_table_complete(void **state)
{
	const void *const set[] = {
		ops.init, ops.lookup, ops.forget, ops.forget_multi, ops.getattr,
		ops.setattr, ops.mknod, ops.symlink, ops.readlink, ops.link, ops.mkdir,
		ops.unlink, ops.rmdir, ops.rename, ops.open, ops.create, ops.read,
		ops.write, ops.flush, ops.release, ops.fsync, ops.opendir, ops.readdir,
		ops.releasedir, ops.statfs, ops.setxattr, ops.getxattr, ops.listxattr,
		ops.removexattr, ops.access, ops.fallocate, ops.poll, ops.ioctl,
	};
	size_t i;

	for (i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		assert_non_null(set[i]);
	assert_null(ops.write_buf);	/* requests are read into buffers */
}

static void test_init_wants(void **state)
{
	struct fuse_conn_info conn;

	memset(&conn, 0, sizeof(conn));
	conn.capable = ~0u;
	conn.want = FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_WRITEBACK_CACHE |
		    FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ;
	ops.init(&m, &conn);
	assert_int_equal(conn.max_write, 1u << 20);
	assert_true(conn.want & FUSE_CAP_ATOMIC_O_TRUNC);
	assert_true(conn.want & FUSE_CAP_ASYNC_READ);
	assert_true(conn.want & FUSE_CAP_SPLICE_WRITE);
	assert_false(conn.want & FUSE_CAP_AUTO_INVAL_DATA);
	assert_false(conn.want & FUSE_CAP_WRITEBACK_CACHE);
	assert_false(conn.want & (FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ));
}

static void test_routing(void **state)
{
	uint64_t ino = fake_publish(1, "a", "abc");

	ops.lookup(fake_req(&m), 1, VIRT_DIR_NAME);
	assert_int_equal(fk.last_len, VIRT_INO_DIR);	/* vdir.c's entry */
	ops.lookup(fake_req(&m), 1, "a");
	assert_int_equal(fk.last_len, ino);	/* ns.c's */
	assert_int_equal(m.cnt.ops[OP_LOOKUP], 2);
	assert_int_equal(m.cnt.lookup_pos, 1);
	ops.forget(fake_req(&m), ino, 1);
	ops.symlink(fake_req(&m), "t", VIRT_INO_DIR, "l");
	assert_int_equal(fk.last_err, EPERM);	/* .maru/ holds its own files only */
	ops.readlink(fake_req(&m), VIRT_INO_STATS);
	assert_int_equal(fk.last_err, EINVAL);
	ops.link(fake_req(&m), ino, VIRT_INO_DIR, "h");
	assert_int_equal(fk.last_err, EPERM);
	ops.mknod(fake_req(&m), 1, "fifo", S_IFIFO | 0600, 0);
	assert_int_equal(mknods, 1);	/* link.c's */
	assert_int_equal(fk.last_err, ENOSYS);
	ops.fallocate(fake_req(&m), ino, 1, 0, 10, NULL);	/* FALLOC_FL_KEEP_SIZE */
	assert_int_equal(fk.last_err, EOPNOTSUPP);
	assert_int_equal(m.cnt.ops[OP_MKNOD], 1);
}

static void test_file_requests(void **state)
{
	struct fuse_file_info fi, ri;

	memset(&fi, 0, sizeof(fi));
	fi.flags = O_WRONLY | O_CREAT;
	ops.create(fake_req(&m), 1, "w", 0644, &fi);
	assert_int_not_equal(fi.fh, 0);
	ops.write(fake_req(&m), fk.last_len, "hello", 5, 0, &fi);
	assert_int_equal(fk.last_len, 5);	/* fuse_reply_write's count */
	ops.flush(fake_req(&m), 0, &fi);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.publishes, 1);
	ops.release(fake_req(&m), 0, &fi);
	assert_int_equal(fk.last_err, 0);
	memset(&ri, 0, sizeof(ri));
	ri.flags = O_RDONLY;
	ops.open(fake_req(&m), fake_named(1, "w")->ino, &ri);
	assert_int_not_equal(ri.fh, 0);
	assert_true(ri.keep_cache);	/* published bytes are immutable */
	assert_true(ri.noflush);	/* a reader's flush does nothing */
	ops.read(fake_req(&m), fake_named(1, "w")->ino, 64, 0, &ri);
	assert_int_equal(fk.datas, 0);	/* no pool file here: by copy */
	assert_string_equal(fk.last_buf, "hello");
	ops.release(fake_req(&m), fake_named(1, "w")->ino, &ri);
	ops.poll(fake_req(&m), 1, &ri, NULL);
	ops.opendir(fake_req(&m), 1, &ri);
	ops.releasedir(fake_req(&m), 1, &ri);
	assert_int_equal(m.cnt.ops[OP_OPEN], 1);
	assert_int_equal(m.cnt.ops[OP_RELEASE], 2);
	itab_forget(m.tab, fake_named(1, "w")->ino, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_table_complete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_wants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_routing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_requests, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/ops", tests, NULL, NULL);
}
