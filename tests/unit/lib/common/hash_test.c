/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/hash_test.c: the content hash (common/hash.c) is
 * XXH3-64 with seed 0: a published value and sensitivity to length and bytes;
 * the streaming form gives the same digest whatever the pieces; hash_mix64
 * is the 64-bit finalizer the tables' hashes were built on (pinned values:
 * marud's and marufs's table hashes keep their meaning).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "maru/libmaru.h"
#include "superblock.h"
#include "addr.h"
#include "clock.h"
#include "hash.h"
#include "parse.h"

static void test_xxh3(void **state)
{
	static const char text[] = "marufs";

	(void)state;
	/* published XXH3-64 of the empty input, seed 0 */
	assert_true(hash_xxh3("", 0) == 0x2D06800538D394C2ull);
	assert_true(hash_xxh3(text, 6) == hash_xxh3("marufs", 6));
	assert_true(hash_xxh3(text, 6) != hash_xxh3(text, 5));
	assert_true(hash_xxh3("marufs", 6) != hash_xxh3("marufS", 6));
}

static void test_stream(void **state)
{
	static const size_t cuts[] = { 1, 63, 64, 240, 4096, 100000 };
	size_t n = 300000, off, k, i;
	struct hash_stream *h;
	uint8_t *buf = malloc(n);

	(void)state;
	assert_non_null(buf);
	for (off = 0; off < n; off++)
		buf[off] = (uint8_t)(off * 131 + (off >> 9));
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		h = hash_stream_new();
		assert_non_null(h);
		for (off = 0; off < n; off += k) {
			k = n - off < cuts[i] ? n - off : cuts[i];
			hash_stream_update(h, buf + off, k);
		}
		assert_true(hash_stream_digest(h) == hash_xxh3(buf, n));
		hash_stream_free(h);
	}
	h = hash_stream_new();
	assert_non_null(h);
	assert_true(hash_stream_digest(h) == hash_xxh3("", 0));
	hash_stream_free(h);
	hash_stream_free(NULL);
	free(buf);
}

static void test_mix64(void **state)
{
	assert_int_equal(hash_mix64(0), 0);
	assert_int_equal(hash_mix64(1), 0xb456bcfc34c2cb2cull);
	assert_int_equal(hash_mix64(0x123456789abcdefull), 0x87cbfbfe89022ceaull);
	assert_int_not_equal(hash_mix64(2), hash_mix64(3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xxh3),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_mix64),
	};

	return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
