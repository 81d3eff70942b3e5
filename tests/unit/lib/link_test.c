/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/link_test.c: libmaru's symlink, readlink, link and mknod
 * (lib/link.c) against the fake marud: each sends one well-formed request
 * (checked field by field here), decodes the proto_attr or target reply
 * (rdev included), passes marud's errors through, and refuses bad
 * arguments (names, empty or too-long targets, non-special mknod modes)
 * without sending anything.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <maru/libmaru.h>

#include "fake_marud.h"

struct seen {
	uint8_t body[sizeof(struct proto_symlink_req) + 2 * PROTO_PATH_MAX];
	uint32_t len;
};

static int handler(struct fake_req *q)
{
	struct seen *s = q->f->arg;
	struct proto_attr a = { .ino = 7, .parent = 1, .nlink = 2, .rdev = 0x103 };

	s->len = q->h.len < sizeof(s->body) ? q->h.len : sizeof(s->body);
	memcpy(s->body, q->body, s->len);
	switch (q->h.op) {
	case OP_SYMLINK:
		a.mode = S_IFLNK | 0777;
		a.size = 6;
		return fake_reply(q, 0, &a, sizeof(a), NULL, 0);
	case OP_READLINK:
		if (((const struct proto_ino_req *)(const void *)q->body)->ino != 7)
			return fake_reply(q, -EINVAL, NULL, 0, NULL, 0);
		return fake_reply(q, 0, "target", 6, NULL, 0);
	case OP_LINK:
		if (((const struct proto_link_req *)(const void *)q->body)->ino == 99)
			return fake_reply(q, -ENOENT, NULL, 0, NULL, 0);
		a.mode = S_IFREG | 0644;
		return fake_reply(q, 0, &a, sizeof(a), NULL, 0);
	case OP_MKNOD:
		a.mode = ((const struct proto_mknod_req *)(const void *)q->body)->mode;
		return fake_reply(q, 0, &a, sizeof(a), NULL, 0);
	default:
		return fake_reply(q, -ENOSYS, NULL, 0, NULL, 0);
	}
}

struct fx {
	struct fake_marud f;
	struct seen s;
	struct maru_client *c;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	fake_start(&x->f, handler, &x->s);
	x->c = fake_client(&x->f, 2000, 1, NULL, 0);
	assert_non_null(x->c);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	maru_client_free(x->c);
	fake_stop(&x->f);
	free(x);
	return 0;
}

static void test_symlink_readlink(void **state)
{
	struct fx *x = *state;
	struct proto_symlink_req r;
	struct maru_attr a;
	char buf[16];

	assert_int_equal(maru_symlink(x->c, 1, "l", "target", 5, 6, &a), 0);
	assert_true(S_ISLNK(a.mode));
	assert_int_equal(a.ino, 7);
	memcpy(&r, x->s.body, sizeof(r));
	assert_int_equal(r.parent, 1);
	assert_int_equal(r.uid, 5);
	assert_int_equal(r.gid, 6);
	assert_int_equal(r.namelen, 1);
	assert_int_equal(r.targetlen, 6);
	assert_int_equal(x->s.len, sizeof(r) + 7);
	assert_memory_equal(x->s.body + sizeof(r), "ltarget", 7);
	assert_int_equal(maru_readlink(x->c, 7, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "target");
	assert_int_equal(maru_readlink(x->c, 7, buf, 6), -ERANGE);
	assert_int_equal(maru_readlink(x->c, 8, buf, sizeof(buf)), -EINVAL);
}

static void test_symlink_bad_args(void **state)
{
	struct fx *x = *state;
	static char big[PROTO_PATH_MAX + 1];
	char n256[257];
	struct maru_attr a;
	unsigned int before = fake_ops(&x->f, OP_SYMLINK);

	memset(big, 't', PROTO_PATH_MAX);
	memset(n256, 'n', 256);
	n256[256] = '\0';
	assert_int_equal(maru_symlink(x->c, 1, "l", big, 0, 0, &a), -ENAMETOOLONG);
	assert_int_equal(maru_symlink(x->c, 1, "l", "", 0, 0, &a), -ENOENT);
	assert_int_equal(maru_symlink(x->c, 1, n256, "t", 0, 0, &a), -ENAMETOOLONG);
	assert_int_equal(maru_symlink(x->c, 1, "a/b", "t", 0, 0, &a), -EINVAL);
	assert_int_equal(maru_symlink(x->c, 1, "l", NULL, 0, 0, &a), -EINVAL);
	assert_int_equal(fake_ops(&x->f, OP_SYMLINK), before);
	big[PROTO_PATH_MAX - 1] = '\0';		/* 4095 bytes: fine */
	assert_int_equal(maru_symlink(x->c, 1, "l", big, 0, 0, &a), 0);
}

static void test_link(void **state)
{
	struct fx *x = *state;
	struct proto_link_req r;
	struct maru_attr a;

	assert_int_equal(maru_link(x->c, 4, 2, "other", &a), 0);
	assert_int_equal(a.nlink, 2);
	memcpy(&r, x->s.body, sizeof(r));
	assert_int_equal(r.ino, 4);
	assert_int_equal(r.newparent, 2);
	assert_int_equal(r.namelen, 5);
	assert_memory_equal(x->s.body + sizeof(r), "other", 5);
	assert_int_equal(maru_link(x->c, 99, 2, "other", &a), -ENOENT);
	assert_int_equal(maru_link(x->c, 4, 2, "..", &a), -EINVAL);
}

static void test_mknod(void **state)
{
	struct fx *x = *state;
	struct proto_mknod_req r;
	struct maru_attr a;

	assert_int_equal(maru_mknod(x->c, 1, "dev", S_IFCHR | 0600, 0x103, 0, 0, &a), 0);
	assert_true(S_ISCHR(a.mode));
	assert_int_equal(a.rdev, 0x103);
	memcpy(&r, x->s.body, sizeof(r));
	assert_int_equal(r.mode, S_IFCHR | 0600);
	assert_int_equal(r.rdev, 0x103);
	assert_int_equal(maru_mknod(x->c, 1, "p", S_IFIFO | 0644, 0, 0, 0, &a), 0);
	assert_true(S_ISFIFO(a.mode));
	assert_int_equal(maru_mknod(x->c, 1, "f", S_IFREG | 0644, 0, 0, 0, &a), -EINVAL);
	assert_int_equal(maru_mknod(x->c, 1, "d", S_IFDIR | 0755, 0, 0, 0, &a), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_symlink_readlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_bad_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mknod, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
