/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/map_test.c: unit tests of lib/map.c, maru_map() against a
 * fake marufs. This executable is linked with -Wl,--wrap=ioctl,--wrap=mmap64
 * (tests/unit/meson.build): MARUFS_IOC_EXTENTS and MARUFS_IOC_UNHOLD land in
 * __wrap_ioctl below, which answers from `fk`, and every file mapping
 * map.c makes is recorded so the device-DAX rules (offsets, lengths and
 * addresses at the device alignment) can be checked. The pool is a real
 * file in /dev/shm with a sealed superblock and patterned bytes; the
 * map_granule seam makes it behave like a devdax of a given alignment.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "maru/libmaru.h"
#include "superblock.h"

#define MiB (1ULL << 20)
#define KiB (1ULL << 10)
#define POOL_SIZE (32 * MiB)

extern uint64_t (*map_granule)(const char *path, uint64_t pool_align);

/* ---- the fake marufs ---- */

static struct {
	uint8_t uuid[16];
	uint64_t generation, size;
	char path[128];
	struct marufs_extent ext[1024];
	uint32_t n;
	uint32_t flags;		/* PENDING... */
	uint32_t coherence;
	int err;		/* errno for EXTENTS */
	int held_ok;		/* accept WANT_WRITE */
	int calls, unholds, holds;
} fk;

static struct {
	int n;
	off_t off[1100];
	size_t len[1100];
	uintptr_t addr[1100];
	int fixed[1100];
} maps;

static uint64_t granule = 4096;

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);
/* map.c is built with _FILE_OFFSET_BITS=64: its mmap calls are mmap64 */
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static int fake_extents(struct marufs_extents *x)
{
	uint32_t i;

	fk.calls++;
	if (fk.err) {
		errno = fk.err;
		return -1;
	}
	assert_int_equal(x->magic, MARUFS_EXT_MAGIC);
	assert_int_equal(x->version, MARUFS_EXT_VERSION);
	assert_true(x->first <= fk.n);
	/* WANT_WRITE only on the first call of a maru_map */
	assert_true(!(x->flags & MARUFS_EXT_WANT_WRITE) || x->first == 0);
	if ((x->flags & MARUFS_EXT_WANT_WRITE) && !fk.held_ok) {
		errno = EBADF;
		return -1;
	}
	memcpy(x->uuid, fk.uuid, 16);
	x->generation = fk.generation;
	x->ino = 42;
	x->size = fk.size;
	x->pool_size = POOL_SIZE;
	x->align = 4096;
	x->data_off = 2 * MiB;
	x->coherence = fk.coherence;
	x->nextents = fk.n;
	x->count = fk.n - x->first < MARUFS_EXT_MAX ? fk.n - x->first : MARUFS_EXT_MAX;
	for (i = 0; i < x->count; i++)
		x->ext[i] = fk.ext[x->first + i];
	snprintf(x->pool_path, sizeof(x->pool_path), "%s", fk.path);
	if (x->flags & MARUFS_EXT_WANT_WRITE)
		fk.holds++;
	x->flags = fk.flags | (x->flags & MARUFS_EXT_WANT_WRITE ? MARUFS_EXT_HELD : 0);
	return 0;
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == MARUFS_IOC_EXTENTS)
		return fake_extents(arg);
	if (req == MARUFS_IOC_UNHOLD) {
		fk.unholds++;
		fk.holds--;
		return 0;
	}
	return __real_ioctl(fd, req, arg);
}

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0 && maps.n < 1100) {
		maps.off[maps.n] = off;
		maps.len[maps.n] = len;
		maps.addr[maps.n] = (uintptr_t)addr;
		maps.fixed[maps.n] = !!(flags & MAP_FIXED);
		maps.n++;
	}
	return __real_mmap64(addr, len, prot, flags, fd, off);
}

static uint64_t fake_granule(const char *path, uint64_t pool_align)
{
	return granule;
}

/* ---- the pool ---- */

static uint8_t pat(uint64_t off)
{
	return (uint8_t)((off * 2654435761u) >> 13);
}

static int pool_seq;

