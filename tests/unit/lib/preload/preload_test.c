// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/preload/preload_test.c: the preload shim's files
 * (lib/preload/) built into this program, so their read, mmap, close and
 * dup2 interpose here as they do under LD_PRELOAD, with libmaru's map
 * calls faked below and fstatfs wrapped to call every file a FUSE one. A
 * file the fake maps answers reads of at least MARU_PRELOAD_MIN (64 KiB,
 * set by meson) with the mapping's bytes, not the disk's: read and readv
 * move the offset, pread and preadv do not, nothing past the size; smaller
 * reads, O_RDWR descriptors, files the fake does not map, pending files
 * and a mapping whose check fails (then for good) go to the disk; one
 * mapping per open, kept at close for the next open of the same version
 * (not for a changed one); dup2 onto a descriptor forgets its entry; mmap
 * of a whole-page range is the mapping's, munmap gives it back, an
 * executable, private writable or unaligned one goes to the kernel; a
 * fork child is served on its own. Run with the argument "off" (and
 * MARU_PRELOAD=0) nothing is served.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "maru/libmaru.h"

#define FSIZE		(1u << 20)
#define MIN_READ	(64u << 10)	/* MARU_PRELOAD_MIN in meson */

/* ---- the fake libmaru maps ---- */

struct maru_map {
	uint8_t *addr;
	uint64_t size;
	unsigned int flags;
};

static struct {
	ino_t ino;		/* the one file the fake maps */
	uint8_t *bytes;		/* its "pool" bytes, page-aligned */
	unsigned int flags;	/* maru_map_flags() of new mappings */
	int check_rc;
	int calls, maps, unmaps;
} fm;

int maru_map(int fd, const char *path, unsigned int flags, struct maru_map **out)
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

static char path[64], other[64];
static uint8_t buf[FSIZE];
static int off_mode;

static uint8_t pool_byte(size_t i)
{
	return (uint8_t)(i * 7 + 1);
}

static int setup(void **state)
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

static int teardown(void **state)
{
	unlink(path);
	unlink(other);
	free(fm.bytes);
	return 0;
}

/* buf[0..n) holds the pool's bytes from off, or (disk) all c. */
static int from_pool(size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != pool_byte(off + i))
			return 0;
	return 1;
}

static int all(uint8_t c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != c)
			return 0;
	return 1;
}

/* ---- tests ---- */

static void test_reads_served(void **state)
{
	struct iovec v[2] = { { buf, 40 << 10 }, { buf + (40 << 10), 40 << 10 } };
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(from_pool(0, 128 << 10));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 128 << 10);
	assert_int_equal(read(fd, buf, MIN_READ), MIN_READ);
	assert_true(from_pool(128 << 10, MIN_READ));
	/* small: the disk, at the offset the served reads left */
	assert_int_equal(read(fd, buf, 100), 100);
	assert_true(all('d', 100));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (128 << 10) + MIN_READ + 100);
	/* pread: at its offset, the file offset untouched */
	assert_int_equal(pread(fd, buf, 100 << 10, 500 << 10), 100 << 10);
	assert_true(from_pool(500 << 10, 100 << 10));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (128 << 10) + MIN_READ + 100);
	assert_int_equal(pread(fd, buf, 128 << 10, FSIZE - 10), 10);
	assert_true(from_pool(FSIZE - 10, 10));
	assert_int_equal(pread(fd, buf, 128 << 10, FSIZE), 0);
	/* readv and preadv over two buffers */
	assert_int_equal(lseek(fd, 4096, SEEK_SET), 4096);
	assert_int_equal(readv(fd, v, 2), 80 << 10);
	assert_true(from_pool(4096, 80 << 10));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 4096 + (80 << 10));
	assert_int_equal(preadv(fd, v, 2, 8192), 80 << 10);
	assert_true(from_pool(8192, 80 << 10));
	assert_int_equal(fm.maps, 1);		/* one mapping per open */
	close(fd);
}

