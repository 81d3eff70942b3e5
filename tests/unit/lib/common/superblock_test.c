/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/superblock_test.c: the pool superblock seal and
 * check (common/superblock.c).
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

static void test_superblock(void **state)
{
	struct pool_superblock sb, bad;
	size_t i;

	(void)state;
	memset(&sb, 0, sizeof(sb));
	sb.size = 1ull << 30;
	sb.align = 2 << 20;
	sb.data_off = 2 << 20;
	sb.generation = 3;
	sb.uuid[0] = 0xab;
	assert_int_equal(pool_sb_check(&sb), -EINVAL);
	pool_sb_seal(&sb);
	assert_memory_equal(sb.magic, POOL_MAGIC, 8);
	assert_int_equal(sb.layout_version, POOL_LAYOUT_VERSION);
	assert_int_equal(pool_sb_check(&sb), 0);
	/* any single changed byte, checksum included, is refused */
	for (i = 0; i < sizeof(sb); i++) {
		bad = sb;
		((uint8_t *)&bad)[i] ^= 0x01;
		assert_int_equal(pool_sb_check(&bad), -EINVAL);
	}
	/* a resealed other version is still refused */
	bad = sb;
	bad.layout_version = POOL_LAYOUT_VERSION + 1;
	bad.checksum = 0;
	assert_int_equal(pool_sb_check(&bad), -EINVAL);
}

/* Run fn with stderr captured; returns what it wrote (static buffer). */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_superblock),
	};

	return cmocka_run_group_tests_name("superblock", tests, NULL, NULL);
}
