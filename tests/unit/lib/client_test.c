/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/client_test.c: a client's life against the fake marud
 * (fake_marud.c: a real Unix socket speaking the wire protocol): options
 * and defaults, connect, pool facts, and the per-client log. Every libmaru
 * line reaches opts.log_fn, including "marud at ... unreachable" once the
 * fake marud is gone, and log_priority keeps debug lines out unless asked.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_marud.h"
#include "maru/libmaru.h"

static struct maru_client *connect_fake(struct fake_marud *f, struct logbook *b, int prio)
{
	struct maru_client_opts o;
	struct maru_client *c = NULL;
	char uri[160];

	fake_uri(f, uri, sizeof(uri));
	maru_client_opts_init(&o, sizeof(o));
	assert_int_equal(o.log_priority, LOG_INFO);
	assert_null(o.log_fn);
	o.uri = uri;
	o.data_path = MARU_DATA_TCP;
	o.timeout_ms = 300;
	o.log_fn = log_cb;
	o.log_arg = b;
	o.log_priority = prio;
	assert_int_equal(maru_client_new(&o, &c), 0);
	return c;
}

static void test_connect_facts(void **state)
{
	struct logbook b;
	struct maru_pool_info pi;
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;

	(void)state;
	logbook_init(&b);
	fake_start(&f, NULL, NULL);
	c = connect_fake(&f, &b, LOG_INFO);
	assert_int_equal(maru_client_pool_info(c, &pi), 0);
	assert_int_equal(pi.generation, FAKE_GEN);
	assert_int_equal(pi.size, 1u << 20);
	assert_int_equal(pi.data_path, MARU_DATA_TCP);
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(st.capacity, 12345);
	/* LOG_INFO: the debug line about the connection is not delivered */
	assert_false(logged(&b, "connected, generation", LOG_DEBUG));
	maru_client_free(c);
	fake_stop(&f);
}

static void test_log_fn_unreachable(void **state)
{
	struct logbook b;
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;

	(void)state;
	logbook_init(&b);
	fake_start(&f, NULL, NULL);
	c = connect_fake(&f, &b, LOG_DEBUG);
	/* LOG_DEBUG: libmaru's debug lines arrive too */
	assert_true(logged(&b, "connected, generation 99, data path tcp", LOG_DEBUG));
	fake_stop(&f);
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	assert_true(logged(&b, "unreachable", LOG_WARNING));
	maru_client_free(c);
}

/*
 * Opts the caller zeroed instead of calling maru_client_opts_init():
 * log_priority 0 means the default, LOG_INFO, so the info line of a new
 * session arrives and debug lines stay out (0 used to mean LOG_EMERG).
 */
static void test_zeroed_opts_log_default(void **state)
{
	struct maru_client_opts o;
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	struct logbook b;
	char uri[160];

	(void)state;
	logbook_init(&b);
	fake_start(&f, NULL, NULL);
	fake_uri(&f, uri, sizeof(uri));
	memset(&o, 0, sizeof(o));
	o.uri = uri;
	o.data_path = MARU_DATA_TCP;
	o.log_fn = log_cb;
	o.log_arg = &b;
	assert_int_equal(maru_client_new(&o, &c), 0);
	assert_false(logged(&b, "connected, generation", -1));
	fake_forget(&f);
	fake_drop(&f);
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_true(logged(&b, "new session (generation 99 -> 99)", LOG_INFO));
	maru_client_free(c);
	fake_stop(&f);
}

static void test_opts_errors(void **state)
{
	struct maru_client_opts o;
	struct maru_client *c;

	(void)state;
	maru_client_opts_init(&o, sizeof(o));
	assert_int_equal(maru_client_new(&o, &c), -EINVAL);	/* no uri */
	o.uri = "maru+unix:///nonexistent/maru-client-test.sock";
	o.timeout_ms = 50;
	assert_int_equal(maru_client_new(&o, &c), -ECONNREFUSED);
	o.uri = "bogus://x";
	assert_int_equal(maru_client_new(&o, &c), -EINVAL);
	assert_int_equal(maru_client_new(NULL, &c), -EINVAL);
	maru_client_opts_init(&o, sizeof(o));
	assert_int_equal(o.spin_us, 50);
	o.uri = "maru+unix:///nonexistent/maru-client-test.sock";
	o.spin_us = 10001;	/* over 10 ms of polling is refused */
	assert_int_equal(maru_client_new(&o, &c), -EINVAL);
	assert_string_equal(maru_strerror(-ESTALE),
			    "Stale handle: marud restarted (new pool generation)");
	assert_non_null(maru_version());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_facts),
		cmocka_unit_test(test_log_fn_unreachable),
		cmocka_unit_test(test_zeroed_opts_log_default),
		cmocka_unit_test(test_opts_errors),
	};

	return cmocka_run_group_tests_name("client", tests, NULL, NULL);
}
