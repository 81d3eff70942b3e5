// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/hint_test.c: HINT, HINTV and HINT_WAIT
 * (daemon/handlers/hint.c) on a real server with no region extension (the
 * extension's side is tests/unit/daemon/ext/hint_test.c): HINT takes a
 * read, read_end, promote or write on a version the connection may touch
 * and answers 0 (the madvise fallback), refuses an action out of range,
 * refuses a version it may not read or (write) that is not its pending
 * one, and counts each refusal in STATS; HINTV and HINT_WAIT answer
 * -EOPNOTSUPP since HELLO advertised no actions.
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

#define REFUSED "marud_hints_refused_total"

static int hint(struct hfx *f, struct tconn *tc, uint64_t ino, uint32_t action)
{
	struct proto_hint_req q = { .ino = ino, .hint = action };

	return tc_call(tc, OP_HINT, hr_id(), &q, sizeof(q), &f->r, NULL);
}

static void test_hint_allowed(void **state)
{
	struct hfx *f = *state;
	static uint8_t data[3 * 4096];
	uint64_t pub, mine;

	memset(data, 'h', sizeof(data));
	pub = hr_file(f, &f->a, "pub", data, sizeof(data));
	assert_true(pub != 0);
	assert_int_equal(hint(f, &f->b, pub, HINT_A_READ), 0);
	assert_int_equal(hint(f, &f->b, pub, HINT_A_PROMOTE), 0);
	assert_int_equal(hint(f, &f->b, pub, HINT_A_READ_END), 0);
	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "mine", 8192), 0);
	mine = hr_attr(f).ino;
	assert_int_equal(hint(f, &f->a, mine, HINT_A_WRITE), 0);
	assert_int_equal(hr_metric(f, &f->a, REFUSED), 0);
	/* a hint changes nothing: the bytes are as published */
	assert_int_equal(hr_open(f, &f->b, HR_ROOT, "pub"), 0);
	assert_int_equal(hr_read(f, &f->b, pub, 0, sizeof(data)), 0);
	assert_memory_equal(f->r.p, data, sizeof(data));
}

static void test_hint_refused(void **state)
{
	struct hfx *f = *state;
	uint64_t pub, mine;

	pub = hr_file(f, &f->a, "pub", "x", 1);
	assert_true(pub != 0);
	assert_int_equal(hint(f, &f->b, pub, 0), -EINVAL);
	assert_int_equal(hint(f, &f->b, pub, HINT_A_READ_WAIT), -EINVAL);
	assert_int_equal(hr_metric(f, &f->a, REFUSED), 0);
	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "mine", 8192), 0);
	mine = hr_attr(f).ino;
	/* another session's pending version: neither read nor write */
	assert_int_equal(hint(f, &f->b, mine, HINT_A_READ), -EPERM);
	assert_int_equal(hint(f, &f->b, mine, HINT_A_WRITE), -EPERM);
	/* a write hint on a published version */
	assert_int_equal(hint(f, &f->a, pub, HINT_A_WRITE), -EPERM);
	/* an unknown version */
	assert_int_not_equal(hint(f, &f->b, mine + 1000, HINT_A_READ), 0);
	assert_int_equal(hr_metric(f, &f->a, REFUSED), 4);
}

static int hintv(struct hfx *f, uint16_t op, uint32_t action, uint64_t ino)
{
	struct proto_hintv_req q = { .action = action, .count = 1, .reqlen = 2 };
	struct proto_hint_range g = { .ino = ino };

	if (op == OP_HINT_WAIT)
		q.timeout_ms = 10;
	memcpy(f->buf, &q, sizeof(q));
	memset(f->buf + sizeof(q), 0, 8);
	memcpy(f->buf + sizeof(q), "r1", 2);
	memcpy(f->buf + sizeof(q) + 8, &g, sizeof(g));
	return tc_call(&f->b, op, hr_id(), f->buf, sizeof(q) + 8 + sizeof(g), &f->r, NULL);
}

static void test_hintv_no_extension(void **state)
{
	struct hfx *f = *state;
	uint64_t pub = hr_file(f, &f->a, "pub", "x", 1);

	assert_true(pub != 0);
	assert_int_equal(hintv(f, OP_HINTV, HINT_A_READ, pub), -EOPNOTSUPP);
	assert_int_equal(hintv(f, OP_HINT_WAIT, HINT_A_READ_WAIT, pub), -EOPNOTSUPP);
	assert_int_equal(hr_metric(f, &f->a, REFUSED), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hint_allowed, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_hint_refused, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_hintv_no_extension, hfx_setup, hfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
