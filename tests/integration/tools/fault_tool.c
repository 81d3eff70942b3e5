/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/fault_tool.c: the small steps the fault cases
 * (tests/integration/fault_*.sh) put together: write a self-checking chunk
 * (chunk.h) through a marufs mount or through libmaru, optionally stopping
 * half way with the file open (the case then kills something), verify that
 * names hold whole chunks, and hold a lease across a fault. Every verdict is
 * printed one per line as "NAME ok SEED", "NAME missing", "NAME error
 * ENAME" or "NAME BAD why"; the exit status is 1 only for a BAD version
 * (something partial was visible) or a usage error, so the case decides
 * which errors a fault allows.
 *
 *   fault_tool fwrite PATH SIZE SEED [STOP READYFILE]
 *   fault_tool fverify PATH...
 *   fault_tool fhold PATH READYFILE GOFILE
 *   fault_tool put URI NAME SIZE SEED [STOP READYFILE]
 *   fault_tool verify URI NAME...
 *   fault_tool hold URI NAME READYFILE GOFILE
 *
 * With STOP, the writer writes STOP bytes, creates READYFILE and then waits
 * (at most 120 s) with the file still open, for the case to kill it or the
 * daemon under it. NAMEs of the libmaru commands are in the root directory.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "chunk.h"
#include "maru_tool.h"

#define PIECE	(64u << 10)

static const char *ename(int err)
{
	const char *n = strerrorname_np(err < 0 ? -err : err);

	return n ? n : "E?";
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (end == s || *end) {
		fprintf(stderr, "fault_tool: not a number: %s\n", s);
		exit(2);
	}
	return v;
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	CHECK(fd >= 0);
	close(fd);
}

static void wait_file(const char *path)
{
	struct stat st;
	uint64_t end = tool_mono_ms() + 120000;

	while (stat(path, &st) != 0) {
		CHECK(tool_mono_ms() < end);
		usleep(10000);
	}
}

/* The case kills us (or our daemon) here; never returns. */
static void park(const char *ready)
{
	touch(ready);
	sleep(120);
	fprintf(stderr, "fault_tool: nobody killed me in 120 s\n");
	exit(3);
}

/* Print the verdict on one whole read of a name; 1 if BAD. */
static int verdict(const char *name, const uint8_t *buf, size_t len)
{
	const char *why = NULL;
	uint64_t seed;

	if (chunk_check(buf, len, &seed, &why)) {
		printf("%s BAD %s (%zu bytes)\n", name, why, len);
		return 1;
	}
	printf("%s ok %llu\n", name, (unsigned long long)seed);
	return 0;
}

static uint8_t *chunk_new(uint64_t size, uint64_t seed)
{
	uint8_t *buf;

	if (size < CHUNK_HDR) {
		fprintf(stderr, "fault_tool: SIZE must be at least %u\n", CHUNK_HDR);
		exit(2);
	}
	buf = malloc(size);
	CHECK(buf);
	chunk_make(buf, size, seed);
	return buf;
}

/* ---- through a mount ---- */

/* Read a whole open file; -errno or the length (buffer in *out). */
static ssize_t fd_slurp(int fd, uint8_t **out)
{
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf = malloc(cap);
	ssize_t n;

	CHECK(buf);
	for (;;) {
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			CHECK(buf);
		}
		n = pread(fd, buf + len, cap - len, (off_t)len);
		if (n < 0) {
			free(buf);
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	return (ssize_t)len;
}

static int fverify_one(const char *path, int fd)
{
	uint8_t *buf = NULL;
	ssize_t n;
	int bad;

	if (fd < 0) {
		if (errno == ENOENT) {
			printf("%s missing\n", path);
			return 0;
		}
		printf("%s error %s\n", path, ename(errno));
		return 0;
	}
	n = fd_slurp(fd, &buf);
	if (n < 0) {
		printf("%s error %s\n", path, ename((int)n));
		return 0;
	}
	bad = verdict(path, buf, (size_t)n);
	free(buf);
	return bad;
}

static int cmd_fwrite(int argc, char **argv)
{
	uint64_t size = num(argv[1]), seed = num(argv[2]), stop = argc > 4 ? num(argv[3]) : size;
	uint8_t *buf = chunk_new(size, seed);
	uint64_t off = 0;
	int fd;

	fd = open(argv[0], O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		printf("%s error %s\n", argv[0], ename(errno));
		free(buf);
		return 4;
	}
	while (off < size) {
		size_t n = size - off < PIECE ? (size_t)(size - off) : PIECE;
		ssize_t w;

		if (off < stop && off + n > stop)
			n = (size_t)(stop - off);
		if (off == stop && argc > 4)
			park(argv[4]);
		w = pwrite(fd, buf + off, n, (off_t)off);
		if (w < 0) {
			printf("%s error %s\n", argv[0], ename(errno));
			close(fd);
			free(buf);
			return 4;
		}
		off += (uint64_t)w;
	}
	if (argc > 4)
		park(argv[4]);
	free(buf);
	if (close(fd) < 0) {
		printf("%s error %s\n", argv[0], ename(errno));
		return 4;
	}
	return 0;
}

static int cmd_fverify(int argc, char **argv)
{
	int i, bad = 0;

	for (i = 0; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);

		bad |= fverify_one(argv[i], fd);
		if (fd >= 0)
			close(fd);
	}
	return bad;
}

