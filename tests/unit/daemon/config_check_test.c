/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/config_check_test.c: what marud checks about a
 * configuration and how it shows one (daemon/config_check.c): the key
 * file's mode, the loopback rule without a key, listen URIs, the -n
 * summary and the SIGHUP diff (what applies live, what needs a restart).
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
	/* The metrics endpoint: loopback, else only with metrics-remote. */
	snprintf(c.metrics_listen, sizeof(c.metrics_listen), "[::1]:9464");
	assert_int_equal(config_validate(&c, key, &have, NULL), 0);
	snprintf(c.metrics_listen, sizeof(c.metrics_listen), "0.0.0.0:9464");
	err = fmemopen(errbuf, sizeof(errbuf), "w");
	assert_int_equal(config_validate(&c, key, &have, err), -EPERM);
	fclose(err);
	assert_non_null(strstr(errbuf, "metrics-remote = yes"));
	c.metrics_remote = 1;
	assert_int_equal(config_validate(&c, key, &have, NULL), 0);
	snprintf(c.metrics_listen, sizeof(c.metrics_listen), "metrics.example:9464");
	assert_int_equal(config_validate(&c, key, &have, NULL), -EINVAL);
	snprintf(c.metrics_listen, sizeof(c.metrics_listen), "127.0.0.1:65536");
	assert_int_equal(config_validate(&c, key, &have, NULL), -EINVAL);
	c.metrics_listen[0] = '\0';
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

/* The -n summary names every setting a reader would look for. */
static void test_print(void **state)
{
	struct config c;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	assert_int_equal(load(NULL, NULL, &c), 0);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	config_print(&c, out);
	fclose(out);
	assert_non_null(strstr(text, "pool: " CONFIG_DEFAULT_POOL "\n"));
	assert_non_null(strstr(text, "listen: " CONFIG_DEFAULT_UNIX "\n"));
	assert_non_null(strstr(text, "eviction: lru\n"));
	assert_non_null(strstr(text, "grace: 30.000 s\n"));
	assert_non_null(strstr(text, "key-file: (none: serving only loopback"));
	assert_non_null(strstr(text, "journal: yes\n"));
	assert_null(strstr(text, "region-extension-config"));
	free(text);
}

/* tls-cert and tls-key come together; tls-client-ca needs them (issue 26). */
static void test_tls_keys(void **state)
{
	uint8_t key[CONFIG_KEY_BYTES];
	struct config c, n;
	int have;
	FILE *err;

	assert_int_equal(load(NULL, NULL, &c), 0);
	assert_int_equal(config_set(&c, "tls-cert", "/etc/marud/cert.pem", 0), 0);
	err = fmemopen(errbuf, sizeof(errbuf), "w");
	assert_int_equal(config_validate(&c, key, &have, err), -EINVAL);
	fclose(err);
	assert_non_null(strstr(errbuf, "tls-cert and tls-key come together"));
	assert_int_equal(config_set(&c, "tls_key", "/etc/marud/key.pem", 0), 0);
	assert_int_equal(config_validate(&c, key, &have, NULL), 0);
	assert_int_equal(load(NULL, NULL, &n), 0);
	assert_int_equal(config_set(&n, "tls-client-ca", "/etc/marud/ca.pem", 0), 0);
	assert_int_equal(config_validate(&n, key, &have, NULL), -EINVAL);
	/* TLS on or off is a restart, a new path is not */
	assert_true(config_diff_log(&n, &c) > 0);
	n = c;
	snprintf(n.tls_cert, sizeof(n.tls_cert), "/etc/marud/cert2.pem");
	assert_int_equal(config_diff_log(&c, &n), 0);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_file_and_loopback),
		cmocka_unit_test(test_tls_keys),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_print),
	};

	return cmocka_run_group_tests_name("config_check", tests, config_fx_setup,
					   config_fx_teardown);
}
