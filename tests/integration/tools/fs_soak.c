/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/fs_soak.c: the bounded soak. NPROC processes
 * share one set of names on two marufs mounts of one pool and do random
 * operations until OPS operations were done in all or SECONDS passed,
 * whichever comes first: write a self-checking chunk (chunk.h) under a name
 * (O_TRUNC, or rewrite through a temporary name and rename over it), read a
 * name back through either mount and check it is one whole chunk, rename a
 * name over another, unlink one, list a directory and stat its entries,
 * and keep a descriptor open across many operations (its bytes must never
 * change, whatever happens to the name: replace, unlink, eviction). The
 * pool is small, so writes keep evicting.
 *
 * A mount shows its own pending versions to its readers (like a local
 * file being written), so names are written in place (O_TRUNC) only
 * through the first mount and only through a temporary name and a rename
 * on the second; every read, list and held descriptor goes through the
 * second mount, where a name only ever has published versions. On the
 * first mount each name has one in-place writer process (descriptors of
 * one mount writing one name share one file, as on a local filesystem,
 * where two O_TRUNC writers at once make a mixed file).
 *
 * Names disappearing under a racing process (ENOENT) are expected and
 * counted; anything else is an unexpected error, and a read that is not
 * one whole chunk is a mismatch. Prints the operations done, by kind, and
 * the errors; exits 1 if there was any mismatch or unexpected error.
 *
 *   usage: fs_soak NPROC SECONDS OPS MAXSIZE MNT1 MNT2
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "chunk.h"
#include "maru_tool.h"

#define NDIRS	4
#define NNAMES	24	/* per directory: more than the pool holds */

enum op { O_WRITE, O_REPLACE, O_READ, O_RENAME, O_UNLINK, O_LIST, O_HOLD, O_NOPS };
static const char *op_names[O_NOPS] = {
	"write", "replace", "read", "rename", "unlink", "list", "hold",
};

struct totals {
	uint64_t ops[O_NOPS];
	uint64_t enoent, errors, mismatches, held_checks;
};

static struct totals *shared;	/* one per process, in a shared mapping */
static const char *mnt[2];
static uint64_t maxsize;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void path_of(char *out, size_t cap, int m, uint64_t *s)
{
	snprintf(out, cap, "%s/d%llu/n%llu.bin", mnt[m],
		 (unsigned long long)(rnd(s) % NDIRS), (unsigned long long)(rnd(s) % NNAMES));
}

/* A name only process `id` writes in place: one writer per name and mount. */
static void owned_path(char *out, size_t cap, int id, int nwriters, uint64_t *s)
{
	uint64_t k = rnd(s) % (NNAMES / nwriters);

	snprintf(out, cap, "%s/d%llu/n%llu.bin", mnt[0],
		 (unsigned long long)(rnd(s) % NDIRS),
		 (unsigned long long)(k * (uint64_t)nwriters + (uint64_t)(id / 2)));
}

static void err(struct totals *t, const char *what, const char *path, int e)
{
	if (e == ENOENT) {
		t->enoent++;
		return;
	}
	t->errors++;
	fprintf(stderr, "fs_soak %d: %s %s: %s\n", (int)getpid(), what, path, strerror(e));
}

static void mismatch(struct totals *t, const char *what, const char *path, const char *why,
		     size_t len)
{
	t->mismatches++;
	fprintf(stderr, "fs_soak %d: MISMATCH %s %s: %s (%zu bytes)\n", (int)getpid(), what,
		path, why, len);
}

/* Write a chunk to path (O_TRUNC); 0 or errno. */
static int write_chunk(const char *path, uint64_t *s, uint8_t *buf)
{
	/* at most maxsize bytes: readers read maxsize + 1 to see the end */
	uint64_t room = maxsize - CHUNK_HDR;
	uint64_t len = CHUNK_HDR + rnd(s) % (rnd(s) % 4 ? room : room / 16);
	uint64_t off = 0;
	int fd, e = 0;

	chunk_make(buf, len, rnd(s));
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	while (off < len && !e) {
		size_t n = len - off < (256u << 10) ? (size_t)(len - off) : (256u << 10);
		ssize_t w = pwrite(fd, buf + off, n, (off_t)off);

		if (w < 0)
			e = errno;
		else
			off += (uint64_t)w;
	}
	if (close(fd) < 0 && !e)
		e = errno;
	return e;
}

