/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/engine_nixl.c: the calls of SGLang's `nixl`
 * HiCache backend through NIXL's POSIX plugin, as the engine's own sources (late 2026)
 * record them: every file opened O_RDWR|O_CREAT|O_DIRECT, for puts and
 * gets alike, and written IN PLACE (no temp file, no rename) by requests at
 * offsets, many in flight across the open files, through pwrite/pread or
 * (-u) io_uring (IORING_OP_WRITE/READ); a cleaner that deletes the oldest
 * files. engines.md names no file names for this backend; the tool's are
 * `<64 hex>.nixl`. Every completion's result and every byte read is checked.
 *
 * On marufs a file is written once and published on the last close
 * (marufs-design(7) §2, §4.1), and the tool asserts that documented behaviour where it
 * differs from a local filesystem: an in-place rewrite of a published file
 * starts from a copy of its bytes, is invisible to another mount until the
 * writer closes, and a reader that opened the file before keeps the old
 * bytes even after the close; two mounts putting one file in place at
 * once leave one writer's whole bytes (the last close), never a mix.
 *
 * usage: engine_nixl [-u] [-n FILES] [-s BYTES] [-c CHUNK] [-q DEPTH]
 *                    DIR OTHER_DIR
 * OTHER_DIR: the same directory through another mount. Exit 0 only when
 * every check passed; 77 for -u when built without liburing.
 */
#include <dirent.h>
#include <fcntl.h>

#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#include "engine_tool.h"

#define NIXL_FLAGS (O_RDWR | O_CREAT | O_DIRECT)

struct req {
	int fd, write;
	uint8_t *buf;
	size_t len;
	off_t off;
};

struct nixl {
	const char *dir, *other;
	unsigned int files, depth;
	size_t size, chunk;
	int uring;
	int *fds;
	uint8_t **bufs;		/* one aligned file-sized buffer per file */
};

static void file_path(const char *dir, unsigned int i, char *out, size_t outsz)
{
	char h[65];

	et_hash_hex(h, 32, 0x6e69786c, i);
	snprintf(out, outsz, "%s/%s.nixl", dir, h);
}

static void run_sync(struct req *r, unsigned int n)
{
	unsigned int i;
	ssize_t got;

	for (i = 0; i < n; i++) {
		if (r[i].write)
			got = SYS(pwrite(r[i].fd, r[i].buf, r[i].len, r[i].off));
		else
			got = SYS(pread(r[i].fd, r[i].buf, r[i].len, r[i].off));
		ET_CHECK((size_t)got == r[i].len, "%s of %zu at %jd: %zd",
			 r[i].write ? "pwrite" : "pread", r[i].len, (intmax_t)r[i].off, got);
	}
}

#ifdef HAVE_LIBURING
/* Keep up to depth requests in flight; every completion must be whole. */
static void run_uring(struct req *r, unsigned int n, unsigned int depth)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	unsigned int next = 0, done = 0, inflight = 0;
	int rc;

	rc = io_uring_queue_init(depth, &ring, 0);
	ET_CHECK(rc == 0, "io_uring_queue_init: %s", et_errno_name(-rc));
	while (done < n) {
		while (next < n && inflight < depth) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			ET_CHECK(sqe, "io_uring_get_sqe: ring full");
			if (r[next].write)
				io_uring_prep_write(sqe, r[next].fd, r[next].buf,
						    (unsigned int)r[next].len, (uint64_t)r[next].off);
			else
				io_uring_prep_read(sqe, r[next].fd, r[next].buf,
						   (unsigned int)r[next].len, (uint64_t)r[next].off);
			io_uring_sqe_set_data64(sqe, next);
			next++;
			inflight++;
		}
		rc = io_uring_submit_and_wait(&ring, 1);
		ET_CHECK(rc >= 0, "io_uring_submit_and_wait: %s", et_errno_name(-rc));
		while (io_uring_peek_cqe(&ring, &cqe) == 0) {
			struct req *q = &r[io_uring_cqe_get_data64(cqe)];

			ET_CHECK(cqe->res == (int)q->len, "io_uring %s of %zu at %jd: %s",
				 q->write ? "write" : "read", q->len, (intmax_t)q->off,
				 cqe->res < 0 ? et_errno_name(-cqe->res) : "short");
			io_uring_cqe_seen(&ring, cqe);
			inflight--;
			done++;
		}
	}
	io_uring_queue_exit(&ring);
}
#endif

