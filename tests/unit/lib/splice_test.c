/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/splice_test.c: maru_file_splice_src() (lib/splice.c) on
 * the hand-built pool of common/pool_fixture.h: each file byte is named at
 * its pool offset in a read-only descriptor of the pool file, one piece of
 * an extent at a time and never past the file's end; the descriptor is one
 * number for the client's life, repointed (not replaced) when the pool
 * file changes; another generation in the superblock is -ESTALE; a pending
 * handle, coherence=flush, no mapping or a pool without a read-only
 * descriptor (devdax) is -EOPNOTSUPP; a dead handle is -EIO.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/pool_fixture.h"
#include "splice.h"

/* A lease on the fixture's pool, with a client splice source. */
static void lease_setup(struct fx *x, enum maru_coherence coh)
{
	struct stat st;

	fx_setup(x, coh);
	x->f.pending = 0;
	x->map.rofd = open(x->path, O_RDONLY | O_CLOEXEC);
	assert_true(x->map.rofd >= 0);
	assert_int_equal(fstat(x->map.rofd, &st), 0);
	x->map.dev = (uint64_t)st.st_dev;
	x->map.ino = (uint64_t)st.st_ino;
	assert_int_equal(splice_src_new(&x->c), 0);
}

static void lease_teardown(struct fx *x)
{
	splice_src_free(&x->c);
	assert_null(x->c.splice);
	close(x->map.rofd);
	fx_teardown(x);
}

/* The piece at off reads, through the descriptor, as the file's bytes. */
static void check_piece(struct fx *x, uint64_t off, uint64_t want_len, int *fd_out)
{
	uint8_t buf[8192];
	uint64_t fd_off;
	size_t len, i;
	int fd;

	assert_int_equal(maru_file_splice_src(&x->f, off, &fd, &fd_off, &len), 0);
	assert_int_equal(len, want_len);
	assert_int_equal(fd_off, fx_where(off));
	assert_true(len <= sizeof(buf));
	assert_int_equal(pread(fd, buf, len, (off_t)fd_off), (ssize_t)len);
	for (i = 0; i < len; i++)
		assert_int_equal(buf[i], fx_pattern(fx_where(off + i)));
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	*fd_out = fd;
}

static void test_pieces(void **state)
{
	uint64_t fd_off;
	struct fx x;
	size_t len;
	int fd, fd2;

	(void)state;
	lease_setup(&x, MARU_COHERENCE_HW);
	check_piece(&x, 0, 4096, &fd);			/* the whole first extent */
	check_piece(&x, 4096 + 100, 8192 - 100, &fd2);	/* the rest of the second */
	assert_int_equal(fd2, fd);			/* one descriptor */
	check_piece(&x, 4096 + 8192 + 10, 5000 - 10, &fd2);	/* to the file's end */
	assert_int_equal(fd2, fd);
	/* at and past the end: nothing, no error */
	assert_int_equal(maru_file_splice_src(&x.f, FX_SIZE, &fd2, &fd_off, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(maru_file_splice_src(&x.f, FX_SIZE + 9999, &fd2, &fd_off, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(maru_file_splice_src(NULL, 0, &fd2, &fd_off, &len), -EINVAL);
	assert_int_equal(maru_file_splice_src(&x.f, 0, NULL, &fd_off, &len), -EINVAL);
	lease_teardown(&x);
}

/* A remap to another pool file repoints the same descriptor number. */
static void test_same_number_new_file(void **state)
{
	char path2[80];
	struct stat st, got;
	uint64_t fd_off;
	struct fx x;
	size_t len;
	int fd, fd2, other;

	(void)state;
	lease_setup(&x, MARU_COHERENCE_HW);
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), 0);
	snprintf(path2, sizeof(path2), "%s-2", x.path);
	other = open(path2, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(other >= 0);
	assert_int_equal(pwrite(other, x.base, FX_POOL, 0), FX_POOL);	/* same bytes */
	assert_int_equal(fstat(other, &st), 0);
	close(x.map.rofd);
	x.map.rofd = other;
	x.map.dev = (uint64_t)st.st_dev;
	x.map.ino = (uint64_t)st.st_ino;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd2, &fd_off, &len), 0);
	assert_int_equal(fd2, fd);
	assert_int_equal(fstat(fd2, &got), 0);
	assert_int_equal(got.st_ino, st.st_ino);
	/* the client's copy, not the map's: closing the map's leaves it open */
	assert_int_equal(fcntl(fd2, F_GETFL) & O_ACCMODE, O_RDWR);
	unlink(path2);
	lease_teardown(&x);
	assert_int_equal(fcntl(fd, F_GETFD), -1);	/* closed with the client */
}

static void test_refused(void **state)
{
	struct pool_superblock *sb;
	struct pool_map *map;
	uint64_t fd_off;
	struct fx x;
	size_t len;
	int fd, rofd;

	(void)state;
	lease_setup(&x, MARU_COHERENCE_HW);
	/* a restarted marud owns the pool now */
	sb = (struct pool_superblock *)x.base;
	__atomic_store_n(&sb->generation, FX_GEN + 1, __ATOMIC_RELEASE);
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -ESTALE);
	assert_int_equal(fd, -1);
	assert_int_equal(len, 0);
	__atomic_store_n(&sb->generation, FX_GEN, __ATOMIC_RELEASE);
	/* a pending version's bytes still move */
	x.f.pending = 1;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -EOPNOTSUPP);
	x.f.pending = 0;
	/* no mapping here (tcp, rdma) */
	map = x.c.map;
	x.c.map = NULL;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -EOPNOTSUPP);
	x.c.map = map;
	/* a device-DAX pool: no read-only descriptor to splice from */
	rofd = x.map.rofd;
	x.map.rofd = -1;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -EOPNOTSUPP);
	x.map.rofd = rofd;
	/* marud dropped the handle */
	x.f.dead = 1;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -EIO);
	x.f.dead = 0;
	/* a new session of the same generation: the old session's lease is gone */
	x.c.s.epoch = 1;
	x.c.s.generation = FX_GEN;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -EIO);
	x.c.s.generation = FX_GEN + 1;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -ESTALE);
	x.c.s.epoch = 0;
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), 0);
	lease_teardown(&x);
}

static void test_flush_coherence(void **state)
{
	uint64_t fd_off;
	struct fx x;
	size_t len;
	int fd;

	(void)state;
	/* the page cache of the pool file is not coherent with flushed memory */
	lease_setup(&x, MARU_COHERENCE_FLUSH);
	assert_int_equal(maru_file_splice_src(&x.f, 0, &fd, &fd_off, &len), -EOPNOTSUPP);
	lease_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_same_number_new_file),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_flush_coherence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
