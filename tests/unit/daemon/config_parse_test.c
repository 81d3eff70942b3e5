/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/config_parse_test.c: where marud's settings come from
 * (daemon/config_parse.c): the command line (-d -n -v -f -D and long
 * options), config files good and bad with the exact error lines they
 * print (file:line), the layering defaults < file < command line (listen
 * lists replaced per layer) and value ranges.
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

static void test_good_file(void **state)
{
	const char *path = write_file("good.conf",
		"# marud test\n"
		"\n"
		"pool = file:/tmp/x#1   # a '#' inside a path stays\n"
		"size = 64M\n"
		"listen = unix:/tmp/m.sock\n"
		"listen = \"tcp://127.0.0.1:9999\"\n"
		"eviction = none\n"
		"grace = 0.25\n"
		"max_conns = 7\n"
		"max-frame = 1M\n"
		"max-leases = 0\n"
		"max-pending = 1G\n"
		"ack-timeout-ms = 0\n"
		"prealloc = yes\n"
		"  verbose=2  \n", 0644);
	struct config c;

	assert_int_equal(load(path, NULL, &c), 0);
	assert_string_equal(c.pool, "file:/tmp/x#1");
	assert_int_equal(c.size, 64ull << 20);
	assert_int_equal(c.nlisten, 2);
	assert_string_equal(c.listen[0], "unix:/tmp/m.sock");
	assert_string_equal(c.listen[1], "tcp://127.0.0.1:9999");
	assert_int_equal(c.eviction, DIR_EVICT_NONE);
	assert_int_equal(c.grace_ms, 250);
	assert_int_equal(c.max_conns, 7);
	assert_int_equal(c.max_frame, 1u << 20);
	assert_int_equal(c.max_leases, 0);
	assert_int_equal(c.max_pending, 1ull << 30);
	assert_int_equal(c.ack_ms, 0);
	assert_int_equal(c.prealloc, 1);
	assert_int_equal(c.verbose, 2);
	assert_string_equal(c.file, path);
	assert_string_equal(errbuf, "");
}

struct bad {
	const char *text;
	int rc;
	const char *msg;	/* expected error line, after "PATH:" */
};

static void test_bad_files(void **state)
{
	static const struct bad cases[] = {
		{ "pool = shm:a\nnonsense\n", -EINVAL, "2: expected key = value\n" },
		{ "colour = blue\n", -ENOENT, "1: unknown key 'colour'\n" },
		{ "pool = nfs:/x\n", -EINVAL,
		  "1: bad value 'nfs:/x' for pool: Invalid argument\n" },
		{ "eviction = fifo\n", -EINVAL,
		  "1: bad value 'fifo' for eviction: Invalid argument\n" },
		{ "max-frame = 1K\n", -ERANGE, "1: bad value '1K' for max-frame: " },
		{ "grace = 1.2345\n", -EINVAL, "1: bad value '1.2345' for grace: " },
		{ "max-conns = 0\n", -ERANGE, "1: bad value '0' for max-conns: " },
		{ "listen = http://x\n", -EINVAL, "1: bad value 'http://x' for listen: " },
		{ "verbose = 10\n", -ERANGE, "1: bad value '10' for verbose: " },
	};
	char want[PATH_MAX + 128];
	struct config c;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = write_file("bad.conf", cases[i].text, 0644);

		assert_int_equal(load(path, NULL, &c), cases[i].rc);
		snprintf(want, sizeof(want), "%s:%s", path, cases[i].msg);
		if (strncmp(errbuf, want, strlen(want)))
			fail_msg("case %zu: got '%s', want '%s'", i, errbuf, want);
	}
	assert_int_equal(load("/nonexistent/marud.conf", NULL, &c), -ENOENT);
	assert_string_equal(errbuf, "/nonexistent/marud.conf: No such file or directory\n");
}

static void test_overrides(void **state)
{
	static const char *const defs[] = {
		"eviction", "lru", "max_leases", "5", "listen", "unix:/tmp/cli.sock", NULL
	};
	static const char *const bad_key[] = { "colour", "blue", NULL };
	static const char *const bad_val[] = { "size", "lots", NULL };
	const char *path = write_file("o.conf", "eviction = none\nmax-leases = 9\n"
				      "listen = unix:/tmp/a\nlisten = unix:/tmp/b\n", 0644);
	struct config c;

	assert_int_equal(load(path, defs, &c), 0);
	assert_int_equal(c.eviction, DIR_EVICT_LRU);	/* command line wins */
	assert_int_equal(c.max_leases, 5);
	/* The command line's listen list replaces the file's. */
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "unix:/tmp/cli.sock");
	assert_int_equal(load(NULL, bad_key, &c), -ENOENT);
	assert_string_equal(errbuf, "unknown option 'colour'\n");
	assert_int_not_equal(load(NULL, bad_val, &c), 0);
	assert_int_equal(strncmp(errbuf, "bad value 'lots' for size: ", 27), 0);
	assert_int_equal(config_set(&c, "", "x", 2), -ENOENT);
	assert_int_equal(config_set(&c, "ack_timeout_publish_ms", "60001", 2), -ERANGE);
	assert_int_equal(config_set(&c, "ack_timeout_publish_ms", "60000", 2), 0);
	assert_int_equal(c.ack_publish_ms, 60000);
}

static void test_parse_args(void **state)
{
	char *argv1[] = { "marud", "-d", "-n", "-v", "-v", "-f", "/etc/m.conf",
			  "-D", "grace = 3", "--max-leases", "4", "--prealloc",
			  "--handshake-timeout-ms", "900", "--handshake-per-source", "8", NULL };
	char *argv2[] = { "marud", "-D", "novalue", NULL };
	char *argv3[] = { "marud", "stray", NULL };
	struct config_args a;
	FILE *saved = stderr;

	assert_int_equal(config_parse_args(16, argv1, &a), 0);
	assert_int_equal(a.foreground, 1);
	assert_int_equal(a.check_only, 1);
	assert_int_equal(a.verbose, 2);
	assert_string_equal(a.file, "/etc/m.conf");
	assert_int_equal(a.ndefs, 5);
	assert_string_equal(a.defs[0].key, "grace");
	assert_string_equal(a.defs[0].value, "3");
	assert_string_equal(a.defs[1].key, "max-leases");
	assert_string_equal(a.defs[1].value, "4");
	assert_string_equal(a.defs[2].key, "prealloc");	/* the flag is its key */
	assert_string_equal(a.defs[2].value, "yes");
	assert_string_equal(a.defs[3].key, "handshake-timeout-ms");
	assert_string_equal(a.defs[3].value, "900");
	assert_string_equal(a.defs[4].key, "handshake-per-source");
	assert_string_equal(a.defs[4].value, "8");
	/* Usage goes to stderr on errors: keep the test output clean. */
	stderr = fopen("/dev/null", "w");
	assert_int_equal(config_parse_args(3, argv2, &a), -EINVAL);
	assert_int_equal(config_parse_args(2, argv3, &a), -EINVAL);
	fclose(stderr);
	stderr = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_parse_args),
	};

	return cmocka_run_group_tests_name("config_parse", tests, config_fx_setup,
					   config_fx_teardown);
}