static void run_reqs(const struct nixl *x, struct req *r, unsigned int n)
{
#ifdef HAVE_LIBURING
	if (x->uring) {
		run_uring(r, n, x->depth);
		return;
	}
#endif
	run_sync(r, n);
}

/*
 * One request per chunk of every open file, interleaved across files and
 * last chunk first, as a transfer engine posts them.
 */
static void transfer_all(struct nixl *x, int write)
{
	unsigned int per = (unsigned int)(x->size / x->chunk), n = 0, c, i;
	struct req *r = calloc((size_t)per * x->files, sizeof(*r));

	ET_CHECK(r, "out of memory");
	for (c = per; c-- > 0;)
		for (i = 0; i < x->files; i++)
			r[n++] = (struct req){ x->fds[i], write, x->bufs[i] + c * x->chunk,
					       x->chunk, (off_t)(c * x->chunk) };
	run_reqs(x, r, n);
	free(r);
}

static void open_all(struct nixl *x, const char *dir, int flags)
{
	char p[4200];
	unsigned int i;

	for (i = 0; i < x->files; i++) {
		file_path(dir, i, p, sizeof(p));
		x->fds[i] = SYS(open(p, flags, 0644));
	}
}

static void close_all(struct nixl *x)
{
	unsigned int i;

	for (i = 0; i < x->files; i++)
		SYS(close(x->fds[i]));
}

/* Put every file, then get it back through the same flags, byte-exact. */
static void put_get(struct nixl *x)
{
	unsigned int i;
	struct stat st;
	char p[4200];

	for (i = 0; i < x->files; i++) {
		file_path(x->dir, i, p, sizeof(p));
		FAILS_WITH(stat(p, &st), ENOENT);
		et_fill(x->bufs[i], x->size, i);
	}
	open_all(x, x->dir, NIXL_FLAGS);
	transfer_all(x, 1);
	close_all(x);
	for (i = 0; i < x->files; i++)
		memset(x->bufs[i], 0, x->size);
	open_all(x, x->dir, NIXL_FLAGS);	/* a get opens O_RDWR|O_CREAT too */
	transfer_all(x, 0);
	close_all(x);
	for (i = 0; i < x->files; i++) {
		file_path(x->dir, i, p, sizeof(p));
		et_verify(x->bufs[i], x->size, i, p);
		SYS(stat(p, &st));
		ET_CHECK((size_t)st.st_size == x->size, "%s: size %jd after a get", p,
			 (intmax_t)st.st_size);
		memset(x->bufs[i], 0, x->size);
	}
	open_all(x, x->other, O_RDONLY | O_DIRECT);
	transfer_all(x, 0);
	close_all(x);
	for (i = 0; i < x->files; i++)
		et_verify(x->bufs[i], x->size, i, "get through the other mount");
}

/* Read file f whole through path with flags into buf. */
static void read_whole(const char *path, int fd, uint8_t *buf, size_t size)
{
	ssize_t n = SYS(pread(fd, buf, size, 0));

	ET_CHECK((size_t)n == size, "%s: read %zd of %zu", path, n, size);
}

/* Expected bytes of file 0 after chunk 1 was rewritten: old, then patch. */
static void expect_patched(const struct nixl *x, uint8_t *want)
{
	et_fill(want, x->size, 0);
	et_fill(want + x->chunk, x->chunk, 1000);
}

