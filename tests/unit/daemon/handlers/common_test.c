// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/common_test.c: what the handlers share
 * (daemon/handlers/common.c), seen in the replies of a real server: a
 * version's attributes in wire form (GETATTR: one proto_attr, no extents,
 * every field as the directory set it), the attr+extents reply of CREATE,
 * RESERVE, OPEN and EXTENTS (nextents extents follow, each inside the
 * pool's data area, together covering what is reserved, the same extents
 * asked twice), and a version's bytes gathered from its pool pieces (READ
 * of a file written across several extents gives back its bytes).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hreq.h"

/* The extents after the attr of f->r, checked against the pool; their sum. */
static uint64_t check_extents(struct hfx *f, const struct proto_attr *a,
			      struct proto_extent *v, uint32_t max)
{
	uint64_t sum = 0, pool = f->t.cfg.size;
	uint32_t i;

	assert_int_equal(f->r.len, sizeof(*a) + a->nextents * sizeof(struct proto_extent));
	assert_true(a->nextents <= max);
	memcpy(v, f->r.p + sizeof(*a), a->nextents * sizeof(*v));
	for (i = 0; i < a->nextents; i++) {
		assert_true(v[i].len > 0);
		assert_true(v[i].off >= 4096);		/* past the superblock */
		assert_true(v[i].off + v[i].len <= pool);
		sum += v[i].len;
	}
	return sum;
}

static void test_create_reply(void **state)
{
	struct hfx *f = *state;
	struct proto_extent v[64], w[64];
	struct proto_attr a, b;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "c", 3 * 4096), 0);
	a = hr_attr(f);
	assert_true(a.ino != 0);
	assert_int_equal(a.parent, HR_ROOT);
	assert_int_equal(a.size, 0);
	assert_true(a.reserved >= 3 * 4096);
	assert_int_equal(a.mode & 0777, 0644);
	assert_true(a.nextents >= 1);
	assert_true(check_extents(f, &a, v, 64) >= a.reserved);
	/* EXTENTS of the held version: the same reply */
	assert_int_equal(hr_ino(f, &f->a, OP_EXTENTS, a.ino), 0);
	b = hr_attr(f);
	assert_int_equal(b.ino, a.ino);
	assert_int_equal(b.nextents, a.nextents);
	check_extents(f, &b, w, 64);
	assert_memory_equal(v, w, a.nextents * sizeof(v[0]));
}

static void test_reserve_grows(void **state)
{
	struct hfx *f = *state;
	struct proto_extent v[64];
	struct proto_size_req q;
	struct proto_attr a;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "r", 4096), 0);
	q.ino = hr_attr(f).ino;
	q.size = 40 * 4096;
	assert_int_equal(tc_call(&f->a, OP_RESERVE, hr_id(), &q, sizeof(q), &f->r, NULL), 0);
	a = hr_attr(f);
	assert_true(a.reserved >= q.size);
	assert_true(check_extents(f, &a, v, 64) >= q.size);
}

static void test_getattr_plain(void **state)
{
	struct hfx *f = *state;
	static const char data[] = "common handlers";
	uint64_t ino = hr_file(f, &f->a, "g", data, sizeof(data));
	struct proto_attr a;

	assert_true(ino != 0);
	assert_int_equal(hr_ino(f, &f->b, OP_GETATTR, ino), 0);
	assert_int_equal(f->r.len, sizeof(struct proto_attr));
	a = hr_attr(f);
	assert_int_equal(a.ino, ino);
	assert_int_equal(a.size, sizeof(data));
	assert_int_equal(a.nextents, 0);
	assert_int_equal(a.nlink, 1);
	assert_true(a.mtime_ns != 0);
	assert_true(a.xxh3 != 0);		/* PUBLISH computed it */
}

static void test_open_and_read_pieces(void **state)
{
	struct hfx *f = *state;
	static uint8_t data[20 * 4096 + 123];
	struct proto_extent v[64];
	struct proto_attr a;
	uint64_t ino;
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 4096);
	ino = hr_file(f, &f->a, "big", data, sizeof(data));
	assert_true(ino != 0);
	assert_int_equal(hr_open(f, &f->b, HR_ROOT, "big"), 0);
	a = hr_attr(f);
	assert_int_equal(a.ino, ino);
	assert_int_equal(a.size, sizeof(data));
	assert_true(check_extents(f, &a, v, 64) >= sizeof(data));
	/* the whole file, then a piece across a page boundary */
	assert_int_equal(hr_read(f, &f->b, ino, 0, sizeof(data)), 0);
	assert_int_equal(f->r.len, sizeof(data));
	assert_memory_equal(f->r.p, data, sizeof(data));
	assert_int_equal(hr_read(f, &f->b, ino, 4096 - 10, 30), 0);
	assert_int_equal(f->r.len, 30);
	assert_memory_equal(f->r.p, data + 4096 - 10, 30);
	assert_int_equal(hr_ino(f, &f->b, OP_RELEASE, ino), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_reply, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_reserve_grows, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_getattr_plain, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_open_and_read_pieces, hfx_setup,
						hfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
