/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/config_test.c: marud's configuration (daemon/config.c):
 * the command line (-d -n -v -f -D and long options), config files good
 * and bad with the exact error lines they print (file:line), the layering
 * defaults < file < command line (listen lists replaced per layer), value
 * ranges, the key file mode check, the loopback rule and the SIGHUP diff.
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

static char tmpdir[] = "/tmp/marud-config-test.XXXXXX";
static char errbuf[4096];

/* Write text to tmpdir/name with mode; returns the path (static buffer). */
static const char *write_file(const char *name, const char *text, mode_t mode)
{
	static char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

/* config_load of file (may be NULL) and -D defines; errors into errbuf. */
static int load(const char *file, const char *const *defs, struct config *c)
{
	struct config_args a = { 0 };
	FILE *err = fmemopen(errbuf, sizeof(errbuf), "w");
	int rc;

	assert_non_null(err);
	memset(errbuf, 0, sizeof(errbuf));
	a.file = file;
	for (; defs && *defs; defs += 2) {
		snprintf(a.defs[a.ndefs].key, sizeof(a.defs[0].key), "%s", defs[0]);
		a.defs[a.ndefs++].value = defs[1];
	}
	rc = config_load(&a, c, err);
	fclose(err);
	return rc;
}

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
	assert_string_equal(errbuf, "");
}

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
			  "-D", "grace = 3", "--max-leases", "4", "--prealloc", NULL };
	char *argv2[] = { "marud", "-D", "novalue", NULL };
	char *argv3[] = { "marud", "stray", NULL };
	struct config_args a;
	FILE *saved = stderr;

	assert_int_equal(config_parse_args(12, argv1, &a), 0);
	assert_int_equal(a.foreground, 1);
	assert_int_equal(a.check_only, 1);
	assert_int_equal(a.verbose, 2);
	assert_string_equal(a.file, "/etc/m.conf");
	assert_int_equal(a.ndefs, 3);
	assert_string_equal(a.defs[0].key, "grace");
	assert_string_equal(a.defs[0].value, "3");
	assert_string_equal(a.defs[1].key, "max-leases");
	assert_string_equal(a.defs[1].value, "4");
	assert_string_equal(a.defs[2].key, "prealloc");	/* the flag is its key */
	assert_string_equal(a.defs[2].value, "yes");
	/* Usage goes to stderr on errors: keep the test output clean. */
	stderr = fopen("/dev/null", "w");
	assert_int_equal(config_parse_args(3, argv2, &a), -EINVAL);
	assert_int_equal(config_parse_args(2, argv3, &a), -EINVAL);
	fclose(stderr);
	stderr = saved;
}

static void test_key_file_and_loopback(void **state)
{
	uint8_t key[CONFIG_KEY_BYTES], key2[CONFIG_KEY_BYTES];
	const char *path;
	struct config c;
	char p600[PATH_MAX];
	int have;
	FILE *err;

	path = write_file("key", "secret", 0644);
	err = fmemopen(errbuf, sizeof(errbuf), "w");
	assert_int_equal(config_load_key(path, key, err), -EPERM);
	fclose(err);
	assert_non_null(strstr(errbuf, "mode 0644 gives group/other access"));
	path = write_file("key", "secret", 0600);
	snprintf(p600, sizeof(p600), "%s", path);
	assert_int_equal(config_load_key(p600, key, NULL), 0);
	assert_int_equal(config_load_key(p600, key2, NULL), 0);
	assert_memory_equal(key, key2, sizeof(key));
	assert_int_equal(config_load_key(tmpdir, key, NULL), -EPERM);	/* a directory */
	assert_true(config_host_is_loopback("127.0.0.1"));
	assert_true(config_host_is_loopback("127.9.9.9"));
	assert_true(config_host_is_loopback("::1"));
	assert_true(config_host_is_loopback("localhost"));
	assert_false(config_host_is_loopback("10.0.0.1"));
	/* A non-loopback TCP listener needs a key. */
	assert_int_equal(load(NULL, NULL, &c), 0);
	snprintf(c.listen[1], sizeof(c.listen[1]), "tcp://10.1.2.3:7450");
	err = fmemopen(errbuf, sizeof(errbuf), "w");
	assert_int_equal(config_validate(&c, key, &have, err), -EPERM);
	fclose(err);
	assert_non_null(strstr(errbuf, "not a loopback address and no key-file"));
	snprintf(c.key_file, sizeof(c.key_file), "%s", p600);
	assert_int_equal(config_validate(&c, key, &have, NULL), 0);
	assert_int_equal(have, 1);
	c.nlisten = 0;
	assert_int_equal(config_validate(&c, key, &have, NULL), -EINVAL);
}

static void test_diff(void **state)
{
	struct config a, b;

	assert_int_equal(load(NULL, NULL, &a), 0);
	b = a;
	assert_int_equal(config_diff_log(&a, &b), 0);
	b.grace_ms = 1;
	b.ack_ms = 2;
	assert_int_equal(config_diff_log(&a, &b), 0);	/* applied live */
	b.eviction = DIR_EVICT_NONE;
	snprintf(b.pool, sizeof(b.pool), "shm:other");
	b.nlisten = 1;
	assert_int_equal(config_diff_log(&a, &b), 3);
	assert_string_equal(config_eviction_name(DIR_EVICT_NONE), "none");
	assert_string_equal(config_eviction_name(DIR_EVICT_LRU), "lru");
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	static const char *const names[] = { "good.conf", "bad.conf", "o.conf", "key" };
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	return rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_parse_args),
		cmocka_unit_test(test_key_file_and_loopback),
		cmocka_unit_test(test_diff),
	};

	return cmocka_run_group_tests_name("config", tests, setup, teardown);
}