/* Read an open descriptor whole and check it; returns the length or -errno. */
static ssize_t check_fd(struct totals *t, int fd, uint8_t *buf, const char *what,
			const char *path, uint64_t *sum)
{
	const char *why = "";
	struct stat st;
	uint64_t seed;
	size_t len = 0;
	ssize_t n;

	do {
		n = pread(fd, buf + len, maxsize + 1 - len, (off_t)len);
		if (n > 0)
			len += (size_t)n;
	} while (n > 0 && len <= maxsize);
	if (n < 0)
		return -errno;
	/* engines size their reads by fstat: it must agree with the bytes */
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size != len) {
		char m[96];

		snprintf(m, sizeof(m), "fstat says %lld bytes", (long long)st.st_size);
		mismatch(t, what, path, m, len);
		return (ssize_t)len;
	}
	if (chunk_check(buf, len, &seed, &why)) {
		mismatch(t, what, path, why, len);
		return (ssize_t)len;
	}
	if (sum && *sum && *sum != seed) {
		mismatch(t, what, path, "held descriptor's bytes changed", len);
		return (ssize_t)len;
	}
	if (sum)
		*sum = seed;
	return (ssize_t)len;
}

static void do_read(struct totals *t, uint64_t *s, uint8_t *buf)
{
	char path[4200];
	ssize_t n;
	int fd;

	path_of(path, sizeof(path), 1, s);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err(t, "open", path, errno);
		return;
	}
	n = check_fd(t, fd, buf, "read", path, NULL);
	if (n < 0)
		err(t, "read", path, (int)-n);
	close(fd);
}

static void do_replace(struct totals *t, int m, uint64_t *s, uint8_t *buf)
{
	char path[4200], tmp[4300];
	int e;

	path_of(path, sizeof(path), m, s);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	e = write_chunk(tmp, s, buf);
	if (e) {
		err(t, "write", tmp, e);
		unlink(tmp);
		return;
	}
	if (rename(tmp, path) < 0) {
		err(t, "rename", tmp, errno);
		unlink(tmp);
	}
}

static void do_list(struct totals *t, int m, uint64_t *s)
{
	char path[4200], ent[4500];
	struct dirent *de;
	struct stat st;
	DIR *d;

	snprintf(path, sizeof(path), "%s/d%llu", mnt[m], (unsigned long long)(rnd(s) % NDIRS));
	d = opendir(path);
	if (!d) {
		err(t, "opendir", path, errno);
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(ent, sizeof(ent), "%s/%s", path, de->d_name);
		if (stat(ent, &st) < 0)
			err(t, "stat", ent, errno);
		else if (!S_ISREG(st.st_mode))
			err(t, "stat (not a file)", ent, EINVAL);
	}
	closedir(d);
}

/* One held descriptor per process: checked, then kept for a while. */
static void do_hold(struct totals *t, uint64_t *s, uint8_t *buf, int *held, uint64_t *sum,
		    char *hpath)
{
	ssize_t n;

	if (*held >= 0) {
		n = check_fd(t, *held, buf, "held read", hpath, sum);
		if (n < 0)
			err(t, "held read", hpath, (int)-n);
		t->held_checks++;
		if (rnd(s) % 4)
			return;
		close(*held);
		*held = -1;
	}
	path_of(hpath, 4200, 1, s);
	*held = open(hpath, O_RDONLY | O_CLOEXEC);
	if (*held < 0) {
		err(t, "open", hpath, errno);
		return;
	}
	*sum = 0;
	n = check_fd(t, *held, buf, "hold", hpath, sum);
	if (n < 0)
		err(t, "hold", hpath, (int)-n);
}

