/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/ratelog_test.c: fs/ratelog.c: a call site writes one line,
 * counts the ones that come within the period, and writes again (saying
 * how many it left out) once the period is over.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ratelog.h"

static void test_one_line_per_period(void **state)
{
	struct ratelog rl = { 0 };
	uint64_t next;

	ratelog_warn(&rl, "first %d", 1);
	next = rl.next_ms;
	assert_true(next > 0);
	assert_int_equal(rl.dropped, 0);
	ratelog_warn(&rl, "second %d", 2);
	ratelog_warn(&rl, "third %d", 3);
	assert_int_equal(rl.dropped, 2);	/* counted, not written */
	assert_true(rl.next_ms == next);
	rl.next_ms = 0;				/* the period is over */
	ratelog_warn(&rl, "fourth %d", 4);
	assert_int_equal(rl.dropped, 0);	/* said with this line */
	assert_true(rl.next_ms > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_line_per_period),
	};

	return cmocka_run_group_tests_name("fs/ratelog", tests, NULL, NULL);
}