/* A fresh pool file (new path and UUID: map.c caches pools per process). */
static void pool_make(uint64_t generation)
{
	struct pool_superblock sb = { 0 };
	uint8_t *p;
	uint64_t i;
	int fd;

	if (fk.path[0])
		unlink(fk.path);
	snprintf(fk.path, sizeof(fk.path), "/dev/shm/maru-maptest-%ld-%d", (long)getpid(),
		 ++pool_seq);
	fd = open(fk.path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, POOL_SIZE), 0);
	p = __real_mmap64(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	for (i = POOL_SB_SIZE; i < POOL_SIZE; i++)
		p[i] = pat(i);
	memcpy(sb.magic, POOL_MAGIC, 8);
	sb.layout_version = POOL_LAYOUT_VERSION;
	for (i = 0; i < 16; i++)
		sb.uuid[i] = (uint8_t)(pool_seq * 31 + i);
	sb.size = POOL_SIZE;
	sb.align = 4096;
	sb.data_off = 2 * MiB;
	sb.generation = generation;
	pool_sb_seal(&sb);
	memcpy(p, &sb, sizeof(sb));
	munmap(p, POOL_SIZE);
	close(fd);
	memcpy(fk.uuid, sb.uuid, 16);
	fk.generation = generation;
}

/* Rewrite the superblock's generation (a marud restart on the same pool). */
static void pool_set_generation(uint64_t generation)
{
	struct pool_superblock sb;
	int fd = open(fk.path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &sb, sizeof(sb), 0), sizeof(sb));
	sb.generation = generation;
	pool_sb_seal(&sb);
	assert_int_equal(pwrite(fd, &sb, sizeof(sb), 0), sizeof(sb));
	close(fd);
}

static void ext_set(uint32_t i, uint64_t off, uint64_t len)
{
	fk.ext[i].off = off;
	fk.ext[i].len = len;
	if (i + 1 > fk.n)
		fk.n = i + 1;
}

/* The mapping shows the extents' pool bytes side by side. */
static void assert_bytes(const struct maru_map *m)
{
	const uint8_t *p = maru_map_addr(m);
	uint64_t pos = 0, k;
	uint32_t i;

	assert_int_equal(maru_map_size(m), fk.size);
	for (i = 0; i < fk.n && pos < fk.size; i++)
		for (k = 0; k < fk.ext[i].len && pos < fk.size; k++, pos++)
			if (p[pos] != pat(fk.ext[i].off + k))
				fail_msg("byte %llu (extent %u +%llu) differs",
					 (unsigned long long)pos, i, (unsigned long long)k);
	assert_int_equal(pos, fk.size);
}

static int fd_null;

static int setup(void **state)
{
	memset(&fk, 0, sizeof(fk));
	memset(&maps, 0, sizeof(maps));
	fk.held_ok = 1;
	granule = 4096;
	map_granule = fake_granule;
	fd_null = open("/dev/null", O_RDONLY);
	pool_make(7);
	return fd_null < 0;
}

static int teardown(void **state)
{
	close(fd_null);
	unlink(fk.path);
	assert_int_equal(fk.holds, 0);	/* every hold taken was given back */
	return 0;
}

/* ---- tests ---- */

static void test_one_extent(void **state)
{
	struct maru_map *m;

	ext_set(0, 2 * MiB + 8 * KiB, 3 * MiB);
	fk.size = 3 * MiB - 5;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_bytes(m);
	assert_int_equal((uintptr_t)maru_map_addr(m) % 4096, 0);
	assert_int_equal(maru_map_flags(m), 0);
	assert_int_equal(maru_map_check(m), 0);
	assert_int_equal(maru_map_sync(m), 0);
	assert_int_equal(fk.calls, 1);
	assert_int_equal(maru_unmap(m), 0);
	assert_int_equal(fk.unholds, 0);
}

static void test_stitched(void **state)
{
	struct maru_map *m;

	ext_set(0, 4 * MiB, 1 * MiB);
	ext_set(1, 2 * MiB + 4 * KiB, 64 * KiB);
	ext_set(2, 10 * MiB, 2 * MiB);
	fk.size = 1 * MiB + 64 * KiB + 2 * MiB - 100;
	assert_int_equal(maru_map(fd_null, NULL, MARU_MAP_POPULATE, &m), 0);
	assert_bytes(m);
	assert_int_equal(maru_unmap(m), 0);
}

