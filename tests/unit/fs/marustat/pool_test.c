// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/marustat/pool_test.c: marustat's pool source
 * (fs/marustat/pool.c) against the fake marud of the libmaru tests (real
 * sockets, real libmaru; the STATS answer is the test's): pool_open()
 * connects over tcp and pool_fetch() gives marud's text without a single
 * line of marustat's own client families (maru_client_*: samples, HELP
 * and TYPE), every marud line kept in order; a pool nobody listens on
 * fails the open with a message naming the URI.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_marud.h"
#include "maru/libmaru.h"
#include "pool.h"

#define MARUD_TEXT "# HELP marud_up Up.\n# TYPE marud_up gauge\nmarud_up 1\n" \
		   "marud_client_like_total 3\n"

static int stats_handler(struct fake_req *q)
{
	if (q->h.op == OP_STATS)
		return fake_reply(q, 0, MARUD_TEXT, strlen(MARUD_TEXT), NULL, 0) ? -1 : 0;
	return fake_reply(q, -ENOSYS, NULL, 0, NULL, 0) ? -1 : 0;
}

static void test_fetch_strips_own_client(void **state)
{
	struct fake_marud f;
	struct maru_client *c = NULL;
	char uri[256], err[256] = "", *text = NULL;

	fake_start(&f, stats_handler, NULL);
	fake_uri(&f, uri, sizeof(uri));
	assert_int_equal(pool_open(uri, NULL, &c, err, sizeof(err)), 0);
	assert_non_null(c);
	assert_int_equal(pool_fetch(c, uri, &text, err, sizeof(err)), 0);
	assert_non_null(text);
	/* libmaru adds its own maru_client_* families; none are left */
	assert_null(strstr(text, "maru_client_"));
	assert_non_null(strstr(text, "# HELP marud_up Up.\n# TYPE marud_up gauge\nmarud_up 1\n"
				     "marud_client_like_total 3\n"));
	free(text);
	pool_close(c);
	fake_stop(&f);
}

static void test_unreachable(void **state)
{
	struct maru_client *c = NULL;
	char err[256] = "";

	/* port 1 on loopback: nothing listens there */
	assert_true(pool_open("maru://127.0.0.1:1", NULL, &c, err, sizeof(err)) < 0);
	assert_null(c);
	assert_non_null(strstr(err, "maru://127.0.0.1:1: cannot connect to marud"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fetch_strips_own_client),
		cmocka_unit_test(test_unreachable),
	};

	return cmocka_run_group_tests_name("fs/marustat/pool", tests, NULL, NULL);
}