static void test_not_served(void **state)
{
	int fd = open(path, O_RDWR), o;

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(all('d', 128 << 10));
	close(fd);
	assert_int_equal(fm.calls, 0);		/* not even asked */
	o = open(other, O_RDONLY);
	assert_true(o >= 0);
	assert_int_equal(read(o, buf, 128 << 10), 128 << 10);
	assert_true(all('o', 128 << 10));
	assert_int_equal(read(o, buf, 128 << 10), 128 << 10);
	assert_int_equal(fm.calls, 1);		/* "not ours" is remembered */
	close(o);
	/* a pending file: mapped, let go, read from the disk */
	fm.flags = MARU_MAP_PENDING;
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('d', 128 << 10));
	assert_int_equal(fm.unmaps, 1);
	close(fd);
}

static void test_check_fails(void **state)
{
	int fd = open(path, O_RDONLY);

	fm.check_rc = -ESTALE;
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('d', 128 << 10));
	fm.check_rc = 0;			/* for good: no more from this mapping */
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('d', 128 << 10));
	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(all('d', 128 << 10));
	close(fd);
}

static void test_kept_across_opens(void **state)
{
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };
	int fd = open(path, O_RDONLY), o;

	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	close(fd);
	assert_int_equal(fm.unmaps, 0);		/* kept */
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, buf, 128 << 10, 4096), 128 << 10);
	assert_true(from_pool(4096, 128 << 10));
	assert_int_equal(fm.maps, 1);
	/* dup2 onto it: the entry goes with the old file */
	o = open(other, O_RDONLY);
	assert_int_equal(dup2(o, fd), fd);
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(all('o', 128 << 10));
	close(fd);
	close(o);
	/* another version (its mtime changed): mapped anew */
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	assert_true(from_pool(0, 128 << 10));
	assert_int_equal(fm.maps, 2);
	close(fd);
}

static void test_mmap(void **state)
{
	int fd = open(path, O_RDONLY);
	uint8_t *p;

	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 4096);
	assert_ptr_equal(p, fm.bytes + 4096);
	assert_int_equal(p[0], pool_byte(4096));
	assert_int_equal(munmap(p, 8192), 0);
	assert_int_equal(fm.unmaps, 1);
	/* a private read-only view is served too */
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_ptr_equal(p, fm.bytes);
	assert_int_equal(munmap(p, 4096), 0);
	/* the kernel's: executable, private writable, past the end, unaligned */
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED && p != fm.bytes);
	assert_int_equal(p[0], 'd');
	assert_int_equal(munmap(p, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED && p != fm.bytes);
	assert_int_equal(p[0], 'd');
	assert_int_equal(munmap(p, 4096), 0);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, FSIZE - 4096);
	assert_true(p != MAP_FAILED && p != fm.bytes + FSIZE - 4096);
	assert_int_equal(munmap(p, 8192), 0);
	assert_ptr_equal(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 100), MAP_FAILED);
	assert_int_equal(fm.unmaps, 3);		/* the two served, the one past the end */
	close(fd);
}

static void test_fork_child(void **state)
{
	int fd = open(path, O_RDONLY), status;
	pid_t pid;

	assert_int_equal(pread(fd, buf, 128 << 10, 0), 128 << 10);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ssize_t n = pread(fd, buf, 128 << 10, 8192);

		_exit(n == 128 << 10 && from_pool(8192, 128 << 10) && fm.maps == 2 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fm.maps, 1);		/* the parent's own is untouched */
	close(fd);
}

static void test_off(void **state)
{
	int fd = open(path, O_RDONLY);
	uint8_t *p;

	assert_int_equal(read(fd, buf, 128 << 10), 128 << 10);
	assert_true(all('d', 128 << 10));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED && p != fm.bytes);
	assert_int_equal(munmap(p, 4096), 0);
	assert_int_equal(fm.calls, 0);
	close(fd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest on[] = {
		cmocka_unit_test_setup_teardown(test_reads_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept_across_opens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mmap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_child, setup, teardown),
	};
	const struct CMUnitTest off[] = {
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
	};

	off_mode = argc > 1 && !strcmp(argv[1], "off");
	if (off_mode)
		return cmocka_run_group_tests_name("preload (MARU_PRELOAD=0)", off, NULL, NULL);
	return cmocka_run_group_tests_name("preload", on, NULL, NULL);
}
