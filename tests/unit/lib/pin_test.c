// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/pin_test.c: maru_pin_set() and maru_pin_get() (lib/pin.c)
 * against the fake marud (real sockets and frames, a handler written here
 * for PIN): each call is one PIN request carrying the version, the seconds
 * and PIN_F_QUERY for a get; the answer is the seconds left marud reports
 * (capped at INT32_MAX), marud's refusal the caller's error, a reply of the
 * wrong size -EIO; no client or no version is -EINVAL, unsent.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_marud.h"
#include "maru/libmaru.h"

static struct {
	struct proto_pin_req last;
	int n;
	int32_t status;		/* the answer to every PIN */
	uint32_t left;		/* the seconds left it reports */
	size_t rep_len;		/* the reply's size (8: right) */
} rec;

static int pin_handler(struct fake_req *q)
{
	struct proto_pin_rep rep = { .left = rec.left };

	if (q->h.op != OP_PIN || q->h.len != sizeof(rec.last))
		return fake_reply(q, -ENOSYS, NULL, 0, NULL, 0) ? -1 : 0;
	pthread_mutex_lock(&q->f->mu);
	memcpy(&rec.last, q->body, sizeof(rec.last));
	rec.n++;
	pthread_mutex_unlock(&q->f->mu);
	if (rec.status)
		return fake_reply(q, rec.status, NULL, 0, NULL, 0) ? -1 : 0;
	return fake_reply(q, 0, &rep, rec.rep_len, NULL, 0) ? -1 : 0;
}

static struct fake_marud f;
static struct maru_client *c;

static int setup(void **state)
{
	memset(&rec, 0, sizeof(rec));
	rec.rep_len = sizeof(struct proto_pin_rep);
	fake_start(&f, pin_handler, NULL);
	c = fake_client(&f, 2000, 1, NULL, 0);
	return c ? 0 : -1;
}

static int teardown(void **state)
{
	maru_client_free(c);
	fake_stop(&f);
	return 0;
}

static void test_refused_before_sending(void **state)
{
	assert_int_equal(maru_pin_set(NULL, 5, 60), -EINVAL);
	assert_int_equal(maru_pin_get(NULL, 5), -EINVAL);
	assert_int_equal(maru_pin_set(c, 0, 60), -EINVAL);
	assert_int_equal(maru_pin_get(c, 0), -EINVAL);
	assert_int_equal(fake_ops(&f, OP_PIN), 0);
}

static void test_set_and_get(void **state)
{
	rec.left = 600;
	assert_int_equal(maru_pin_set(c, 42, 600), 600);
	assert_int_equal(rec.n, 1);
	assert_int_equal(rec.last.ino, 42);
	assert_int_equal(rec.last.seconds, 600);
	assert_int_equal(rec.last.flags, 0);
	/* a get is a query: no seconds, PIN_F_QUERY */
	rec.left = 599;
	assert_int_equal(maru_pin_get(c, 42), 599);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.last.seconds, 0);
	assert_int_equal(rec.last.flags, PIN_F_QUERY);
	/* unpinning: 0 seconds set, 0 left */
	rec.left = 0;
	assert_int_equal(maru_pin_set(c, 42, 0), 0);
	/* seconds beyond an int: capped, never negative */
	rec.left = UINT32_MAX;
	assert_int_equal(maru_pin_get(c, 42), INT32_MAX);
}

static void test_refusals(void **state)
{
	rec.status = -ENOSPC;	/* over the pool's or the tenant's cap */
	assert_int_equal(maru_pin_set(c, 7, 60), -ENOSPC);
	rec.status = -EBUSY;	/* a pending version */
	assert_int_equal(maru_pin_set(c, 7, 60), -EBUSY);
	rec.status = -ESTALE;
	assert_int_equal(maru_pin_get(c, 7), -ESTALE);
	/* a reply of the wrong size is not believed */
	rec.status = 0;
	rec.rep_len = 4;
	assert_int_equal(maru_pin_get(c, 7), -EIO);
	assert_int_equal(rec.n, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refused_before_sending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_and_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};

	return cmocka_run_group_tests_name("lib/pin", tests, NULL, NULL);
}
