// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/pin_test.c: PIN (daemon/handlers/pin.c) on a
 * real server through the fuzzing seam, seen only through the wire, with
 * pin-max-seconds 100 and pin-max-bytes 8 KiB: a pin on a published
 * version answers the seconds left, clamped to pin-max-seconds; a query
 * answers them and changes nothing; 0 seconds clears; any session may pin
 * what it may read; a pending version is -EBUSY, an unknown one refused;
 * a pin past the pool's cap of pinned bytes is -ENOSPC and the pins held
 * stay. Tenants' pins (read-only keys, their own cap) run against real
 * mounts in the security suite (pin_* cases).
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

static int pin(struct hfx *f, struct tconn *tc, uint64_t ino, uint32_t seconds,
	       uint32_t flags, uint32_t *left)
{
	struct proto_pin_req q = { .ino = ino, .seconds = seconds, .flags = flags };
	struct proto_pin_rep r;
	int rc = tc_call(tc, OP_PIN, hr_id(), &q, sizeof(q), &f->r, NULL);

	if (rc == 0) {
		assert_int_equal(f->r.len, sizeof(r));
		memcpy(&r, f->r.p, sizeof(r));
		*left = r.left;
	}
	return rc;
}

static int setup(void **state)
{
	struct hfx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	th_config(&f->t);
	f->t.cfg.pin_max_seconds = 100;
	f->t.cfg.pin_max_bytes = 8192;
	if (th_new(&f->t, NULL)) {
		free(f);
		return -1;
	}
	tc_open(&f->t, &f->a);
	tc_open(&f->t, &f->b);
	if (tc_hello(&f->a, NULL, NULL) || tc_hello(&f->b, NULL, NULL))
		return -1;
	*state = f;
	return 0;
}

static void test_set_query_clear(void **state)
{
	struct hfx *f = *state;
	uint32_t left = 0;
	uint64_t pub = hr_file(f, &f->a, "pub", "pinned", 6);

	assert_true(pub != 0);
	/* another session than the writer's may pin what it may read */
	assert_int_equal(pin(f, &f->b, pub, 60, 0, &left), 0);
	assert_in_range(left, 59, 60);
	assert_int_equal(pin(f, &f->a, pub, 0, PIN_F_QUERY, &left), 0);
	assert_in_range(left, 59, 60);
	/* longer than pin-max-seconds: clamped */
	assert_int_equal(pin(f, &f->a, pub, 5000, 0, &left), 0);
	assert_in_range(left, 99, 100);
	/* 0 seconds: no pin any more */
	assert_int_equal(pin(f, &f->b, pub, 0, 0, &left), 0);
	assert_int_equal(left, 0);
	assert_int_equal(pin(f, &f->b, pub, 0, PIN_F_QUERY, &left), 0);
	assert_int_equal(left, 0);
}

static void test_refused(void **state)
{
	struct hfx *f = *state;
	static uint8_t big[8 * 4096];
	uint32_t left = 0;
	uint64_t mine, small, large;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "pending", 4096), 0);
	mine = hr_attr(f).ino;
	assert_int_equal(pin(f, &f->a, mine, 60, 0, &left), -EBUSY);
	assert_int_not_equal(pin(f, &f->a, mine + 1000, 60, 0, &left), 0);
	/* the pool's cap of pinned bytes (8 KiB): the second pin would pass it */
	small = hr_file(f, &f->a, "small", big, 4096);
	large = hr_file(f, &f->a, "large", big, sizeof(big));
	assert_true(small && large);
	assert_int_equal(pin(f, &f->b, small, 60, 0, &left), 0);
	assert_int_equal(pin(f, &f->b, large, 60, 0, &left), -ENOSPC);
	/* the pin held before is still there */
	assert_int_equal(pin(f, &f->b, small, 0, PIN_F_QUERY, &left), 0);
	assert_in_range(left, 59, 60);
	assert_int_equal(pin(f, &f->b, large, 0, PIN_F_QUERY, &left), 0);
	assert_int_equal(left, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_set_query_clear, setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, hfx_teardown),
	};

	return cmocka_run_group_tests_name("daemon/handlers/pin", tests, NULL, NULL);
}
