// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/ns_test.c: the namespace handlers
 * (daemon/handlers/ns.c) on a real server: MKDIR answers a directory's
 * attributes and LOOKUP finds it; SETATTR changes the mode and times and
 * answers them; RENAME answers the seq of the event it pushed (0 when it
 * pushed none) and moves the name; UNLINK and RMDIR remove names; READDIR
 * packs entries with their names, pages by cookie and says eof; EXISTS
 * answers one byte per name, in order.
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

static void test_mkdir_lookup_rmdir(void **state)
{
	struct hfx *f = *state;
	struct proto_attr d;

	assert_int_equal(hr_name(f, &f->a, OP_MKDIR, HR_ROOT, "d", 0750), 0);
	d = hr_attr(f);
	assert_true(S_ISDIR(d.mode));
	assert_int_equal(d.mode & 0777, 0750);
	assert_int_equal(d.parent, HR_ROOT);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "d", 0), 0);
	assert_int_equal(hr_attr(f).ino, d.ino);
	assert_int_equal(hr_name(f, &f->a, OP_MKDIR, HR_ROOT, "d", 0750), -EEXIST);
	assert_int_equal(hr_name(f, &f->a, OP_RMDIR, HR_ROOT, "d", 0), 0);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "d", 0), -ENOENT);
	assert_int_equal(hr_name(f, &f->a, OP_RMDIR, HR_ROOT, "d", 0), -ENOENT);
}

static void test_setattr(void **state)
{
	struct hfx *f = *state;
	uint64_t ino = hr_file(f, &f->a, "s", "abc", 3);
	struct proto_setattr_req q = { .ino = ino, .mask = SETATTR_MODE | SETATTR_MTIME,
				       .mode = 0600, .mtime_ns = 1234567890123ULL };
	struct proto_attr a;

	assert_true(ino != 0);
	assert_int_equal(tc_call(&f->a, OP_SETATTR, hr_id(), &q, sizeof(q), &f->r, NULL), 0);
	a = hr_attr(f);
	assert_int_equal(a.mode & 0777, 0600);
	assert_int_equal(a.mtime_ns, 1234567890123ULL);
	assert_int_equal(hr_ino(f, &f->b, OP_GETATTR, ino), 0);
	assert_int_equal(hr_attr(f).mode & 0777, 0600);
	assert_int_equal(hr_ino(f, &f->b, OP_GETATTR, ino + 1000), -ENOENT);
}

static int do_rename(struct hfx *f, const char *from, const char *to, uint64_t *seq)
{
	struct proto_rename_req q = { .oldparent = HR_ROOT, .newparent = HR_ROOT };
	struct proto_rename_rep rep;
	int rc;

	q.oldlen = (uint16_t)strlen(from);
	q.newlen = (uint16_t)strlen(to);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), from, q.oldlen);
	memcpy(f->buf + sizeof(q) + q.oldlen, to, q.newlen);
	rc = tc_call(&f->a, OP_RENAME, hr_id(), f->buf, sizeof(q) + q.oldlen + q.newlen,
		     &f->r, NULL);
	if (!rc) {
		assert_int_equal(f->r.len, sizeof(rep));
		memcpy(&rep, f->r.p, sizeof(rep));
		*seq = rep.seq;
	}
	return rc;
}

static void test_rename_unlink(void **state)
{
	struct hfx *f = *state;
	uint64_t ino = hr_file(f, &f->a, "old", "x", 1), seq = 0, seq2 = 0;

	assert_true(ino != 0);
	assert_int_equal(do_rename(f, "old", "new", &seq), 0);
	assert_true(seq != 0);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "old", 0), -ENOENT);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "new", 0), 0);
	assert_int_equal(hr_attr(f).ino, ino);
	/* onto itself: nothing pushed */
	assert_int_equal(do_rename(f, "new", "new", &seq2), 0);
	assert_int_equal(seq2, 0);
	assert_int_equal(do_rename(f, "absent", "x", &seq2), -ENOENT);
	assert_int_equal(hr_name(f, &f->a, OP_UNLINK, HR_ROOT, "new", 0), 0);
	assert_int_equal(hr_name(f, &f->b, OP_LOOKUP, HR_ROOT, "new", 0), -ENOENT);
	assert_int_equal(hr_name(f, &f->a, OP_UNLINK, HR_ROOT, "new", 0), -ENOENT);
}

