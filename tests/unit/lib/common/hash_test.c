/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/hash_test.c: the content hash (common/hash.c) is
 * XXH3-64 with seed 0: a published value and sensitivity to length and bytes.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xxh3),
	};

	return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
