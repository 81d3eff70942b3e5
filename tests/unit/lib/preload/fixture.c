// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/preload/fixture.c: the preload tests' fake libmaru maps,
 * fstatfs wrap and files (fixture.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "maru/libmaru.h"

#include "fixture.h"

/* ---- the fake libmaru maps ---- */

struct maru_map {
	uint8_t *addr;
	uint64_t size;
	unsigned int flags;
};

struct fake_maps fm;

int maru_map(int fd, const char *fpath, unsigned int flags, struct maru_map **out)
{
	struct maru_map *m;
	struct stat st;

	fm.calls++;
	if (fstat(fd, &st) || st.st_ino != fm.ino)
		return -ENOTTY;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->addr = fm.bytes;
	m->size = FSIZE;
	m->flags = fm.flags | (flags & MARU_MAP_WRITE);
	fm.maps++;
	*out = m;
	return 0;
}

void *maru_map_addr(const struct maru_map *m)
{
	return m->addr;
}

uint64_t maru_map_size(const struct maru_map *m)
{
	return m->size;
}

unsigned int maru_map_flags(const struct maru_map *m)
{
	return m->flags;
}

int maru_map_check(const struct maru_map *m)
{
	return fm.check_rc;
}

int maru_unmap(struct maru_map *m)
{
	fm.unmaps++;
	free(m);
	return 0;
}

int __real_fstatfs(int fd, struct statfs *sf);
int __wrap_fstatfs(int fd, struct statfs *sf);
int __wrap_fstatfs(int fd, struct statfs *sf)
{
	int rc = __real_fstatfs(fd, sf);

	if (!rc)
		sf->f_type = 0x65735546;	/* FUSE_SUPER_MAGIC */
	return rc;
}

/* ---- fixture ---- */

char path[64], other[64];
uint8_t buf[FSIZE];

uint8_t pool_byte(size_t i)
{
	return (uint8_t)(i * 7 + 1);
}

int setup(void **state)
{
	static uint8_t disk[FSIZE];
	struct stat st;
	size_t i;
	int fd;

	memset(disk, 'd', sizeof(disk));
	snprintf(path, sizeof(path), "/var/tmp/maru-preload-ut-%ld", (long)getpid());
	snprintf(other, sizeof(other), "/var/tmp/maru-preload-ut-%ld.o", (long)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, disk, sizeof(disk)) != (ssize_t)sizeof(disk) || fstat(fd, &st))
		return -1;
	close(fd);
	memset(disk, 'o', sizeof(disk));
	fd = open(other, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, disk, sizeof(disk)) != (ssize_t)sizeof(disk))
		return -1;
	close(fd);
	memset(&fm, 0, sizeof(fm));
	fm.ino = st.st_ino;
	fm.bytes = aligned_alloc(4096, FSIZE);
	if (!fm.bytes)
		return -1;
	for (i = 0; i < FSIZE; i++)
		fm.bytes[i] = pool_byte(i);
	return 0;
}

int teardown(void **state)
{
	unlink(path);
	unlink(other);
	free(fm.bytes);
	return 0;
}

int from_pool(size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != pool_byte(off + i))
			return 0;
	return 1;
}

int all(uint8_t c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != c)
			return 0;
	return 1;
}