/*
 * A put over a published file, in place: one chunk rewritten through the
 * NIXL flags. A reader opened before keeps the old bytes (also after the
 * close), the other mount sees the old bytes until the close, the writer
 * sees the copy with its patch, and after the close everyone does.
 */
static void rewrite_one(struct nixl *x)
{
	char p[4200], q[4200];
	uint8_t *got = et_alloc(x->size), *want = et_alloc(x->size);
	int old, wfd, far;
	struct req r;

	file_path(x->dir, 0, p, sizeof(p));
	file_path(x->other, 0, q, sizeof(q));
	old = SYS(open(p, O_RDONLY | O_DIRECT));
	wfd = SYS(open(p, NIXL_FLAGS, 0644));
	et_fill(x->bufs[0], x->chunk, 1000);
	r = (struct req){ wfd, 1, x->bufs[0], x->chunk, (off_t)x->chunk };
	run_reqs(x, &r, 1);
	far = SYS(open(q, O_RDONLY | O_DIRECT));
	read_whole(q, far, got, x->size);
	SYS(close(far));
	et_verify(got, x->size, 0, "other mount while the rewrite is open (old bytes)");
	read_whole(p, wfd, got, x->size);
	expect_patched(x, want);
	ET_CHECK(memcmp(got, want, x->size) == 0, "writer does not read its copy + patch");
	SYS(close(wfd));
	read_whole(p, old, got, x->size);
	SYS(close(old));
	et_verify(got, x->size, 0, "reader opened before the rewrite (keeps old bytes)");
	far = SYS(open(q, O_RDONLY | O_DIRECT));
	read_whole(q, far, got, x->size);
	SYS(close(far));
	ET_CHECK(memcmp(got, want, x->size) == 0, "other mount after the close: not patched");
	free(got);
	free(want);
}

/*
 * Two engines put one key in place at once, one per mount, their requests
 * interleaved. Each mount writes its own version (write-once), so the file
 * ends as ONE writer's whole bytes, the last to close, on both mounts; a
 * local filesystem would mix the two.
 */
static void rewrite_two_mounts(struct nixl *x)
{
	char p[4200], q[4200];
	uint8_t *got = et_alloc(x->size);
	unsigned int per = (unsigned int)(x->size / x->chunk), c;
	int fa, fb;
	struct req r[2];

	file_path(x->dir, 1, p, sizeof(p));
	file_path(x->other, 1, q, sizeof(q));
	fa = SYS(open(p, NIXL_FLAGS, 0644));
	fb = SYS(open(q, NIXL_FLAGS, 0644));
	et_fill(x->bufs[1], x->size, 2000);
	et_fill(x->bufs[2], x->size, 2001);
	for (c = 0; c < per; c++) {
		r[0] = (struct req){ fa, 1, x->bufs[1] + c * x->chunk, x->chunk, (off_t)(c * x->chunk) };
		r[1] = (struct req){ fb, 1, x->bufs[2] + (per - 1 - c) * x->chunk, x->chunk,
				     (off_t)((per - 1 - c) * x->chunk) };
		run_reqs(x, r, 2);
	}
	SYS(close(fa));
	SYS(close(fb));
	fa = SYS(open(p, O_RDONLY | O_DIRECT));
	read_whole(p, fa, got, x->size);
	SYS(close(fa));
	et_verify(got, x->size, 2001, "two-mount in-place put, this mount (last close wins)");
	fb = SYS(open(q, O_RDONLY | O_DIRECT));
	read_whole(q, fb, got, x->size);
	SYS(close(fb));
	et_verify(got, x->size, 2001, "two-mount in-place put, other mount");
	free(got);
}

