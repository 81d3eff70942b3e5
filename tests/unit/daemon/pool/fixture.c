/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/pool/fixture.c: what the pool backends' tests share:
 * pool URIs under names carrying the pid (/dev/shm) or in one temp dir
 * (file:), reading and checking the superblock as stored, corrupting a
 * byte of it, and the group setup that makes and removes the temp dir.
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

char tmpdir[64];

void shm_uri(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "shm:marud-pooltest-%ld-%s", (long)getpid(), tag);
}

void shm_unlink_tag(const char *tag)
{
	char path[128];

	snprintf(path, sizeof(path), "/dev/shm/marud-pooltest-%ld-%s", (long)getpid(), tag);
	unlink(path);
}

void file_uri(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "file:%s/%s", tmpdir, name);
}

/* The superblock as stored in the backing object, read without the mapping. */
void read_sb_from(const char *path, struct pool_superblock *sb)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, sb, sizeof(*sb), 0), sizeof(*sb));
	close(fd);
}

void assert_sb_matches(const struct pool *p)
{
	struct pool_superblock sb;

	read_sb_from(p->path, &sb);
	assert_int_equal(pool_sb_check(&sb), 0);
	assert_memory_equal(sb.magic, POOL_MAGIC, 8);
	assert_int_equal(sb.layout_version, POOL_LAYOUT_VERSION);
	assert_memory_equal(sb.uuid, p->uuid, 16);
	assert_int_equal(sb.size, p->size);
	assert_int_equal(sb.align, p->align);
	assert_int_equal(sb.data_off, p->data_off);
	assert_int_equal(sb.generation, p->generation);
	/* Version 4, variant 1: a random UUID. */
	assert_int_equal(sb.uuid[6] >> 4, 4);
	assert_int_equal(sb.uuid[8] >> 6, 2);
}

void corrupt_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, off), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

uint64_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

int pool_group_setup(void **state)
{
	log_init("pool_test", 1, 0);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/marud-pooltest-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

int pool_group_teardown(void **state)
{
	static const char *const tags[] = { "create", "reopen", "round", "tiny",
					    "default", "busy", "close",
					    "persist" };
	static const char *const files[] = { "pool1", "corrupt", "daxnode", "close" };
	char path[PATH_MAX];

	/* A failed assert skips a test's own cleanup. */
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		shm_unlink_tag(tags[i]);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
		unlink(path);
	}
	return rmdir(tmpdir);
}
