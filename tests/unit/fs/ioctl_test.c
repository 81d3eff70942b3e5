// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/ioctl_test.c: the zero-copy ioctls (fs/ioctl.c) on handles
 * of the fake libmaru, with fuse_reply_ioctl recorded here: EXTENTS on a
 * published file answers the pool (path, generation, size, alignment) and
 * its extents from index first (EINVAL past the end), flags 0; with
 * WANT_WRITE on a pending file it answers PENDING|WRITABLE|HELD, and
 * UNHOLD gives the hold back once (a second is EINVAL); WANT_WRITE on a
 * read-only descriptor is refused; a bad magic, version, flag, size or
 * first with WANT_WRITE is EINVAL; a directory, no handle or another
 * command is ENOTTY.
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

#include <cmocka.h>
#include <maru/marufs_ioctl.h>

#include "fake.h"
#include "handle.h"
#include "ioctl.h"

static struct mfs m;
static struct {
	int calls, result;
	size_t size;
	struct marufs_extents r;
} ioc;

int __wrap_fuse_reply_ioctl(fuse_req_t req, int result, const void *buf, size_t size);
int __wrap_fuse_reply_ioctl(fuse_req_t req, int result, const void *buf, size_t size)
{
	ioc.calls++;
	ioc.result = result;
	ioc.size = size;
	if (buf && size == sizeof(ioc.r))
		memcpy(&ioc.r, buf, size);
	fk.last_err = 0;
	return 0;
}

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	memset(&ioc, 0, sizeof(ioc));
	return 0;
}

static int teardown(void **state)
{
	fake_unmount(&m);
	assert_int_equal(fk.files_open, 0);
	return 0;
}

/* EXTENTS on h; the errno replied (0: ioc.r holds the answer). */
static int extents(struct handle *h, uint32_t first, uint32_t flags, size_t in, size_t out)
{
	static struct marufs_extents q;
	struct fuse_file_info fi = { .fh = (uintptr_t)h };
	int before = ioc.calls;

	memset(&q, 0, sizeof(q));
	q.magic = MARUFS_EXT_MAGIC;
	q.version = MARUFS_EXT_VERSION;
	q.first = first;
	q.flags = flags;
	fk.last_err = -1;
	ioctl_handle(fake_req(&m), 2, MARUFS_IOC_EXTENTS, &fi, 0, &q, in, out);
	return ioc.calls > before ? 0 : fk.last_err;
}

static int unhold(struct handle *h)
{
	struct fuse_file_info fi = { .fh = (uintptr_t)h };
	int before = ioc.calls;

	ioctl_handle(fake_req(&m), 2, MARUFS_IOC_UNHOLD, &fi, 0, NULL, 0, 0);
	return ioc.calls > before ? 0 : fk.last_err;
}

static struct handle *open_published(void)
{
	uint64_t ino = fake_publish(1, "pub", "published bytes");
	struct handle *h;
	int keep, direct;

	assert_int_equal(handle_open(&m, ino, O_RDONLY, &h, &keep, &direct), 0);
	return h;
}

static void test_extents_of_lease(void **state)
{
	struct handle *h = open_published();
	const size_t sz = sizeof(struct marufs_extents);

	assert_int_equal(extents(h, 0, 0, sz, sz), 0);
	assert_int_equal(ioc.result, 0);
	assert_int_equal(ioc.r.magic, MARUFS_EXT_MAGIC);
	assert_string_equal(ioc.r.pool_path, "/dev/shm/fake");
	assert_int_equal(ioc.r.generation, 7);
	assert_int_equal(ioc.r.pool_size, 1 << 20);
	assert_int_equal(ioc.r.align, 4096);
	assert_int_equal(ioc.r.size, strlen("published bytes"));
	assert_int_equal(ioc.r.nextents, 2);
	assert_int_equal(ioc.r.count, 2);
	assert_int_equal(ioc.r.ext[0].off, 4096);
	assert_int_equal(ioc.r.ext[0].len, 8192);
	assert_int_equal(ioc.r.ext[1].off, 65536);
	assert_int_equal(ioc.r.flags, 0);
	/* from index 1; past the end */
	assert_int_equal(extents(h, 1, 0, sz, sz), 0);
	assert_int_equal(ioc.r.first, 1);
	assert_int_equal(ioc.r.count, 1);
	assert_int_equal(ioc.r.ext[0].off, 65536);
	assert_int_equal(extents(h, 3, 0, sz, sz), EINVAL);
	/* a read-only descriptor cannot hold for writing */
	assert_int_not_equal(extents(h, 0, MARUFS_EXT_WANT_WRITE, sz, sz), 0);
	handle_close(h);
}