/* Every file overwritten whole in place, read back through the other mount. */
static void rewrite_in_place(struct nixl *x)
{
	unsigned int i;

	rewrite_one(x);
	rewrite_two_mounts(x);
	for (i = 0; i < x->files; i++)
		et_fill(x->bufs[i], x->size, i + x->files);
	open_all(x, x->dir, NIXL_FLAGS);
	transfer_all(x, 1);
	close_all(x);
	for (i = 0; i < x->files; i++)
		memset(x->bufs[i], 0, x->size);
	open_all(x, x->other, O_RDONLY | O_DIRECT);
	transfer_all(x, 0);
	close_all(x);
	for (i = 0; i < x->files; i++)
		et_verify(x->bufs[i], x->size, i + x->files, "overwritten file, other mount");
	printf("in-place rewrites: old readers keep their bytes, other mount sees them at close\n");
}

struct aged {
	char path[4200];
	struct timespec mtime;
};

static int aged_cmp(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* The cleaner: stat every file, delete the oldest half, then the rest. */
static void cleaner(struct nixl *x)
{
	struct aged *v = calloc(x->files, sizeof(*v));
	unsigned int i;
	struct stat st;

	ET_CHECK(v, "out of memory");
	for (i = 0; i < x->files; i++) {
		file_path(x->dir, i, v[i].path, sizeof(v[i].path));
		SYS(stat(v[i].path, &st));
		v[i].mtime = st.st_mtim;
	}
	qsort(v, x->files, sizeof(*v), aged_cmp);
	for (i = 0; i < x->files / 2; i++)
		SYS(unlink(v[i].path));
	for (i = 0; i < x->files; i++) {
		if (i < x->files / 2)
			FAILS_WITH(stat(v[i].path, &st), ENOENT);
		else
			SYS(stat(v[i].path, &st));
	}
	for (i = x->files / 2; i < x->files; i++)
		SYS(unlink(v[i].path));
	FAILS_WITH(unlink(v[0].path), ENOENT);
	printf("cleaner removed the oldest %u files, then the rest\n", x->files / 2);
	free(v);
}

int main(int argc, char **argv)
{
	struct nixl x = { .files = 64, .depth = 32, .size = 1u << 20, .chunk = 256u << 10 };
	unsigned int i;
	int opt;

	while ((opt = getopt(argc, argv, "un:s:c:q:")) != -1) {
		if (opt == 'u')
			x.uring = 1;
		else if (opt == 'n')
			x.files = (unsigned int)et_num(optarg, "file count");
		else if (opt == 's')
			x.size = et_num(optarg, "file size");
		else if (opt == 'c')
			x.chunk = et_num(optarg, "chunk size");
		else if (opt == 'q')
			x.depth = (unsigned int)et_num(optarg, "queue depth");
		else
			return 2;
	}
	if (argc - optind != 2 || x.chunk % 4096 || x.size % x.chunk || x.files < 4) {
		fprintf(stderr, "usage: engine_nixl [-u] [-n FILES>=4] [-s BYTES] [-c CHUNK%%4096] [-q DEPTH] DIR OTHER\n");
		return 2;
	}
#ifndef HAVE_LIBURING
	if (x.uring) {
		printf("engine_nixl was built without liburing (liburing-dev missing at meson setup)\n");
		return 77;
	}
#endif
	x.dir = argv[optind];
	x.other = argv[optind + 1];
	x.fds = calloc(x.files, sizeof(*x.fds));
	x.bufs = calloc(x.files, sizeof(*x.bufs));
	ET_CHECK(x.fds && x.bufs, "out of memory");
	for (i = 0; i < x.files; i++)
		x.bufs[i] = et_alloc(x.size);
	put_get(&x);
	printf("put and got %u files of %zu bytes in %zu-byte requests via %s\n",
	       x.files, x.size, x.chunk, x.uring ? "io_uring" : "pwrite/pread");
	rewrite_in_place(&x);
	cleaner(&x);
	for (i = 0; i < x.files; i++)
		free(x.bufs[i]);
	free(x.bufs);
	free(x.fds);
	printf("OK\n");
	return 0;
}