static void test_devdax_granule(void **state)
{
	struct maru_map *m;
	uintptr_t base;
	int i, files = 0;

	granule = 2 * MiB;
	ext_set(0, 4 * MiB + 12 * KiB, 2 * MiB - 12 * KiB);
	ext_set(1, 8 * MiB, 2 * MiB);
	ext_set(2, 12 * MiB, 4 * MiB);
	fk.size = 2 * MiB - 12 * KiB + 2 * MiB + 1 * MiB + 1;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_bytes(m);
	base = (uintptr_t)maru_map_addr(m) - 12 * KiB;
	assert_int_equal(base % (2 * MiB), 0);
	/* every mapping of pool data at the device's granule */
	for (i = 0; i < maps.n; i++) {
		if (maps.off[i] == 0)
			continue;	/* superblock probes */
		assert_int_equal(maps.off[i] % (2 * MiB), 0);
		assert_int_equal(maps.len[i] % (2 * MiB), 0);
		if (maps.fixed[i]) {
			assert_int_equal(maps.addr[i] % (2 * MiB), 0);
			files++;
		}
	}
	assert_int_equal(files, 3);	/* three extents stitched */
	assert_int_equal(maru_unmap(m), 0);
}

static void test_devdax_unaligned(void **state)
{
	struct maru_map *m;

	granule = 2 * MiB;
	ext_set(0, 4 * MiB, 1 * MiB);
	ext_set(1, 8 * MiB, 1 * MiB);
	fk.size = 2 * MiB;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -EINVAL);
	/* the same extents stitch at page granule */
	granule = 4096;
	pool_make(7);
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_bytes(m);
	assert_int_equal(maru_unmap(m), 0);
}

/*
 * Issue 23's layouts on a 2 MiB device, scaled into the test pool: a file
 * grown by cp as the allocator placed it before alloc_grow (the pieces
 * after its first 64 KiB laid downwards, unaligned) is refused; the same
 * file as alloc_grow lays it out (a first piece ending on 2 MiB, aligned
 * pieces after it, the last trimmed at publish) maps at the granule.
 */
static void test_devdax_grown_layout(void **state)
{
	struct maru_map *m;
	int i;

	granule = 2 * MiB;
	ext_set(0, 30 * MiB - 64 * KiB, 64 * KiB);
	ext_set(1, 29 * MiB - 64 * KiB, 960 * KiB);
	ext_set(2, 28 * MiB - 64 * KiB, 1 * MiB);
	ext_set(3, 4 * MiB, 2 * MiB);
	fk.size = 4 * MiB;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -EINVAL);

	fk.n = 0;
	ext_set(0, 30 * MiB - 64 * KiB, 64 * KiB);
	ext_set(1, 4 * MiB, 2 * MiB);
	ext_set(2, 8 * MiB, 2 * MiB - 64 * KiB);
	fk.size = 4 * MiB;
	maps.n = 0;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_bytes(m);
	for (i = 0; i < maps.n; i++) {
		assert_int_equal(maps.off[i] % (2 * MiB), 0);
		assert_int_equal(maps.len[i] % (2 * MiB), 0);
	}
	assert_int_equal(maru_unmap(m), 0);
}

static void test_paging(void **state)
{
	struct maru_map *m;
	uint32_t i;

	for (i = 0; i < 600; i++)
		ext_set(i, 2 * MiB + (uint64_t)(599 - i) * 8 * KiB, 4 * KiB);
	fk.size = 600 * 4 * KiB;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_int_equal(fk.calls, 3);	/* 256 + 256 + 88 */
	assert_bytes(m);
	assert_int_equal(maru_unmap(m), 0);
}

static void test_generation(void **state)
{
	struct maru_map *m;

	ext_set(0, 2 * MiB, 1 * MiB);
	fk.size = 1 * MiB;
	fk.generation = 6;	/* marufs speaks for a generation the pool left */
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -ESTALE);
	fk.generation = 7;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	pool_set_generation(8);	/* marud restarted */
	assert_int_equal(maru_map_check(m), -ESTALE);
	assert_int_equal(maru_map_sync(m), -ESTALE);
	assert_int_equal(maru_unmap(m), 0);
}

static void test_wrong_pool(void **state)
{
	struct maru_map *m;

	ext_set(0, 2 * MiB, 1 * MiB);
	fk.size = 1 * MiB;
	fk.uuid[3] ^= 1;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -ENODEV);
	fk.uuid[3] ^= 1;
	snprintf(fk.path, sizeof(fk.path), "/dev/shm/maru-maptest-none-%ld", (long)getpid());
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -ENODEV);
	snprintf(fk.path, sizeof(fk.path), "/dev/shm/maru-maptest-%ld-%d", (long)getpid(),
		 pool_seq);
}

