// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/link_test.c: the handlers of names that are
 * not plain files (daemon/handlers/link.c) on a real server: SYMLINK
 * answers a link whose size is its target's length and READLINK gives the
 * target back (and refuses a regular file); LINK binds a second name to a
 * published version (nlink 2, both names one ino) and refuses an unknown
 * one; MKNOD makes a FIFO and a character device with its rdev.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "hreq.h"

static void test_symlink_readlink(void **state)
{
	struct hfx *f = *state;
	static const char target[] = "../some/where/else";
	struct proto_symlink_req q = { .parent = HR_ROOT, .uid = 12, .gid = 34 };
	struct proto_attr a;
	uint64_t file;

	q.namelen = 2;
	q.targetlen = (uint16_t)strlen(target);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), "sl", 2);
	memcpy(f->buf + sizeof(q) + 2, target, q.targetlen);
	assert_int_equal(tc_call(&f->a, OP_SYMLINK, hr_id(), f->buf,
				 sizeof(q) + 2 + q.targetlen, &f->r, NULL), 0);
	a = hr_attr(f);
	assert_true(S_ISLNK(a.mode));
	assert_int_equal(a.size, strlen(target));
	assert_int_equal(a.uid, 12);
	assert_int_equal(a.gid, 34);
	assert_int_equal(hr_ino(f, &f->b, OP_READLINK, a.ino), 0);
	assert_int_equal(f->r.len, strlen(target));
	assert_memory_equal(f->r.p, target, strlen(target));
	/* the name exists already */
	assert_int_equal(tc_call(&f->a, OP_SYMLINK, hr_id(), f->buf,
				 sizeof(q) + 2 + q.targetlen, &f->r, NULL), -EEXIST);
	file = hr_file(f, &f->a, "plain", "p", 1);
	assert_true(file != 0);
	assert_int_equal(hr_ino(f, &f->b, OP_READLINK, file), -EINVAL);
}

static int do_link(struct hfx *f, uint64_t ino, const char *name)
{
	struct proto_link_req q = { .ino = ino, .newparent = HR_ROOT };

	q.namelen = (uint16_t)strlen(name);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), name, q.namelen);
	return tc_call(&f->a, OP_LINK, hr_id(), f->buf, sizeof(q) + q.namelen, &f->r, NULL);
}

static void test_link(void **state)
{
	struct hfx *f = *state;
	uint64_t ino = hr_file(f, &f->a, "one", "data", 4);

	assert_true(ino != 0);
	assert_int_equal(do_link(f, ino, "two"), 0);
	assert_int_equal(hr_attr(f).ino, ino);
	assert_int_equal(hr_attr(f).nlink, 2);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "two", 0), 0);
	assert_int_equal(hr_attr(f).ino, ino);
	assert_int_equal(hr_attr(f).size, 4);
	assert_int_equal(do_link(f, ino, "two"), -EEXIST);
	assert_int_not_equal(do_link(f, ino + 1000, "three"), 0);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "three", 0), -ENOENT);
}

static int do_mknod(struct hfx *f, const char *name, uint32_t mode, uint32_t rdev)
{
	struct proto_mknod_req q = { .parent = HR_ROOT, .mode = mode, .rdev = rdev };

	q.namelen = (uint16_t)strlen(name);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), name, q.namelen);
	return tc_call(&f->a, OP_MKNOD, hr_id(), f->buf, sizeof(q) + q.namelen, &f->r, NULL);
}

static void test_mknod(void **state)
{
	struct hfx *f = *state;
	struct proto_attr a;

	assert_int_equal(do_mknod(f, "fifo", S_IFIFO | 0640, 0), 0);
	a = hr_attr(f);
	assert_true(S_ISFIFO(a.mode));
	assert_int_equal(a.mode & 0777, 0640);
	assert_int_equal(a.size, 0);
	assert_int_equal(do_mknod(f, "chr", S_IFCHR | 0600, 0x0103), 0);
	a = hr_attr(f);
	assert_true(S_ISCHR(a.mode));
	assert_int_equal(a.rdev, 0x0103);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "chr", 0), 0);
	assert_int_equal(hr_attr(f).rdev, 0x0103);
	assert_int_equal(do_mknod(f, "fifo", S_IFIFO | 0640, 0), -EEXIST);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_symlink_readlink, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_link, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_mknod, hfx_setup, hfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
