/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/ext/tier/tfix.h: the fixture of the tier extension's
 * tests: a pool file of TF_UNITS cache units on a disk filesystem (the
 * tier is a file: pool behind the page cache), mapped shared as marud maps
 * it, and the region marud would hand the extension for it.
 */
#ifndef TESTS_TIER_TFIX_H
#define TESTS_TIER_TFIX_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tier.h"

#define TF_UNITS	4
#define TF_SIZE		((uint64_t)TF_UNITS * TIER_UNIT)
#define TF_DATA_OFF	4096

struct tfix {
	char path[128];
	int fd;
	uint8_t *base;
	struct marud_ext_region r;
};

/* The file, sparse, mapped; 0 or -1. */
static inline int tf_open(struct tfix *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/var/tmp/maru-tier-ut-%ld-%p", (long)getpid(),
		 (void *)f);
	f->fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (f->fd < 0 || ftruncate(f->fd, (off_t)TF_SIZE))
		return -1;
	f->base = mmap(NULL, TF_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->base == MAP_FAILED)
		return -1;
	f->r.uri = f->path;
	f->r.path = f->path;
	f->r.fd = f->fd;
	f->r.backend = 2;	/* file: */
	f->r.base = f->base;
	f->r.size = TF_SIZE;
	f->r.data_off = TF_DATA_OFF;
	return 0;
}

static inline void tf_close(struct tfix *f)
{
	if (f->base && f->base != MAP_FAILED)
		munmap(f->base, TF_SIZE);
	if (f->fd >= 0)
		close(f->fd);
	unlink(f->path);
}

/* Drop the file's pages from the page cache (clean ones go). */
static inline void tf_drop(struct tfix *f)
{
	madvise(f->base, TF_SIZE, MADV_DONTNEED);
	fdatasync(f->fd);
	posix_fadvise(f->fd, 0, (off_t)TF_SIZE, POSIX_FADV_DONTNEED);
}

/* Resident bytes of [off, off+len) by mincore(). */
static inline uint64_t tf_resident(struct tfix *f, uint64_t off, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), n = 0, i;
	unsigned char *v = malloc(len / pg + 1);

	if (!v || mincore(f->base + off, len, v)) {
		free(v);
		return 0;
	}
	for (i = 0; i < (len + pg - 1) / pg; i++)
		n += (v[i] & 1) ? pg : 0;
	free(v);
	return n;
}

#endif
