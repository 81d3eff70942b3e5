/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/zc_tool.c: drives maru_map()/maru_unmap() and the
 * MARUFS_IOC_EXTENTS ioctl on a marufs mount for the zc_* integration cases.
 * Each subcommand checks one property and exits 0, or prints what differed
 * and exits 1:
 *
 *   gen SIZE SEED            pattern bytes to stdout (reference files)
 *   cmp PATH                 maru_map by path and by fd == FUSE pread
 *   extents PATH             the ioctl's extents as off+len,... (xattr form)
 *   info PATH                the ioctl's pool facts, one key=value a line
 *   survive unlink PATH      a mapping outlives unlink of its name ...
 *   survive rename PATH SRC  ... and rename of SRC over it
 *   stale PATH               map; wait for "go" on stdin (marud restarted):
 *                            the mapping and a new maru_map must be refused
 *   mappath PATH             maru_map by path; print "mapped" or
 *                            "refused: ERROR" (exit 0 either way)
 *   mapfd FD                 the same for the inherited descriptor FD
 *   write PATH SIZE SEED [pause]  writable mapping of a new pending file;
 *                            close the fd first (no publish yet), with pause
 *                            wait for "go", then unmap (publish)
 *   fork PATH                a forked child reads the parent's mapping
 *   mtread PATH REF THREADS ITERS  threads pread/read PATH (under the shim)
 *                            and compare with REF; one thread churns fds
 *   readonly-flags PATH      MARU_MAP_WRITE on a read-only fd is refused
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "maru_tool.h"

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	CHECK(errno == 0 && end != s && *end == '\0');
	return v;
}

/* The whole file through FUSE (plain reads). */
static uint8_t *fuse_read_all(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK(fstat(fd, &st) == 0);
	buf = malloc((size_t)st.st_size + 1);
	CHECK(buf);
	while ((n = pread(fd, buf + got, (size_t)st.st_size + 1 - got, (off_t)got)) > 0)
		got += (size_t)n;
	CHECK(n == 0 && got == (size_t)st.st_size);
	close(fd);
	*len = got;
	return buf;
}

static int same(const struct maru_map *m, const uint8_t *want, size_t len, const char *what)
{
	const uint8_t *p = maru_map_addr(m);
	size_t i;

	if (maru_map_size(m) != len) {
		fprintf(stderr, "%s: mapping has %llu bytes, file %zu\n", what,
			(unsigned long long)maru_map_size(m), len);
		return 0;
	}
	if (len && memcmp(p, want, len)) {
		for (i = 0; i < len && p[i] == want[i]; i++)
			;
		fprintf(stderr, "%s: first difference at byte %zu\n", what, i);
		return 0;
	}
	return 1;
}

static int cmd_gen(uint64_t size, uint64_t seed)
{
	uint8_t buf[1 << 16];
	uint64_t off;
	size_t n;

	for (off = 0; off < size; off += n) {
		n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		tool_fill(buf, n, seed, off);
		CHECK(fwrite(buf, 1, n, stdout) == n);
	}
	return 0;
}

static int cmd_cmp(const char *path)
{
	struct maru_map *a, *b;
	uint8_t *want;
	size_t len;
	int fd, ok;

	want = fuse_read_all(path, &len);
	OK(maru_map(AT_FDCWD, path, 0, &a));
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	OK(maru_map(fd, NULL, MARU_MAP_POPULATE, &b));
	close(fd);	/* the mapping keeps its own lease */
	ok = same(a, want, len, "map by path") && same(b, want, len, "map by fd");
	OK(maru_map_check(a));
	CHECK(!(maru_map_flags(a) & MARU_MAP_PENDING));
	OK(maru_unmap(a));
	OK(maru_unmap(b));
	free(want);
	if (ok)
		printf("ok %zu bytes\n", len);
	return ok ? 0 : 1;
}

/* All extents through the ioctl, paging with first. */
static int cmd_extents(const char *path, int info)
{
	struct marufs_extents *x = calloc(1, sizeof(*x));
	uint32_t got = 0, i;
	int fd = open(path, O_RDONLY), rc;

	CHECK(fd >= 0 && x);
	do {
		x->magic = MARUFS_EXT_MAGIC;
		x->version = MARUFS_EXT_VERSION;
		x->first = got;
		x->flags = 0;
		if (ioctl(fd, MARUFS_IOC_EXTENTS, x)) {
			fprintf(stderr, "ioctl: %s\n", strerror(errno));
			return 1;
		}
		for (i = 0; i < x->count && !info; i++)
			printf("%s%llu+%llu", got + i ? "," : "",
			       (unsigned long long)x->ext[i].off, (unsigned long long)x->ext[i].len);
		got += x->count;
	} while (got < x->nextents && x->count);
	if (info) {
		printf("uuid=");
		for (i = 0; i < 16; i++)
			printf("%02x", x->uuid[i]);
		printf("\ngeneration=%llu\nino=%llu\nsize=%llu\npool_path=%s\nnextents=%u\n"
		       "coherence=%s\npending=%d\nalign=%llu\n",
		       (unsigned long long)x->generation, (unsigned long long)x->ino,
		       (unsigned long long)x->size, x->pool_path, x->nextents,
		       x->coherence == MARUFS_COHERENCE_FLUSH ? "flush" : "hw",
		       !!(x->flags & MARUFS_EXT_PENDING), (unsigned long long)x->align);
	} else {
		printf("\n");
	}
	close(fd);
	rc = got == x->nextents ? 0 : 1;
	free(x);
	return rc;
}

