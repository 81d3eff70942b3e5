/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/pool/pool_test.c: the backend-neutral half of marud's
 * pool (daemon/pool/pool.c): URIs refused, a corrupt superblock rewritten
 * with a new UUID, the kind names, and the one close path every backend
 * shares (the claim released, nothing left mapped or open after a close or
 * a failed open).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
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

static void test_bad_uris(void **state)
{
	static const char *const bad[] = {
		"", "shm", "nope:x", "SHM:x", "shm:", "shm:a/b", "shm:/abs", "shm:.",
		"shm:..", "file:", "file:relative/pool", "file:/", "dax:", "dax:dax0.0",
		":x", "shmx:y",
	};
	char longname[300], longuri[PATH_MAX + 16];
	struct pool *p = (struct pool *)1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(pool_open(bad[i], 16 * MiB, 1, &p), -EINVAL);
		assert_null(p);
	}
	/* NAME_MAX is the limit of one /dev/shm entry. */
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "shm:", 4);
	longname[4 + 256] = '\0';
	assert_int_equal(pool_open(longname, 16 * MiB, 1, &p), -EINVAL);
	memset(longuri, 'a', sizeof(longuri));
	memcpy(longuri, "file:/", 6);
	longuri[sizeof(longuri) - 1] = '\0';
	assert_int_equal(pool_open(longuri, 16 * MiB, 1, &p), -ENAMETOOLONG);
}

/*
 * A superblock that fails its check (or describes another geometry) is not
 * trusted: pool_open writes a fresh one, with a new UUID, so clients that
 * knew the old pool cannot mistake it for this one.
 */
static void test_sb_corruption_rewrites(void **state)
{
	char uri[128];
	struct pool *p;
	uint8_t uuid[16], uuid2[16];
	struct pool_superblock sb;

	file_uri(uri, sizeof(uri), "corrupt");
	assert_int_equal(pool_open(uri, 8 * MiB, 1, &p), 0);
	memcpy(uuid, p->uuid, 16);
	pool_close(p);

	/* A flipped byte inside the UUID: the checksum no longer holds. */
	corrupt_byte(uri + 5, offsetof(struct pool_superblock, uuid) + 3);
	read_sb_from(uri + 5, &sb);
	assert_int_equal(pool_sb_check(&sb), -EINVAL);
	assert_int_equal(pool_open(uri, 8 * MiB, 2, &p), 0);
	assert_int_equal(p->created, 0);
	assert_memory_not_equal(p->uuid, uuid, 16);
	assert_sb_matches(p);
	memcpy(uuid2, p->uuid, 16);
	pool_close(p);

	/* A broken magic: same. */
	corrupt_byte(uri + 5, 0);
	assert_int_equal(pool_open(uri, 8 * MiB, 3, &p), 0);
	assert_memory_not_equal(p->uuid, uuid2, 16);
	assert_sb_matches(p);
	memcpy(uuid2, p->uuid, 16);
	pool_close(p);

	/* Another size is another pool. */
	assert_int_equal(pool_open(uri, 16 * MiB, 4, &p), 0);
	assert_memory_not_equal(p->uuid, uuid2, 16);
	assert_sb_matches(p);
	pool_close(p);
	unlink(uri + 5);
}

static void test_kind_names(void **state)
{
	assert_string_equal(pool_kind_name(POOL_SHM), "shm");
	assert_string_equal(pool_kind_name(POOL_FILE), "file");
	assert_string_equal(pool_kind_name(POOL_DAX), "dax");
	assert_string_equal(pool_kind_name((enum pool_kind)0), "unknown");
	assert_string_equal(pool_shm_ops.scheme, "shm");
	assert_string_equal(pool_file_ops.scheme, "file");
	assert_string_equal(pool_dax_ops.scheme, "dax");
	pool_close(NULL);
}

/* Descriptors this process has open now. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own descriptor */
}

/* 1 if path is mapped into this process. */
static int mapped(const char *path)
{
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, path) != NULL;
	fclose(f);
	return found;
}

/*
 * Every backend closes through pool.c's one path: after pool_close the
 * mapping is gone, the descriptor closed and the flock released (a new
 * opener gets the pool at once).
 */
static void close_one(const char *uri)
{
	struct pool *p, *q;
	char path[PATH_MAX];
	int n0 = open_fds();

	assert_int_equal(pool_open(uri, 8 * MiB, 1, &p), 0);
	snprintf(path, sizeof(path), "%s", p->path);
	assert_int_equal(open_fds(), n0 + 1);
	assert_true(mapped(path));
	assert_int_equal(pool_open(uri, 8 * MiB, 2, &q), -EBUSY);
	pool_close(p);
	assert_int_equal(open_fds(), n0);
	assert_false(mapped(path));
	assert_int_equal(pool_open(uri, 8 * MiB, 3, &q), 0);
	pool_close(q);
	unlink(path);
}

static void test_close_releases(void **state)
{
	char uri[128];

	shm_uri(uri, sizeof(uri), "close");
	close_one(uri);
	file_uri(uri, sizeof(uri), "close");
	close_one(uri);
}

/*
 * An open that fails after the backend mapped the pool (a metadata area
 * that leaves no room for data) goes through the same close: nothing stays
 * mapped, open or claimed.
 */
static void test_failed_open_closes(void **state)
{
	char uri[128], path[PATH_MAX];
	struct pool *p = NULL;
	int n0 = open_fds();

	file_uri(uri, sizeof(uri), "close");
	snprintf(path, sizeof(path), "%s", uri + 5);
	assert_int_equal(pool_open_meta(uri, 8 * MiB, 64 * MiB, 1, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(open_fds(), n0);
	assert_false(mapped(path));
	assert_int_equal(pool_open(uri, 8 * MiB, 2, &p), 0);
	pool_close(p);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_uris),
		cmocka_unit_test(test_sb_corruption_rewrites),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_close_releases),
		cmocka_unit_test(test_failed_open_closes),
	};

	return cmocka_run_group_tests_name("pool", tests, pool_group_setup,
					   pool_group_teardown);
}