static void test_hold_and_unhold(void **state)
{
	const size_t sz = sizeof(struct marufs_extents);
	struct maru_attr a;
	struct handle *h;

	assert_int_equal(handle_create(&m, 1, "new", 0644, 0, 0, O_RDWR | O_CREAT, &h, &a), 0);
	assert_int_equal(extents(h, 0, 0, sz, sz), 0);
	assert_int_equal(ioc.r.flags & MARUFS_EXT_HELD, 0);
	assert_true(ioc.r.flags & MARUFS_EXT_PENDING);
	assert_int_equal(extents(h, 0, MARUFS_EXT_WANT_WRITE, sz, sz), 0);
	assert_int_equal(ioc.r.flags, MARUFS_EXT_PENDING | MARUFS_EXT_WRITABLE | MARUFS_EXT_HELD);
	assert_int_equal(ioc.r.ino, a.ino);
	assert_int_equal(unhold(h), 0);
	assert_int_equal(ioc.size, 0);
	assert_int_equal(unhold(h), EINVAL);
	handle_close(h);
}

static void test_refused(void **state)
{
	struct handle *h = open_published();
	const size_t sz = sizeof(struct marufs_extents);
	struct fuse_file_info fi = { .fh = (uintptr_t)h }, none = { 0 };
	struct marufs_extents q = { .magic = 1, .version = MARUFS_EXT_VERSION };

	assert_int_equal(extents(h, 0, 0, sz - 1, sz), EINVAL);
	assert_int_equal(extents(h, 0, 0, sz, sz - 1), EINVAL);
	assert_int_equal(extents(h, 0, 1u << 3, sz, sz), EINVAL);
	assert_int_equal(extents(h, 1, MARUFS_EXT_WANT_WRITE, sz, sz), EINVAL);
	ioctl_handle(fake_req(&m), 2, MARUFS_IOC_EXTENTS, &fi, 0, &q, sz, sz);
	assert_int_equal(fk.last_err, EINVAL);
	q.magic = MARUFS_EXT_MAGIC;
	q.version = 2;
	ioctl_handle(fake_req(&m), 2, MARUFS_IOC_EXTENTS, &fi, 0, &q, sz, sz);
	assert_int_equal(fk.last_err, EINVAL);
	q.version = MARUFS_EXT_VERSION;
	fk.last_err = 0;
	ioctl_handle(fake_req(&m), 2, MARUFS_IOC_EXTENTS, &fi, FUSE_IOCTL_DIR, &q, sz, sz);
	assert_int_equal(fk.last_err, ENOTTY);
	fk.last_err = 0;
	ioctl_handle(fake_req(&m), 2, MARUFS_IOC_EXTENTS, &none, 0, &q, sz, sz);
	assert_int_equal(fk.last_err, ENOTTY);
	fk.last_err = 0;
	ioctl_handle(fake_req(&m), 2, MARUFS_IOC_EXTENTS, NULL, 0, &q, sz, sz);
	assert_int_equal(fk.last_err, ENOTTY);
	fk.last_err = 0;
	ioctl_handle(fake_req(&m), 2, 0x1234, &fi, 0, &q, sz, sz);
	assert_int_equal(fk.last_err, ENOTTY);
	assert_int_equal(ioc.calls, 0);
	handle_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_extents_of_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_and_unhold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/ioctl", tests, NULL, NULL);
}
