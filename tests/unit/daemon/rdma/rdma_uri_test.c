/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/rdma_uri_test.c: telling an rdma://ADDR:PORT
 * listen address apart (daemon/rdma/rdma_uri.c), in every build: other
 * schemes are not rdma (0), well-formed ones give host and port (1), and
 * malformed ones are refused (-EINVAL) without touching the outputs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rdma.h"

static void test_other_schemes(void **state)
{
	static const char *const other[] = { "tcp://127.0.0.1:7450", "unix:/run/x.sock",
					     "", "rdma:/1.2.3.4:5", "RDMA://1.2.3.4:5" };
	char host[64] = "untouched";
	uint16_t port = 9;

	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_int_equal(rdma_uri(other[i], host, sizeof(host), &port), 0);
	assert_string_equal(host, "untouched");
	assert_int_equal(port, 9);
}

static void test_good(void **state)
{
	char host[64];
	uint16_t port = 0;

	assert_int_equal(rdma_uri("rdma://192.168.1.5:7451", host, sizeof(host), &port), 1);
	assert_string_equal(host, "192.168.1.5");
	assert_int_equal(port, 7451);
	assert_int_equal(rdma_uri("rdma://0.0.0.0:1", host, sizeof(host), &port), 1);
	assert_string_equal(host, "0.0.0.0");
	assert_int_equal(port, 1);
	assert_int_equal(rdma_uri("rdma://nic-a.example:65535", host, sizeof(host), &port), 1);
	assert_string_equal(host, "nic-a.example");
	assert_int_equal(port, 65535);
	/* The last ':' splits: an IPv6-looking host keeps its colons. */
	assert_int_equal(rdma_uri("rdma://fe80::1:99", host, sizeof(host), &port), 1);
	assert_string_equal(host, "fe80::1");
	assert_int_equal(port, 99);
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		"rdma://", "rdma://host", "rdma://:7450", "rdma://h:", "rdma://h:0",
		"rdma://h:65536", "rdma://h:12x", "rdma://h:-1", "rdma://h:99999999999999999999",
	};
	char host[64] = "untouched";
	uint16_t port = 9;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rdma_uri(bad[i], host, sizeof(host), &port), -EINVAL);
	assert_string_equal(host, "untouched");
	assert_int_equal(port, 9);
}

/* A host that does not fit the caller's buffer is refused, not cut. */
static void test_host_too_long(void **state)
{
	char host[8];
	uint16_t port;

	assert_int_equal(rdma_uri("rdma://1234567:1", host, sizeof(host), &port), 1);
	assert_string_equal(host, "1234567");
	assert_int_equal(rdma_uri("rdma://12345678:1", host, sizeof(host), &port), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_schemes),
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_host_too_long),
	};

	return cmocka_run_group_tests_name("rdma_uri", tests, NULL, NULL);
}
