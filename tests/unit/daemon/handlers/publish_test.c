// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/publish_test.c: a PUBLISH asked again
 * (daemon/handlers/version.c), on a real server through the fuzzing seam,
 * seen through the wire only. A client whose reply was lost asks again with
 * a new request id when its reply cache entry is gone or marud restarted:
 * a version already published with that size is answered as done, with its
 * attributes; another size, another hash, a pending version of another
 * session and a version never published are still refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hreq.h"

static int publish_hash(struct hfx *f, struct tconn *tc, uint64_t ino, uint64_t size,
			uint64_t xxh3)
{
	struct proto_publish_req q = { .ino = ino, .size = size, .xxh3 = xxh3 };

	return tc_call(tc, OP_PUBLISH, hr_id(), &q, sizeof(q), &f->r, NULL);
}

static void test_publish_asked_again(void **state)
{
	struct hfx *f = *state;
	struct proto_attr a;
	uint64_t ino, hash;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "again", 4096), 0);
	ino = hr_attr(f).ino;
	assert_int_equal(hr_write(f, &f->a, ino, 0, "0123456789", 10), 0);
	assert_int_equal(hr_publish(f, &f->a, ino, 10), 0);
	a = hr_attr(f);
	hash = a.xxh3;
	assert_int_equal(a.ino, ino);
	/* asked again, a new request id: answered as done, same attributes */
	assert_int_equal(hr_publish(f, &f->a, ino, 10), 0);
	a = hr_attr(f);
	assert_int_equal(a.ino, ino);
	assert_int_equal(a.size, 10);
	assert_int_equal(a.xxh3, hash);
	assert_int_equal(publish_hash(f, &f->a, ino, 10, hash), 0);
	/* what was not published is refused as before */
	assert_int_equal(hr_publish(f, &f->a, ino, 9), -EPERM);
	assert_int_equal(publish_hash(f, &f->a, ino, 10, hash + 1), -EPERM);
	assert_int_equal(hr_publish(f, &f->a, 987654321, 10), -EPERM);
	/* another session's pending version stays its own */
	assert_int_equal(hr_create(f, &f->b, HR_ROOT, "theirs", 4096), 0);
	ino = hr_attr(f).ino;
	assert_int_equal(hr_publish(f, &f->a, ino, 0), -EPERM);
	assert_int_equal(hr_publish(f, &f->b, ino, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_publish_asked_again, hfx_setup,
						hfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
