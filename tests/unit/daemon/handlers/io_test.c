// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/io_test.c: bytes between the socket and pool
 * memory (daemon/handlers/io.c) on a real server: WRITE answers the bytes
 * taken and the new size, reserves past the end by itself, zero-fills a
 * hole before it, and is refused on a version that is not this session's
 * pending one; READ answers the bytes up to the size (none past it),
 * refuses a length over the frame limit and a version it holds no lease
 * on (a published one included: OPEN first), and
 * a large READ and WRITE (split in two halves) move every byte; the byte
 * counters of STATS count both.
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

static struct proto_io_rep io_rep(const struct hfx *f)
{
	struct proto_io_rep rep;

	assert_int_equal(f->r.len, sizeof(rep));
	memcpy(&rep, f->r.p, sizeof(rep));
	return rep;
}

static void test_write_read_hole(void **state)
{
	struct hfx *f = *state;
	struct proto_io_rep rep;
	uint8_t zero[100] = { 0 };
	uint64_t ino;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "w", 4096), 0);
	ino = hr_attr(f).ino;
	assert_int_equal(hr_write(f, &f->a, ino, 0, "head", 4), 0);
	rep = io_rep(f);
	assert_int_equal(rep.done, 4);
	assert_int_equal(rep.size, 4);
	/* past the reservation, after a hole */
	assert_int_equal(hr_write(f, &f->a, ino, 3 * 4096 + 100, "tail", 4), 0);
	rep = io_rep(f);
	assert_int_equal(rep.done, 4);
	assert_int_equal(rep.size, 3 * 4096 + 104);
	assert_int_equal(hr_read(f, &f->a, ino, 0, 4), 0);
	assert_memory_equal(f->r.p, "head", 4);
	assert_int_equal(hr_read(f, &f->a, ino, 4096, 100), 0);
	assert_int_equal(f->r.len, 100);
	assert_memory_equal(f->r.p, zero, sizeof(zero));
	assert_int_equal(hr_read(f, &f->a, ino, 3 * 4096 + 100, 64), 0);
	assert_int_equal(f->r.len, 4);	/* up to the size only */
	assert_memory_equal(f->r.p, "tail", 4);
	assert_int_equal(hr_read(f, &f->a, ino, 1 << 20, 64), 0);
	assert_int_equal(f->r.len, 0);
}

static void test_write_refused(void **state)
{
	struct hfx *f = *state;
	uint64_t ino, pub;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "mine", 4096), 0);
	ino = hr_attr(f).ino;
	/* another session's pending version, an unknown one */
	assert_int_equal(hr_write(f, &f->b, ino, 0, "x", 1), -EPERM);
	assert_int_equal(hr_write(f, &f->a, ino + 1000, 0, "x", 1), -EPERM);
	/* a published version is nobody's to write */
	pub = hr_file(f, &f->a, "pub", "p", 1);
	assert_true(pub != 0);
	assert_int_not_equal(hr_write(f, &f->a, pub, 0, "x", 1), 0);
	/* the refused writes left the bytes alone */
	assert_int_equal(hr_open(f, &f->b, HR_ROOT, "pub"), 0);
	assert_int_equal(hr_read(f, &f->b, pub, 0, 8), 0);
	assert_int_equal(f->r.len, 1);
	assert_memory_equal(f->r.p, "p", 1);
}

static void test_read_refused(void **state)
{
	struct hfx *f = *state;
	uint64_t ino, pub;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "pending", 4096), 0);
	ino = hr_attr(f).ino;
	assert_int_equal(hr_write(f, &f->a, ino, 0, "secret", 6), 0);
	/* another session sees no pending bytes, nor an unknown version, nor
	 * a published one it has not opened */
	assert_int_not_equal(hr_read(f, &f->b, ino, 0, 6), 0);
	pub = hr_file(f, &f->a, "shut", "s", 1);
	assert_true(pub != 0);
	assert_int_equal(hr_read(f, &f->b, pub, 0, 1), -EPERM);
	assert_int_not_equal(hr_read(f, &f->b, ino + 1000, 0, 6), 0);
	/* longer than a frame may carry */
	assert_int_equal(hr_read(f, &f->a, ino, 0, TH_MAX_FRAME + 1), -EINVAL);
}

static void test_large_and_counted(void **state)
{
	struct hfx *f = *state;
	static uint8_t data[96 << 10];	/* over the half-split size */
	int64_t rd0, wr0;
	uint64_t ino;
	size_t i;

	rd0 = hr_metric(f, &f->a, "marud_bytes_read_total");
	wr0 = hr_metric(f, &f->a, "marud_bytes_written_total");
	assert_true(rd0 >= 0 && wr0 >= 0);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ (i >> 9));
	ino = hr_file(f, &f->a, "large", data, sizeof(data));
	assert_true(ino != 0);
	assert_int_equal(hr_open(f, &f->b, HR_ROOT, "large"), 0);
	assert_int_equal(hr_read(f, &f->b, ino, 0, sizeof(data)), 0);
	assert_int_equal(f->r.len, sizeof(data));
	assert_memory_equal(f->r.p, data, sizeof(data));
	assert_int_equal(hr_metric(f, &f->a, "marud_bytes_written_total") - wr0,
			 sizeof(data));
	assert_int_equal(hr_metric(f, &f->a, "marud_bytes_read_total") - rd0, sizeof(data));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_read_hole, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_write_refused, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_read_refused, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_large_and_counted, hfx_setup, hfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