static int cmd_survive(const char *how, const char *path, const char *src)
{
	struct maru_map *m;
	uint8_t *want;
	size_t len;
	int ok;

	want = fuse_read_all(path, &len);
	OK(maru_map(AT_FDCWD, path, 0, &m));
	if (!strcmp(how, "unlink"))
		CHECK(unlink(path) == 0);
	else
		CHECK(src && rename(src, path) == 0);
	ok = same(m, want, len, how);
	OK(maru_map_check(m));
	OK(maru_unmap(m));
	free(want);
	return ok ? 0 : 1;
}

static void wait_go(void)
{
	char line[16];

	printf("ready\n");
	fflush(stdout);
	CHECK(fgets(line, sizeof(line), stdin) && !strncmp(line, "go", 2));
}

static int cmd_stale(const char *path)
{
	struct maru_map *m, *m2;
	int fd = open(path, O_RDONLY), rc;

	CHECK(fd >= 0);
	OK(maru_map(fd, NULL, 0, &m));
	OK(maru_map_check(m));
	wait_go();
	FAILS(maru_map_check(m), ESTALE);
	FAILS(maru_map_sync(m), ESTALE);
	rc = maru_map(fd, NULL, 0, &m2);
	if (rc == 0) {
		fprintf(stderr, "maru_map of a previous generation's fd succeeded\n");
		return 1;
	}
	printf("refused: %s\n", strerror(-rc));
	maru_unmap(m);
	close(fd);
	return 0;
}

static int cmd_mappath(int fd, const char *path)
{
	struct maru_map *m;
	int rc = maru_map(fd, path, 0, &m);

	if (rc) {
		printf("refused: %s\n", strerror(-rc));
		return 0;
	}
	printf("mapped\n");
	maru_unmap(m);
	return 0;
}

static int cmd_write(const char *path, uint64_t size, uint64_t seed, int pause)
{
	struct maru_map *m;
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t)size) == 0);
	OK(maru_map(fd, NULL, MARU_MAP_WRITE, &m));
	CHECK(maru_map_flags(m) & MARU_MAP_PENDING);
	CHECK(maru_map_size(m) == size);
	tool_fill(maru_map_addr(m), size, seed, 0);
	/* closing our descriptor must not publish: the mapping still writes */
	CHECK(close(fd) == 0);
	if (pause)
		wait_go();
	OK(maru_unmap(m));
	return 0;
}

static int cmd_readonly_flags(const char *path)
{
	struct maru_map *m;
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	FAILS(maru_map(fd, NULL, MARU_MAP_WRITE, &m), EBADF);
	FAILS(maru_map(fd, NULL, 1u << 7, &m), EINVAL);
	close(fd);
	fd = open("/", O_RDONLY | O_DIRECTORY);
	FAILS(maru_map(fd, NULL, 0, &m), ENOTTY);
	close(fd);
	return 0;
}

static int cmd_fork(const char *path)
{
	struct maru_map *m;
	uint8_t *want;
	size_t len;
	pid_t pid;
	int st;

	want = fuse_read_all(path, &len);
	OK(maru_map(AT_FDCWD, path, 0, &m));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct maru_map *m2;
		int ok = same(m, want, len, "child: inherited mapping");

		/* the child maps on its own too (the pool cache came along) */
		OK(maru_map(AT_FDCWD, path, 0, &m2));
		ok = ok && same(m2, want, len, "child: new mapping");
		OK(maru_unmap(m2));
		OK(maru_unmap(m));
		_exit(ok ? 0 : 1);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(same(m, want, len, "parent after the child unmapped"));
	OK(maru_unmap(m));
	free(want);
	return 0;
}

/* ---- mtread ---- */

struct mt {
	const char *path, *ref;
	int shared_fd, ref_fd;
	size_t size;
	unsigned int iters, seed;
	int churn;
	int bad;
};

static int read_full(int fd, uint8_t *buf, size_t len, off_t off, int use_pos)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = use_pos ? read(fd, buf + got, len - got) :
			      pread(fd, buf + got, len - got, off + (off_t)got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (int)(got == len);
}