static void test_errors(void **state)
{
	struct maru_map *m;

	ext_set(0, 2 * MiB, 1 * MiB);
	fk.size = 1 * MiB + 1;	/* extents do not cover the file */
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -EIO);
	fk.size = 1 * MiB;
	ext_set(0, POOL_SIZE - 4096, 1 * MiB);	/* past the pool */
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -EIO);
	fk.err = ENOTTY;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -ENOTTY);
	fk.err = EOPNOTSUPP;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -EOPNOTSUPP);
	fk.err = EIO;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), -EIO);
	assert_int_equal(maru_map(-1, NULL, 0, &m), -EINVAL);
	assert_int_equal(maru_map(fd_null, NULL, 1u << 20, &m), -EINVAL);
	assert_int_equal(maru_map(fd_null, NULL, 0, NULL), -EINVAL);
	assert_int_equal(maru_map(AT_FDCWD, "/nonexistent/x", 0, &m), -ENOENT);
}

static void test_write(void **state)
{
	struct maru_map *m;
	uint8_t *p;
	int fd;

	ext_set(0, 6 * MiB, 2 * MiB);
	fk.size = 2 * MiB;
	fk.flags = MARUFS_EXT_PENDING | MARUFS_EXT_WRITABLE;
	fk.coherence = MARUFS_COHERENCE_FLUSH;
	assert_int_equal(maru_map(fd_null, NULL, MARU_MAP_WRITE, &m), 0);
	assert_int_equal(fk.holds, 1);
	assert_int_equal(maru_map_flags(m),
			 MARU_MAP_WRITE | MARU_MAP_PENDING | MARU_MAP_COHERENCE_FLUSH);
	p = maru_map_addr(m);
	memset(p + 100, 0xee, 5000);
	assert_int_equal(maru_map_sync(m), 0);
	assert_int_equal(maru_unmap(m), 0);
	assert_int_equal(fk.unholds, 1);
	/* the bytes are in the pool */
	fd = open(fk.path, O_RDONLY);
	assert_true(fd >= 0);
	p = malloc(5000);
	assert_int_equal(pread(fd, p, 5000, 6 * MiB + 100), 5000);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(p[i], 0xee);
	free(p);
	close(fd);
}

static void test_write_refused(void **state)
{
	struct maru_map *m;

	ext_set(0, 6 * MiB, 2 * MiB);
	fk.size = 2 * MiB;
	fk.held_ok = 0;
	assert_int_equal(maru_map(fd_null, NULL, MARU_MAP_WRITE, &m), -EBADF);
	assert_int_equal(fk.unholds, 0);
	/* a hold taken, then a failure: it is given back */
	fk.held_ok = 1;
	fk.generation = 99;
	assert_int_equal(maru_map(fd_null, NULL, MARU_MAP_WRITE, &m), -ESTALE);
	assert_int_equal(fk.unholds, 1);
}

static void test_empty(void **state)
{
	struct maru_map *m;

	fk.n = 0;
	fk.size = 0;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_null(maru_map_addr(m));
	assert_int_equal(maru_map_size(m), 0);
	assert_int_equal(maru_map_check(m), 0);
	assert_int_equal(maru_unmap(m), 0);
	assert_int_equal(maru_unmap(NULL), -EINVAL);
}

/* Resident bytes of the mapping that holds addr, from /proc/self/smaps. */
static long rss_at(const void *addr)
{
	unsigned long lo, hi;
	char line[512];
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ' ') &&
		    line[strspn(line, "0123456789abcdef")] == '-')
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb * 1024;
}

/* Is a file of this name mapped in this process (/proc/self/maps)? */
static int mapped_path(const char *path)
{
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, path) != NULL;
	fclose(f);
	return found;
}

