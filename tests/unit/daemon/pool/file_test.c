/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/pool/file_test.c: the file: backend (daemon/pool/file.c)
 * on regular files in a temp dir: creation, persist (msync) and a reopen
 * that finds the bytes and the UUID, and a path that is not a regular file
 * refused.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "pool.h"
#include "superblock.h"

#include "fixture.h"

static void test_file_create_persist_reopen(void **state)
{
	char uri[128];
	struct pool *p;
	uint8_t uuid[16], buf[8];
	int fd;

	file_uri(uri, sizeof(uri), "pool1");
	assert_int_equal(pool_open(uri, 8 * MiB, 11, &p), 0);
	assert_ptr_equal(p->ops, &pool_file_ops);
	assert_int_equal(p->created, 1);
	assert_string_equal(p->path, uri + 5);
	assert_int_equal(p->size, 8 * MiB);
	assert_int_equal(p->data_off, 2 * MiB);
	assert_sb_matches(p);
	memcpy(uuid, p->uuid, 16);

	/* persist reaches the file through an unaligned range. */
	memcpy(p->base + p->data_off + 4093, "persist", 8);
	assert_int_equal(pool_persist(p, p->data_off + 4093, 8), 0);
	fd = open(p->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 8, (off_t)p->data_off + 4093), 8);
	assert_memory_equal(buf, "persist", 8);
	close(fd);
	assert_int_equal(pool_persist(p, p->size - 4096, 4096), 0);
	assert_int_equal(pool_persist(p, p->size, 0), 0);
	assert_int_equal(pool_persist(p, p->size - 4096, 4097), -EINVAL);
	assert_int_equal(pool_persist(p, UINT64_MAX, 2), -EINVAL);
	pool_close(p);

	assert_int_equal(pool_open(uri, 8 * MiB, 12, &p), 0);
	assert_int_equal(p->created, 0);
	assert_memory_equal(p->uuid, uuid, 16);
	assert_int_equal(p->generation, 12);
	assert_sb_matches(p);
	assert_int_equal(pool_open(uri, 8 * MiB, 13, &(struct pool *){ NULL }), -EBUSY);
	pool_close(p);
	unlink(uri + 5);
}

static void test_file_not_regular(void **state)
{
	char uri[128];
	struct pool *p;

	/* The temp dir itself. */
	snprintf(uri, sizeof(uri), "file:%s", tmpdir);
	assert_int_equal(pool_open(uri, 8 * MiB, 1, &p), -EISDIR);
	assert_null(p);
	assert_int_equal(pool_open("file:/dev/null", 8 * MiB, 1, &p), -EINVAL);
	assert_null(p);
	/* A missing parent directory. */
	file_uri(uri, sizeof(uri), "nodir/pool");
	assert_int_equal(pool_open(uri, 8 * MiB, 1, &p), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_create_persist_reopen),
		cmocka_unit_test(test_file_not_regular),
	};

	return cmocka_run_group_tests_name("file", tests, pool_group_setup,
					   pool_group_teardown);
}
