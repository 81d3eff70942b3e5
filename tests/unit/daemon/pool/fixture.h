/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/pool/fixture.h: the helpers of daemon/pool/'s tests
 * (fixture.c): pool_test.c (pool.c), shm_test.c, file_test.c, dax_test.c.
 */
#ifndef TESTS_POOL_FIXTURE_H
#define TESTS_POOL_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pool.h"
#include "superblock.h"

#define MiB (1ULL << 20)

/* The temp dir of file: pools, made by pool_group_setup(). */
extern char tmpdir[64];

void shm_uri(char *buf, size_t len, const char *tag);
void shm_unlink_tag(const char *tag);
void file_uri(char *buf, size_t len, const char *name);
/* The superblock as stored in the backing object, read without the mapping. */
void read_sb_from(const char *path, struct pool_superblock *sb);
void assert_sb_matches(const struct pool *p);
void corrupt_byte(const char *path, off_t off);
uint64_t file_size(const char *path);
int pool_group_setup(void **state);
int pool_group_teardown(void **state);

#endif
