// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/ext/open_test.c: the open hint requests of a session
 * (daemon/ext/open.c) on their own: a set opens a request once (again: 1),
 * closes it once (again: 0), counts what is open and refuses the request
 * past PROTO_MAX_HINT_OPEN with -EMFILE until one closes; the session
 * table keys sets by a session's hint id (the same token, the same id;
 * another token, another), tracks open, close and "known" per session,
 * keeps sessions apart (also ids in one bucket), and forgets a session
 * once at its end; a NULL table tracks nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ext.h"
#include "proto.h"

static void test_open_set(void **state)
{
	struct hint_open *s = NULL;
	char req[32];
	int i;

	assert_int_equal(ext_open_count(s), 0);
	assert_int_equal(ext_open_del(s, "none"), 0);
	assert_int_equal(ext_open_add(&s, "r1"), 0);
	assert_non_null(s);
	assert_int_equal(ext_open_add(&s, "r1"), 1);
	assert_int_equal(ext_open_add(&s, "r2"), 0);
	assert_int_equal(ext_open_count(s), 2);
	assert_int_equal(ext_open_del(s, "r1"), 1);
	assert_int_equal(ext_open_del(s, "r1"), 0);
	assert_int_equal(ext_open_count(s), 1);
	/* r2 is still there after r1 left */
	assert_int_equal(ext_open_add(&s, "r2"), 1);
	for (i = 0; ext_open_count(s) < PROTO_MAX_HINT_OPEN; i++) {
		snprintf(req, sizeof(req), "many-%d", i);
		assert_int_equal(ext_open_add(&s, req), 0);
	}
	assert_int_equal(ext_open_add(&s, "one-more"), -EMFILE);
	assert_int_equal(ext_open_add(&s, "r2"), 1);	/* open ones still answer */
	assert_int_equal(ext_open_del(s, "many-0"), 1);
	assert_int_equal(ext_open_add(&s, "one-more"), 0);
	assert_int_equal(ext_open_count(s), PROTO_MAX_HINT_OPEN);
	ext_open_free(s);
	ext_open_free(NULL);
}

static void test_session_ids(void **state)
{
	uint8_t a[16], b[16];

	memset(a, 1, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_int_equal(ext_open_session_id(a, sizeof(a)), ext_open_session_id(b, sizeof(b)));
	assert_true(ext_open_session_id(a, sizeof(a)) != 0);
	b[15] ^= 1;
	assert_int_not_equal(ext_open_session_id(a, sizeof(a)), ext_open_session_id(b, sizeof(b)));
}

static void test_sessions(void **state)
{
	struct hint_sessions *t;
	/* 64 apart: one bucket of the table's 64 */
	const uint64_t s1 = 1000, s2 = 1064, s3 = 7;

	assert_int_equal(ext_open_sessions_new(&t), 0);
	assert_int_equal(ext_open_session_track(t, s1, 1, "a"), 0);
	assert_int_equal(ext_open_session_track(t, s1, 1, "a"), 1);
	assert_int_equal(ext_open_session_track(t, s1, 1, "b"), 0);
	assert_int_equal(ext_open_session_track(t, s2, 1, "a"), 0);
	assert_int_equal(ext_open_session_count(t, s1), 2);
	assert_int_equal(ext_open_session_count(t, s2), 1);
	assert_int_equal(ext_open_session_count(t, s3), 0);
	assert_int_equal(ext_open_session_track(t, s1, -1, "a"), 1);
	assert_int_equal(ext_open_session_track(t, s1, -1, "a"), 0);
	assert_int_equal(ext_open_session_count(t, s1), 1);
	assert_int_equal(ext_open_session_count(t, s2), 1);	/* its own "a" */
	/* known without anything open */
	assert_int_equal(ext_open_session_track(t, s3, 0, ""), 0);
	assert_int_equal(ext_open_session_end(t, s3), 1);
	assert_int_equal(ext_open_session_end(t, s3), 0);
	assert_int_equal(ext_open_session_end(t, s1), 1);
	assert_int_equal(ext_open_session_count(t, s1), 0);
	assert_int_equal(ext_open_session_count(t, s2), 1);
	assert_int_equal(ext_open_session_end(t, 424242), 0);
	ext_open_sessions_free(t);	/* s2 still in it */
	assert_int_equal(ext_open_session_track(NULL, s1, 1, "a"), 0);
	assert_int_equal(ext_open_session_count(NULL, s1), 0);
	assert_int_equal(ext_open_session_end(NULL, s1), 0);
	ext_open_sessions_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_set),
		cmocka_unit_test(test_session_ids),
		cmocka_unit_test(test_sessions),
	};

	return cmocka_run_group_tests_name("ext/open", tests, NULL, NULL);
}
