/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/pool/shm_test.c: the shm: backend (daemon/pool/shm.c)
 * on real /dev/shm files named after the pid: creation and the superblock,
 * reservation, a reopen keeping the UUID, size rounding and the default
 * size, the flock claim refusing a second opener until the first closes,
 * and a persist that has nothing to write back.
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

static void test_shm_create(void **state)
{
	char uri[128];
	struct pool *p;
	struct stat st;
	uint8_t *view;

	shm_uri(uri, sizeof(uri), "create");
	assert_int_equal(pool_open(uri, 64 * MiB, 7, &p), 0);
	assert_ptr_equal(p->ops, &pool_shm_ops);
	assert_string_equal(p->uri, uri);
	assert_string_equal(p->path + strlen("/dev/shm/"), uri + 4);
	assert_memory_equal(p->path, "/dev/shm/", 9);
	assert_int_equal(p->created, 1);
	assert_int_equal(p->size, 64 * MiB);
	assert_int_equal(p->align, 4096);
	assert_int_equal(p->data_off, 2 * MiB);
	assert_int_equal(p->generation, 7);
	assert_true(p->fd >= 0);
	assert_int_equal(stat(p->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 64 * MiB);
	assert_sb_matches(p);

	/* What a client maps through path is the same memory. */
	int fd = open(p->path, O_RDWR);
	assert_true(fd >= 0);
	view = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(view != MAP_FAILED);
	p->base[p->data_off + 5] = 0xab;
	assert_int_equal(view[p->data_off + 5], 0xab);
	view[p->size - 1] = 0xcd;
	assert_int_equal(p->base[p->size - 1], 0xcd);
	assert_int_equal(pool_persist(p, p->data_off, 4096), 0);
	munmap(view, p->size);
	close(fd);

	pool_close(p);
	shm_unlink_tag("create");
}

/* --prealloc: a sparse shm pool gets every page now (st_blocks says so). */
static void test_shm_reserve(void **state)
{
	char uri[128];
	struct pool *p;
	struct stat st;

	shm_uri(uri, sizeof(uri), "reserve");
	assert_int_equal(pool_open(uri, 64 * MiB, 7, &p), 0);
	assert_int_equal(fstat(p->fd, &st), 0);
	assert_true((uint64_t)st.st_blocks * 512 < 64 * MiB);	/* sparse */
	assert_int_equal(pool_reserve(p), 0);
	assert_int_equal(fstat(p->fd, &st), 0);
	assert_int_equal((uint64_t)st.st_blocks * 512, 64 * MiB);
	assert_int_equal(st.st_size, 64 * MiB);
	assert_sb_matches(p);			/* the superblock is untouched */
	pool_close(p);
	shm_unlink_tag("reserve");
}

static void test_shm_reopen_keeps_uuid(void **state)
{
	char uri[128];
	struct pool *p;
	uint8_t uuid[16];

	shm_uri(uri, sizeof(uri), "reopen");
	assert_int_equal(pool_open(uri, 32 * MiB, 1, &p), 0);
	memcpy(uuid, p->uuid, 16);
	pool_close(p);

	assert_int_equal(pool_open(uri, 32 * MiB, 2, &p), 0);
	assert_int_equal(p->created, 0);
	assert_memory_equal(p->uuid, uuid, 16);
	assert_int_equal(p->generation, 2);
	assert_sb_matches(p);
	pool_close(p);

	/* Size 0 on an existing pool keeps its size, so it stays the same pool. */
	assert_int_equal(pool_open(uri, 0, 3, &p), 0);
	assert_int_equal(p->size, 32 * MiB);
	assert_memory_equal(p->uuid, uuid, 16);
	assert_sb_matches(p);
	pool_close(p);
	shm_unlink_tag("reopen");
}

static void test_shm_size_rounding(void **state)
{
	char uri[128], path[160];
	struct pool *p;

	shm_uri(uri, sizeof(uri), "round");
	assert_int_equal(pool_open(uri, 64 * MiB + 1, 1, &p), 0);
	assert_int_equal(p->size, 64 * MiB + 4096);
	assert_int_equal(file_size(p->path), 64 * MiB + 4096);
	assert_int_equal(p->data_off % p->align, 0);
	pool_close(p);

	/* Just above the data offset is the smallest pool. */
	assert_int_equal(pool_open(uri, 2 * MiB + 1, 1, &p), 0);
	assert_int_equal(p->size, 2 * MiB + 4096);
	assert_true(p->data_off < p->size);
	pool_close(p);
	shm_unlink_tag("round");

	/* No room for data: refused before anything is created. */
	shm_uri(uri, sizeof(uri), "tiny");
	snprintf(path, sizeof(path), "/dev/shm/%s", uri + 4);
	assert_int_equal(pool_open(uri, 1 * MiB, 1, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(pool_open(uri, 2 * MiB, 1, &p), -EINVAL);
	assert_int_equal(access(path, F_OK), -1);
}

static uint64_t expected_default(void)
{
	struct statvfs vfs;
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t s = ram / 4, avail;

	assert_int_equal(statvfs("/dev/shm", &vfs), 0);
	avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (avail / 2 < s)
		s = avail / 2;
	s &= ~(2 * MiB - 1);
	return s < 64 * MiB ? 64 * MiB : s;
}

static void test_shm_default_size(void **state)
{
	char uri[128];
	struct pool *p;
	uint64_t want = expected_default();

	shm_uri(uri, sizeof(uri), "default");
	assert_int_equal(pool_open(uri, 0, 1, &p), 0);
	assert_int_equal(p->size, want);
	assert_int_equal(p->size % (2 * MiB), 0);
	assert_true(p->size >= 64 * MiB);
	assert_int_equal(file_size(p->path), want);
	assert_sb_matches(p);
	pool_close(p);
	shm_unlink_tag("default");
}

static void test_shm_busy(void **state)
{
	char uri[128];
	struct pool *p, *q;

	shm_uri(uri, sizeof(uri), "busy");
	assert_int_equal(pool_open(uri, 16 * MiB, 1, &p), 0);
	assert_int_equal(pool_open(uri, 16 * MiB, 2, &q), -EBUSY);
	assert_null(q);
	/* The loser must not resize or rewrite the winner's pool. */
	assert_int_equal(pool_open(uri, 32 * MiB, 2, &q), -EBUSY);
	assert_int_equal(file_size(p->path), 16 * MiB);
	assert_sb_matches(p);
	pool_close(p);

	/* Closing releases the claim. */
	assert_int_equal(pool_open(uri, 16 * MiB, 3, &q), 0);
	pool_close(q);
	shm_unlink_tag("busy");
}

/*
 * tmpfs pages are what every mapper sees: persist has nothing to write
 * back, returns 0 at once, and a store is visible through another mapping
 * of the same file without it.
 */
static void test_shm_persist_nothing(void **state)
{
	char uri[128];
	struct pool *p;
	uint8_t *view;
	int fd;

	shm_uri(uri, sizeof(uri), "persist");
	assert_int_equal(pool_open(uri, 16 * MiB, 1, &p), 0);
	fd = open(p->path, O_RDONLY);
	assert_true(fd >= 0);
	view = mmap(NULL, p->size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(view != MAP_FAILED);
	p->base[p->data_off] = 0xa5;
	assert_int_equal(view[p->data_off], 0xa5);
	assert_int_equal(pool_persist(p, p->data_off, 1), 0);
	munmap(view, p->size);
	close(fd);
	pool_close(p);
	shm_unlink_tag("persist");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_create),
		cmocka_unit_test(test_shm_reserve),
		cmocka_unit_test(test_shm_reopen_keeps_uuid),
		cmocka_unit_test(test_shm_size_rounding),
		cmocka_unit_test(test_shm_default_size),
		cmocka_unit_test(test_shm_busy),
		cmocka_unit_test(test_shm_persist_nothing),
	};

	return cmocka_run_group_tests_name("shm", tests, pool_group_setup,
					   pool_group_teardown);
}
