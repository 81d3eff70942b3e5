/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/config_test.c: marud's configuration keys
 * (daemon/config.c): the defaults and config_set() (key spelling, unknown
 * keys, values refused, the listen list replaced per layer). The file and
 * command-line grammar are config_parse_test.c's, the checks and the
 * SIGHUP diff config_check_test.c's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"

#include "config_fixture.h"

static void test_defaults(void **state)
{
	struct config c;

	assert_int_equal(load(NULL, NULL, &c), 0);
	assert_string_equal(c.pool, CONFIG_DEFAULT_POOL);
	assert_int_equal(c.nlisten, 2);
	assert_string_equal(c.listen[0], CONFIG_DEFAULT_UNIX);
	assert_string_equal(c.listen[1], CONFIG_DEFAULT_TCP);
	assert_int_equal(c.eviction, DIR_EVICT_LRU);
	assert_int_equal(c.grace_ms, 30000);
	assert_int_equal(c.max_leases, 65536);
	assert_int_equal(c.ack_ms, 50);
	assert_int_equal(c.prealloc, 0);
	assert_int_equal(c.handshake_timeout_ms, 5000);
	assert_int_equal(c.handshake_max, 256);
	assert_int_equal(c.handshake_per_source, 64);
	assert_string_equal(c.metrics_listen, "");	/* no /metrics endpoint */
	assert_int_equal(c.metrics_remote, 0);
	assert_int_equal(c.histograms, 1);
	assert_string_equal(errbuf, "");
}

/*
 * config_set() is the one way into a struct config: keys with '_' or '-',
 * unknown keys and values out of range refused, and a layer that names
 * listen addresses replacing the lower layer's list rather than adding.
 */
static void test_set(void **state)
{
	struct config c;

	assert_int_equal(load(NULL, NULL, &c), 0);
	assert_int_equal(config_set(&c, "max_conns", "12", 1), 0);
	assert_int_equal(c.max_conns, 12);
	assert_int_equal(config_set(&c, "max-conns", "13", 1), 0);
	assert_int_equal(c.max_conns, 13);
	assert_int_equal(config_set(&c, "no-such-key", "1", 1), -ENOENT);
	assert_int_equal(config_set(&c, "a-key-name-longer-than-any-known-one", "1", 1),
			 -ENOENT);
	assert_int_equal(config_set(&c, "eviction", "sometimes", 1), -EINVAL);
	assert_int_equal(c.eviction, DIR_EVICT_LRU);
	assert_int_equal(config_set(&c, "eviction", "none", 1), 0);
	assert_int_equal(c.eviction, DIR_EVICT_NONE);
	assert_int_equal(config_set(&c, "fresh", "maybe", 1), -EINVAL);
	assert_int_equal(config_set(&c, "fresh", "yes", 1), 0);
	assert_int_equal(c.fresh, 1);
	/* the handshake limits: ranges checked, the value kept on a refusal */
	assert_int_equal(config_set(&c, "handshake-timeout-ms", "2500", 1), 0);
	assert_int_equal(c.handshake_timeout_ms, 2500);
	assert_int_equal(config_set(&c, "handshake_timeout_ms", "99", 1), -ERANGE);
	assert_int_equal(config_set(&c, "handshake-timeout-ms", "600001", 1), -ERANGE);
	assert_int_equal(c.handshake_timeout_ms, 2500);
	assert_int_equal(config_set(&c, "handshake-max", "32", 1), 0);
	assert_int_equal(c.handshake_max, 32);
	assert_int_equal(config_set(&c, "handshake-max", "0", 1), -ERANGE);
	assert_int_equal(config_set(&c, "handshake-per-source", "4", 2), 0);
	assert_int_equal(c.handshake_per_source, 4);
	assert_int_equal(config_set(&c, "handshake-per-source", "many", 2), -EINVAL);

	/* The file's listen list replaces the defaults; the command line's the file's. */
	assert_int_equal(config_set(&c, "listen", "unix:/tmp/a.sock", 1), 0);
	assert_int_equal(config_set(&c, "listen", "tcp://127.0.0.1:1", 1), 0);
	assert_int_equal(c.nlisten, 2);
	assert_string_equal(c.listen[0], "unix:/tmp/a.sock");
	assert_int_equal(config_set(&c, "listen", "unix:/tmp/b.sock", 2), 0);
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "unix:/tmp/b.sock");
	assert_int_equal(config_set(&c, "listen", "http://x", 2), -EINVAL);
	assert_int_equal(c.nlisten, 1);
	assert_int_equal(config_set(&c, "metrics-listen", "127.0.0.1:9464", 1), 0);
	assert_string_equal(c.metrics_listen, "127.0.0.1:9464");
	assert_int_equal(config_set(&c, "metrics_remote", "yes", 1), 0);
	assert_int_equal(c.metrics_remote, 1);
	assert_int_equal(config_set(&c, "histograms", "no", 2), 0);
	assert_int_equal(c.histograms, 0);
	assert_int_equal(config_set(&c, "histograms", "sometimes", 2), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_set),
	};

	return cmocka_run_group_tests_name("config", tests, config_fx_setup,
					   config_fx_teardown);
}
