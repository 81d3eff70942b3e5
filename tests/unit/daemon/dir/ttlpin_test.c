/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/ttlpin_test.c: the TTL pin table (daemon/dir/ttlpin.c)
 * with a clock the test moves: deadlines and seconds left (rounded up),
 * the clamp to max_seconds, renewal without a new cap check, the pool
 * and tenant caps (a refused pin changes nothing and drops no other pin),
 * lazy expiry earliest first, absolute deadlines (a replayed record) and
 * the walk in deadline order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ttlpin.h"

#define S	TTLPIN_NS
#define MB	(1ull << 20)

static void test_set_left_clamp(void **state)
{
	struct ttlpins t;
	uint64_t until = 0, now = 1000 * S;

	ttlpin_init(&t, 100 * MB, 60);
	assert_int_equal(ttlpin_left(&t, 7, now), 0);
	assert_int_equal(ttlpin_set(&t, 7, MB, 0, now, 10, &until), 0);
	assert_true(until == now + 10 * S);
	assert_int_equal(ttlpin_left(&t, 7, now), 10);
	assert_int_equal(ttlpin_left(&t, 7, now + S / 2), 10);	/* rounded up */
	assert_int_equal(ttlpin_left(&t, 7, now + 9 * S + 1), 1);
	assert_int_equal(ttlpin_left(&t, 7, now + 10 * S), 0);
	/* longer than max_seconds: clamped, not refused */
	assert_int_equal(ttlpin_set(&t, 8, MB, 0, now, 100000, &until), 0);
	assert_true(until == now + 60 * S);
	assert_int_equal(ttlpin_left(&t, 8, now), 60);
	assert_int_equal(ttlpin_set(&t, 9, MB, 0, now, 0, NULL), -EINVAL);
	assert_true(t.count == 2 && t.bytes == 2 * MB);
	assert_int_equal(ttlpin_clear(&t, 7), 0);
	assert_int_equal(ttlpin_clear(&t, 7), -ENOENT);
	assert_true(t.count == 1 && t.bytes == MB);
	ttlpin_fini(&t);
	assert_true(t.count == 0 && t.bytes == 0);
}

static void test_pool_cap(void **state)
{
	struct ttlpins t;
	uint64_t now = S;

	ttlpin_init(&t, 3 * MB, 0);
	assert_int_equal(ttlpin_set(&t, 1, 2 * MB, 0, now, 10, NULL), 0);
	assert_int_equal(ttlpin_set(&t, 2, 2 * MB, 0, now, 10, NULL), -ENOSPC);
	assert_int_equal(t.refused, 1);
	/* the refusal changed nothing: the first pin is whole */
	assert_int_equal(ttlpin_left(&t, 1, now), 10);
	assert_null(ttlpin_find(&t, 2));
	assert_true(t.count == 1 && t.bytes == 2 * MB);
	/* renewing a pin needs no room */
	assert_int_equal(ttlpin_set(&t, 1, 2 * MB, 0, now, 99, NULL), 0);
	assert_int_equal(ttlpin_left(&t, 1, now), 99);
	assert_true(t.bytes == 2 * MB);
	assert_int_equal(ttlpin_set(&t, 2, MB, 0, now, 10, NULL), 0);	/* exactly the cap */
	assert_int_equal(ttlpin_set(&t, 3, 1, 0, now, 10, NULL), -ENOSPC);
	/* no pin at all over a cap of 0; no overflow near UINT64_MAX */
	ttlpin_fini(&t);
	ttlpin_init(&t, 0, 0);
	assert_int_equal(ttlpin_set(&t, 1, 1, 0, now, 10, NULL), -ENOSPC);
	ttlpin_fini(&t);
	ttlpin_init(&t, UINT64_MAX, 0);
	assert_int_equal(ttlpin_set(&t, 1, UINT64_MAX - 1, 0, now, 10, NULL), 0);
	assert_int_equal(ttlpin_set(&t, 2, 2, 0, now, 10, NULL), -ENOSPC);
	ttlpin_fini(&t);
}