static int cmd_fhold(int argc, char **argv)
{
	int fd = open(argv[0], O_RDONLY | O_CLOEXEC), bad;

	if (fd < 0) {
		printf("%s error %s\n", argv[0], ename(errno));
		return 4;
	}
	if (fverify_one(argv[0], fd))
		return 1;
	fflush(stdout);
	touch(argv[1]);
	wait_file(argv[2]);
	bad = fverify_one(argv[0], fd);
	close(fd);
	return bad;
}

/* ---- through libmaru ---- */

static int lverify_one(struct maru_client *c, const char *name)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc, bad;

	rc = tool_load(c, MARU_ROOT_ID, name, &buf, &len);
	if (rc == -ENOENT) {
		printf("%s missing\n", name);
		return 0;
	}
	if (rc) {
		printf("%s error %s\n", name, ename(rc));
		return 0;
	}
	bad = verdict(name, buf, len);
	free(buf);
	return bad;
}

static int cmd_put(int argc, char **argv)
{
	struct maru_client *c = tool_client(argv[0]);
	uint64_t size = num(argv[2]), seed = num(argv[3]);
	uint64_t stop = argc > 5 ? num(argv[4]) : size;
	uint8_t *buf = chunk_new(size, seed);
	struct maru_file *f;
	ssize_t n;
	int rc;

	rc = maru_file_create(c, MARU_ROOT_ID, argv[1], 0644, 0, 0, 0, 0, &f);
	if (rc)
		goto out;
	n = maru_file_pwrite(f, buf, stop, 0);
	if (n >= 0 && argc > 5)
		park(argv[5]);
	if (n >= 0 && (uint64_t)n == stop && stop < size)
		n = maru_file_pwrite(f, buf + stop, size - stop, stop);
	rc = n < 0 ? (int)n : maru_file_publish(f);
	maru_file_close(f);
out:
	if (rc)
		printf("%s error %s\n", argv[1], ename(rc));
	maru_client_free(c);
	free(buf);
	return rc ? 4 : 0;
}

static int cmd_verify(int argc, char **argv)
{
	struct maru_client *c = tool_client(argv[0]);
	int i, bad = 0;

	for (i = 1; i < argc; i++)
		bad |= lverify_one(c, argv[i]);
	maru_client_free(c);
	return bad;
}

static int cmd_hold(int argc, char **argv)
{
	struct maru_client *c = tool_client(argv[0]);
	struct maru_file *f;
	struct maru_attr a;
	uint8_t *buf;
	ssize_t n;
	int rc, bad;

	rc = maru_file_open(c, MARU_ROOT_ID, argv[1], &f);
	if (rc) {
		printf("%s error %s\n", argv[1], ename(rc));
		maru_client_free(c);
		return 4;
	}
	OK(maru_file_attr(f, &a));
	buf = malloc(a.size + 1);
	CHECK(buf);
	n = maru_file_pread(f, buf, a.size + 1, 0);
	if (n < 0 || verdict(argv[1], buf, (size_t)n))
		return 1;
	fflush(stdout);
	touch(argv[2]);
	wait_file(argv[3]);
	n = maru_file_pread(f, buf, a.size + 1, 0);
	if (n < 0) {
		printf("%s error %s\n", argv[1], ename((int)n));
		bad = 0;
	} else {
		bad = verdict(argv[1], buf, (size_t)n);
	}
	maru_file_close(f);
	maru_client_free(c);
	free(buf);
	return bad;
}

static const struct {
	const char *name;
	int min, max;	/* arguments after the command */
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "fwrite", 3, 5, cmd_fwrite },
	{ "fverify", 1, 1 << 20, cmd_fverify },
	{ "fhold", 3, 3, cmd_fhold },
	{ "put", 4, 6, cmd_put },
	{ "verify", 2, 1 << 20, cmd_verify },
	{ "hold", 4, 4, cmd_hold },
};

int main(int argc, char **argv)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; argc > 1 && i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		if (argc - 2 < cmds[i].min || argc - 2 > cmds[i].max ||
		    (cmds[i].max - cmds[i].min == 2 && argc - 2 == cmds[i].min + 1))
			break;
		return cmds[i].fn(argc - 2, argv + 2);
	}
	fprintf(stderr, "usage: fault_tool fwrite|fverify|fhold|put|verify|hold ... "
		"(see the comment at the top of fault_tool.c)\n");
	return 2;
}