/* Read-only mappings are ranges of one pool mapping: no mmap per open. */
static void test_pool_mapping_kept(void **state)
{
	struct maru_map *a, *b;
	uint8_t *pa;
	int n;

	ext_set(0, 2 * MiB + 8 * KiB, 1 * MiB);
	fk.size = 1 * MiB;
	assert_int_equal(maru_map(fd_null, NULL, 0, &a), 0);
	n = maps.n;
	pa = maru_map_addr(a);
	assert_int_equal(maru_unmap(a), 0);
	ext_set(0, 9 * MiB + 4 * KiB, 2 * MiB);
	fk.size = 2 * MiB;
	assert_int_equal(maru_map(fd_null, NULL, 0, &b), 0);
	assert_bytes(b);
	assert_int_equal(maps.n, n);	/* no new mapping of the pool */
	assert_ptr_equal((uint8_t *)maru_map_addr(b), pa + (9 * MiB + 4 * KiB) - (2 * MiB + 8 * KiB));
	assert_int_equal(pa[0], pat(2 * MiB + 8 * KiB));	/* still mapped after unmap */
	assert_int_equal(maru_unmap(b), 0);
}

/* Extents that follow each other in the pool need no stitching. */
static void test_contiguous_extents(void **state)
{
	struct maru_map *m;
	int i;

	ext_set(0, 4 * MiB + 4 * KiB, 1 * MiB - 4 * KiB);
	ext_set(1, 5 * MiB, 3 * KiB);	/* not page-aligned: no stitching could do it */
	ext_set(2, 5 * MiB + 3 * KiB, 2 * MiB);
	fk.size = 1 * MiB - 4 * KiB + 3 * KiB + 2 * MiB - 7;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_bytes(m);
	for (i = 0; i < maps.n; i++)
		assert_false(maps.fixed[i]);
	assert_int_equal(maru_unmap(m), 0);
}

/* MARU_MAP_POPULATE leaves the file's range of the pool mapping resident. */
static void test_populate(void **state)
{
	struct maru_map *m;

	ext_set(0, 16 * MiB, 6 * MiB);
	fk.size = 6 * MiB;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_true(rss_at(maru_map_addr(m)) < 6 * (long)MiB);
	assert_int_equal(maru_unmap(m), 0);
	assert_int_equal(maru_map(fd_null, NULL, MARU_MAP_POPULATE, &m), 0);
	assert_true(rss_at(maru_map_addr(m)) >= 6 * (long)MiB);
	assert_bytes(m);
	assert_int_equal(maru_unmap(m), 0);
}

/* A pool replaced under its path: the old one's memory is let go. */
static void test_pool_replaced(void **state)
{
	char old[sizeof(fk.path)];
	struct maru_map *m;

	ext_set(0, 2 * MiB, 1 * MiB);
	fk.size = 1 * MiB;
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_int_equal(maru_unmap(m), 0);
	memcpy(old, fk.path, sizeof(old));
	assert_true(mapped_path(old));
	pool_make(7);
	assert_int_equal(maru_map(fd_null, NULL, 0, &m), 0);
	assert_bytes(m);
	assert_false(mapped_path(old));
	assert_int_equal(maru_unmap(m), 0);
}

/* MARU_MAP_BORROW: the caller's descriptor is the lease, left open. */
static void test_borrow(void **state)
{
	struct maru_map *m;
	int fd = open("/dev/null", O_RDONLY), free_fd, probe;

	assert_true(fd >= 0);
	free_fd = dup(fd);	/* the lowest free descriptor number */
	close(free_fd);
	ext_set(0, 2 * MiB, 1 * MiB);
	fk.size = 1 * MiB;
	assert_int_equal(maru_map(fd, NULL, MARU_MAP_BORROW, &m), 0);
	assert_bytes(m);
	probe = dup(fd);	/* no duplicate taken: that number is still free */
	assert_int_equal(probe, free_fd);
	close(probe);
	assert_int_equal(maru_unmap(m), 0);
	assert_true(fcntl(fd, F_GETFD) >= 0);	/* still open */
	assert_int_equal(maru_map(fd, NULL, MARU_MAP_BORROW | MARU_MAP_WRITE, &m), -EINVAL);
	assert_int_equal(maru_map(AT_FDCWD, "/dev/null", MARU_MAP_BORROW, &m), -EINVAL);
	assert_int_equal(close(fd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_extent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stitched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_devdax_granule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_devdax_unaligned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_devdax_grown_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_mapping_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_contiguous_extents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_populate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_borrow, setup, teardown),
	};

	return cmocka_run_group_tests_name("map", tests, NULL, NULL);
}