/* READDIR of the root from cookie, at most max; the names in out. */
static uint32_t readdir_names(struct hfx *f, uint64_t *cookie, uint32_t max, char *out,
			      uint32_t *eof)
{
	struct proto_readdir_req q = { .dir = HR_ROOT, .cookie = *cookie, .max_entries = max };
	struct proto_readdir_rep rep;
	size_t off = sizeof(rep);
	uint32_t i;

	assert_int_equal(tc_call(&f->b, OP_READDIR, hr_id(), &q, sizeof(q), &f->r, NULL), 0);
	memcpy(&rep, f->r.p, sizeof(rep));
	for (i = 0; i < rep.count; i++) {
		struct proto_dirent de;

		assert_true(off + sizeof(de) <= f->r.len);
		memcpy(&de, f->r.p + off, sizeof(de));
		assert_true(de.ino != 0);
		assert_true(de.cookie > *cookie);
		*cookie = de.cookie;
		strncat(out, (const char *)f->r.p + off + sizeof(de), de.namelen);
		strcat(out, " ");
		off += (sizeof(de) + de.namelen + 7) & ~(size_t)7;
	}
	assert_int_equal(off, f->r.len);
	*eof = rep.eof;
	return rep.count;
}

static void test_readdir_pages(void **state)
{
	struct hfx *f = *state;
	char names[256] = "";
	uint64_t cookie = 0;
	uint32_t eof = 0, n = 0;

	assert_true(hr_file(f, &f->a, "f1", "1", 1) != 0);
	assert_true(hr_file(f, &f->a, "f2", "2", 1) != 0);
	assert_int_equal(hr_name(f, &f->a, OP_MKDIR, HR_ROOT, "sub", 0755), 0);
	while (!eof) {
		uint32_t got = readdir_names(f, &cookie, 1, names, &eof);

		assert_true(got <= 1);
		n += got;
		assert_true(n <= 3);
	}
	assert_int_equal(n, 3);
	assert_non_null(strstr(names, "f1 "));
	assert_non_null(strstr(names, "f2 "));
	assert_non_null(strstr(names, "sub "));
	/* all in one go */
	names[0] = '\0';
	cookie = 0;
	assert_int_equal(readdir_names(f, &cookie, 100, names, &eof), 3);
	assert_int_equal(eof, 1);
}

static void test_exists(void **state)
{
	struct hfx *f = *state;
	static const char *const ask[] = { "yes", "no", "yes" };
	struct proto_exists_req q = { .parent = HR_ROOT, .count = 3 };
	size_t off = sizeof(q);
	unsigned int i;

	assert_true(hr_file(f, &f->a, "yes", "y", 1) != 0);
	for (i = 0; i < 3; i++) {
		uint16_t n = (uint16_t)strlen(ask[i]);

		memcpy(f->buf + off, &n, sizeof(n));
		memcpy(f->buf + off + sizeof(n), ask[i], n);
		off += sizeof(n) + n;
	}
	memcpy(f->buf, &q, sizeof(q));
	assert_int_equal(tc_call(&f->b, OP_EXISTS, hr_id(), f->buf, off, &f->r, NULL), 0);
	assert_int_equal(f->r.len, 3);
	assert_int_equal(f->r.p[0], 1);
	assert_int_equal(f->r.p[1], 0);
	assert_int_equal(f->r.p[2], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mkdir_lookup_rmdir, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_setattr, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_rename_unlink, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_readdir_pages, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_exists, hfx_setup, hfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