static void worker(int id, int nproc, uint64_t ops, uint64_t deadline)
{
	struct totals *t = &shared[id];
	uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1) ^ (uint64_t)getpid(), sum = 0;
	uint8_t *buf = malloc(maxsize + 1);
	char path[4200], path2[4200], hpath[4200];
	int m = id & 1, held = -1, e;
	uint64_t done = 0;

	CHECK(buf);
	while (done < ops && tool_mono_ms() < deadline) {
		enum op o = (enum op)(rnd(&s) % O_NOPS);

		t->ops[o]++;
		done++;
		switch (o) {
		case O_WRITE:
			if (m) {
				do_replace(t, m, &s, buf);
				break;
			}
			owned_path(path, sizeof(path), id, (nproc + 1) / 2, &s);
			e = write_chunk(path, &s, buf);
			if (e)
				err(t, "write", path, e);
			break;
		case O_REPLACE:
			do_replace(t, m, &s, buf);
			break;
		case O_READ:
			do_read(t, &s, buf);
			break;
		case O_RENAME:
			path_of(path, sizeof(path), m, &s);
			path_of(path2, sizeof(path2), m, &s);
			if (rename(path, path2) < 0)
				err(t, "rename", path, errno);
			break;
		case O_UNLINK:
			path_of(path, sizeof(path), (int)(rnd(&s) & 1), &s);
			if (rnd(&s) % 3 == 0 && unlink(path) < 0)
				err(t, "unlink", path, errno);
			break;
		case O_LIST:
			do_list(t, 1, &s);
			break;
		case O_HOLD:
			do_hold(t, &s, buf, &held, &sum, hpath);
			break;
		case O_NOPS:
			break;
		}
	}
	if (held >= 0)
		close(held);
	free(buf);
	_exit(0);
}

int main(int argc, char **argv)
{
	uint64_t nproc, secs, ops, start, total = 0, i, k, dead = 0;
	struct totals sum = { { 0 } };
	char path[4200];
	int status;

	if (argc != 7) {
		fprintf(stderr, "usage: fs_soak NPROC SECONDS OPS MAXSIZE MNT1 MNT2\n");
		return 2;
	}
	nproc = strtoull(argv[1], NULL, 0);
	secs = strtoull(argv[2], NULL, 0);
	ops = strtoull(argv[3], NULL, 0);
	maxsize = strtoull(argv[4], NULL, 0);
	mnt[0] = argv[5];
	mnt[1] = argv[6];
	CHECK(nproc > 0 && nproc <= 2 * NNAMES && maxsize >= 4096);
	for (i = 0; i < NDIRS; i++) {
		snprintf(path, sizeof(path), "%s/d%llu", mnt[0], (unsigned long long)i);
		CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
	}
	shared = mmap(NULL, nproc * sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shared != MAP_FAILED);
	memset(shared, 0, nproc * sizeof(*shared));
	start = tool_mono_ms();
	for (i = 0; i < nproc; i++) {
		pid_t p = fork();

		CHECK(p >= 0);
		if (p == 0)
			worker((int)i, (int)nproc, (ops + nproc - 1) / nproc, start + secs * 1000);
	}
	for (i = 0; i < nproc; i++) {
		CHECK(wait(&status) > 0);
		dead += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (i = 0; i < nproc; i++) {
		for (k = 0; k < O_NOPS; k++)
			sum.ops[k] += shared[i].ops[k];
		sum.enoent += shared[i].enoent;
		sum.errors += shared[i].errors;
		sum.mismatches += shared[i].mismatches;
		sum.held_checks += shared[i].held_checks;
	}
	for (k = 0; k < O_NOPS; k++)
		total += sum.ops[k];
	printf("fs_soak: %llu ops in %.1f s by %llu processes (", (unsigned long long)total,
	       (double)(tool_mono_ms() - start) / 1000, (unsigned long long)nproc);
	for (k = 0; k < O_NOPS; k++)
		printf("%s%s %llu", k ? ", " : "", op_names[k], (unsigned long long)sum.ops[k]);
	printf("); %llu held-descriptor checks\n", (unsigned long long)sum.held_checks);
	printf("fs_soak: %llu mismatches, %llu unexpected errors, %llu expected ENOENT, "
	       "%llu workers failed\n", (unsigned long long)sum.mismatches,
	       (unsigned long long)sum.errors, (unsigned long long)sum.enoent,
	       (unsigned long long)dead);
	return sum.mismatches || sum.errors || dead ? 1 : 0;
}