static void test_tenant_cap(void **state)
{
	struct ttlpins t;
	uint64_t now = S;

	ttlpin_init(&t, 100 * MB, 0);
	assert_int_equal(ttlpin_tenant_cap(&t, 0, MB), -EINVAL);
	assert_int_equal(ttlpin_tenant_cap(&t, 5, 3 * MB), 0);
	assert_int_equal(ttlpin_set(&t, 1, 2 * MB, 5, now, 10, NULL), 0);
	assert_int_equal(ttlpin_set(&t, 2, 2 * MB, 5, now, 10, NULL), -ENOSPC);
	/* another tenant, and no tenant, are not held by tenant 5's cap */
	assert_int_equal(ttlpin_set(&t, 3, 2 * MB, 6, now, 10, NULL), 0);
	assert_int_equal(ttlpin_set(&t, 4, 2 * MB, 0, now, 10, NULL), 0);
	assert_true(ttlpin_tenant_bytes(&t, 5) == 2 * MB);
	assert_int_equal(ttlpin_clear(&t, 1), 0);
	assert_true(ttlpin_tenant_bytes(&t, 5) == 0);
	assert_int_equal(ttlpin_set(&t, 2, 2 * MB, 5, now, 10, NULL), 0);
	/* a tenant with no cap set yet (a replayed pin) is counted, not capped */
	assert_int_equal(ttlpin_set(&t, 8, 40 * MB, 9, now, 10, NULL), 0);
	assert_true(ttlpin_tenant_bytes(&t, 9) == 40 * MB);
	assert_int_equal(ttlpin_tenant_cap(&t, 9, MB), 0);
	assert_int_equal(ttlpin_set(&t, 9, 1, 9, now, 10, NULL), -ENOSPC);
	/* lifting the cap */
	assert_int_equal(ttlpin_tenant_cap(&t, 5, 0), 0);
	assert_int_equal(ttlpin_set(&t, 7, 50 * MB, 5, now, 10, NULL), 0);
	ttlpin_fini(&t);
}

static int collect(void *arg, const struct ttlpin *p)
{
	uint64_t **at = arg;

	*(*at)++ = p->id;
	return 0;
}

static void test_expiry_order_and_walk(void **state)
{
	struct ttlpins t;
	uint64_t now = 100 * S, ids[8], *at = ids;

	ttlpin_init(&t, UINT64_MAX, 0);
	assert_int_equal(ttlpin_set(&t, 30, 1, 0, now, 30, NULL), 0);
	assert_int_equal(ttlpin_set(&t, 10, 1, 0, now, 10, NULL), 0);
	assert_int_equal(ttlpin_set(&t, 20, 1, 0, now, 20, NULL), 0);
	assert_int_equal(ttlpin_set(&t, 11, 1, 0, now, 10, NULL), 0);	/* same deadline */
	assert_int_equal(ttlpin_walk(&t, collect, &at), 0);
	assert_int_equal(at - ids, 4);
	assert_true(ids[0] == 10 && ids[1] == 11 && ids[2] == 20 && ids[3] == 30);
	assert_int_equal(ttlpin_expired(&t, now + 9 * S), 0);	/* none yet: one look */
	assert_true(ttlpin_expired(&t, now + 20 * S) == 10);
	assert_true(ttlpin_expired(&t, now + 20 * S) == 11);
	assert_true(ttlpin_expired(&t, now + 20 * S) == 20);
	assert_int_equal(ttlpin_expired(&t, now + 20 * S), 0);
	assert_int_equal(t.expired, 3);
	assert_true(t.count == 1 && ttlpin_left(&t, 30, now + 20 * S) == 10);
	/* a renewal moves the deadline in the order */
	assert_int_equal(ttlpin_set(&t, 30, 1, 0, now + 20 * S, 1, NULL), 0);
	assert_true(ttlpin_expired(&t, now + 21 * S) == 30);
	ttlpin_fini(&t);
}

static void test_absolute_deadline(void **state)
{
	struct ttlpins t;
	uint64_t now = 100 * S;

	ttlpin_init(&t, 2, 5);
	/* a replayed deadline is taken as is (not clamped: it was when set) */
	assert_int_equal(ttlpin_set_until(&t, 1, 1, 0, now, now + 50 * S), 0);
	assert_int_equal(ttlpin_left(&t, 1, now), 50);
	assert_int_equal(ttlpin_set_until(&t, 2, 1, 0, now, now), -ETIME);
	assert_int_equal(ttlpin_set_until(&t, 3, 1, 0, now, now - S), -ETIME);
	assert_int_equal(ttlpin_set_until(&t, 4, 5, 0, now, now + S), -ENOSPC);
	assert_true(t.count == 1);
	ttlpin_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_left_clamp),
		cmocka_unit_test(test_pool_cap),
		cmocka_unit_test(test_tenant_cap),
		cmocka_unit_test(test_expiry_order_and_walk),
		cmocka_unit_test(test_absolute_deadline),
	};

	return cmocka_run_group_tests_name("ttlpin", tests, NULL, NULL);
}