static void *mt_reader(void *arg)
{
	struct mt *t = arg;
	size_t max = 4u << 20, len, off;
	uint8_t *a = malloc(max), *b = malloc(max);
	unsigned int i;
	int fd = open(t->path, O_RDONLY);

	CHECK(a && b && fd >= 0);
	for (i = 0; i < t->iters && !t->bad; i++) {
		len = (256u << 10) + (size_t)rand_r(&t->seed) % (max - (256u << 10));
		if (len > t->size)
			len = t->size;
		off = t->size > len ? (size_t)rand_r(&t->seed) % (t->size - len + 1) : 0;
		/* the shared descriptor, an own one at an offset, and read() */
		CHECK(read_full(i & 1 ? fd : t->shared_fd, a, len, (off_t)off, 0));
		CHECK(read_full(t->ref_fd, b, len, (off_t)off, 0));
		if (memcmp(a, b, len)) {
			fprintf(stderr, "thread: pread %zu+%zu differs\n", off, len);
			t->bad = 1;
		}
		CHECK(lseek(fd, (off_t)off, SEEK_SET) == (off_t)off);
		CHECK(read_full(fd, a, len, 0, 1));
		CHECK(lseek(fd, 0, SEEK_CUR) == (off_t)(off + len));
		if (memcmp(a, b, len)) {
			fprintf(stderr, "thread: read %zu+%zu differs\n", off, len);
			t->bad = 1;
		}
	}
	close(fd);
	free(a);
	free(b);
	return NULL;
}

/* Open, read, dup2 over, close: the shim must drop its entries as fds go. */
static void *mt_churn(void *arg)
{
	struct mt *t = arg;
	uint8_t *a = malloc(t->size + 1), *b = malloc(t->size + 1);
	unsigned int i;

	CHECK(a && b);
	CHECK(read_full(t->ref_fd, b, t->size, 0, 0));
	for (i = 0; i < t->iters && !t->bad; i++) {
		int fd = open(t->path, O_RDONLY), fd2 = open(t->ref, O_RDONLY);

		CHECK(fd >= 0 && fd2 >= 0);
		CHECK(read_full(fd, a, t->size, 0, 1));
		if (memcmp(a, b, t->size))
			t->bad = 1;
		/* fd now names the reference file: same bytes, another filesystem */
		CHECK(dup2(fd2, fd) == fd);
		CHECK(read_full(fd, a, t->size, 0, 0));
		if (memcmp(a, b, t->size))
			t->bad = 1;
		close(fd2);
		close(fd);
	}
	free(a);
	free(b);
	return NULL;
}

static int cmd_mtread(const char *path, const char *ref, unsigned int nthreads,
		      unsigned int iters)
{
	struct mt *t = calloc(nthreads + 1, sizeof(*t));
	pthread_t *th = calloc(nthreads + 1, sizeof(*th));
	struct stat st;
	unsigned int i;
	int shared = open(path, O_RDONLY), reffd = open(ref, O_RDONLY), bad = 0;

	CHECK(t && th && shared >= 0 && reffd >= 0 && fstat(reffd, &st) == 0);
	for (i = 0; i <= nthreads; i++) {
		t[i] = (struct mt){ .path = path, .ref = ref, .shared_fd = shared,
				    .ref_fd = reffd, .size = (size_t)st.st_size,
				    .iters = iters, .seed = 7 + i, .churn = i == nthreads };
		CHECK(pthread_create(&th[i], NULL, t[i].churn ? mt_churn : mt_reader, &t[i]) == 0);
	}
	for (i = 0; i <= nthreads; i++) {
		pthread_join(th[i], NULL);
		bad |= t[i].bad;
	}
	close(shared);
	close(reffd);
	free(t);
	free(th);
	printf("%s\n", bad ? "differ" : "ok");
	return bad;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	if (!strcmp(c, "gen") && argc == 4)
		return cmd_gen(num(argv[2]), num(argv[3]));
	if (!strcmp(c, "cmp") && argc == 3)
		return cmd_cmp(argv[2]);
	if (!strcmp(c, "extents") && argc == 3)
		return cmd_extents(argv[2], 0);
	if (!strcmp(c, "info") && argc == 3)
		return cmd_extents(argv[2], 1);
	if (!strcmp(c, "survive") && (argc == 4 || argc == 5))
		return cmd_survive(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (!strcmp(c, "stale") && argc == 3)
		return cmd_stale(argv[2]);
	if (!strcmp(c, "mappath") && argc == 3)
		return cmd_mappath(-1, argv[2]);
	if (!strcmp(c, "mapfd") && argc == 3)
		return cmd_mappath((int)num(argv[2]), NULL);
	if (!strcmp(c, "write") && (argc == 5 || argc == 6))
		return cmd_write(argv[2], num(argv[3]), num(argv[4]), argc == 6);
	if (!strcmp(c, "fork") && argc == 3)
		return cmd_fork(argv[2]);
	if (!strcmp(c, "mtread") && argc == 6)
		return cmd_mtread(argv[2], argv[3], (unsigned int)num(argv[4]),
				  (unsigned int)num(argv[5]));
	if (!strcmp(c, "readonly-flags") && argc == 3)
		return cmd_readonly_flags(argv[2]);
	fprintf(stderr, "usage: see the top of zc_tool.c\n");
	return 2;
}
