/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/intr_test.c: fs/intr.c against the fake libfuse (which
 * keeps the interrupt callback a request registered) and the real libmaru
 * cancel token. A request's interrupt fires the thread's token
 * INTR_GRACE_MS after the request began (at once when it ran longer): a
 * lookup, a write and a flush alike; a callback that
 * comes after its request ended (libfuse may run one late) fires nothing;
 * FORGET and RELEASE register none and start with the token clear.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "fake.h"
#include "intr.h"

/* The token intr.c bound to this thread (bound again at once). */
static struct maru_cancel *token(void)
{
	struct maru_cancel *t = maru_cancel_bind(NULL);

	maru_cancel_bind(t);
	return t;
}

static void test_interrupt_fires(void **state)
{
	struct mfs m;
	fuse_req_t r1, r2;

	fake_reset();
	fake_mount(&m);
	r1 = fake_req(&m);
	intr_begin(r1, OP_GETATTR);
	assert_non_null(token());
	assert_ptr_equal(fk.intr_req, r1);
	assert_false(maru_cancel_fired(token()));
	/* a request that has run past the grace ends at once */
	usleep(INTR_GRACE_MS * 1000);
	fk.intr_func(r1, fk.intr_data);
	assert_true(maru_cancel_fired(token()));
	/* the next request starts clear; a late callback of r1 does nothing */
	r2 = fake_req(&m);
	intr_begin(r2, OP_LOOKUP);
	assert_false(maru_cancel_fired(token()));
	usleep(INTR_GRACE_MS * 1000);
	fk.intr_func(r1, fk.intr_data);
	assert_false(maru_cancel_fired(token()));
	fk.intr_func(r2, fk.intr_data);
	assert_true(maru_cancel_fired(token()));
	/* RELEASE: no callback registered, the token cleared */
	fk.intr_req = NULL;
	intr_begin(fake_req(&m), OP_RELEASE);
	assert_null(fk.intr_req);
	assert_false(maru_cancel_fired(token()));
	fake_unmount(&m);
}

static void grace(int op)
{
	struct mfs m;
	fuse_req_t r;
	uint64_t t0;

	fake_reset();
	fake_mount(&m);
	r = fake_req(&m);
	t0 = mono_ms();
	intr_begin(r, op);
	fk.intr_func(r, fk.intr_data);
	if (mono_ms() - t0 < INTR_GRACE_MS / 2)
		assert_false(maru_cancel_fired(token()));
	while (!maru_cancel_fired(token()))
		usleep(5000);
	assert_true(mono_ms() - t0 >= INTR_GRACE_MS);
	assert_true(mono_ms() - t0 < INTR_GRACE_MS + 1000);
	fake_unmount(&m);
}

/* a stat(2) by a process with a signal pending (SA_RESTART, io_uring's
 * task work) is interrupted at once: it must not fail EINTR */
static void test_grace(void **state)
{
	grace(OP_WRITE);
	grace(OP_FLUSH);
	grace(OP_GETATTR);
	grace(OP_LOOKUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interrupt_fires),
		cmocka_unit_test(test_grace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
