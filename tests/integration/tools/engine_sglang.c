/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/engine_sglang.c: the calls SGLang's HiCacheFile
 * storage backend (--hicache-storage-backend file) makes in its ONE flat
 * directory, as the engine's own sources (read in late 2026) have them. Pages are named
 * `<64 hex>_<model>_<tp_rank>_<tp_size>.bin` (the newer form, used for all
 * three writers here). A store is skipped when stat() finds the page, else
 * written by one of the three releases' writers, chosen by page number:
 *   0 older:  numpy.tofile(final): fopen "wb" (O_TRUNC in place), fwrite;
 *   1 newer:  tofile(`<final>.tmp.<pid>.<tid>.<uuid>`), os.replace;
 *   2 newest: tofile(`<dir>/.<32 hex uuid>.tmp`), os.replace.
 * Loads are one read() of the page length into a buffer (readinto, which
 * must be full length) or, for the older pages, read() to EOF. The newest
 * batch exists check lists the WHOLE directory (os.scandir); os.path.exists
 * is stat(). The LRU evictor lists the directory, stats every page (size,
 * mtime), calls statvfs and removes the oldest pages until under its limit;
 * clear() lists and removes everything. Every byte read and every errno
 * expected (ENOENT of a miss or a removed page) is checked.
 *
 * usage: engine_sglang [-n PAGES] [-s BYTES] [-t THREADS] DIR [OTHER_DIR]
 * OTHER_DIR: the same directory through another mount, which must list the
 * same pages. Exit 0 only when every check passed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/statvfs.h>

#include "engine_tool.h"

#define SUFFIX "_Llama-3.1-8B-Instruct_0_1.bin"
#define NAME_MAX_LEN 128

struct sglang {
	const char *dir, *other;
	unsigned int pages, threads;
	size_t size;
	char (*names)[NAME_MAX_LEN];	/* page i's name, sorted copy in `sorted` */
	char (*sorted)[NAME_MAX_LEN];
};

static void page_name(uint64_t i, char *out)
{
	et_hash_hex(out, 32, 0x73676c, i);
	memcpy(out + 64, SUFFIX, sizeof(SUFFIX));
}

/* numpy.tofile(path): stdio "wb" and one fwrite of the array. */
static void tofile(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ET_CHECK(f, "fopen %s: %s", path, et_errno_name(errno));
	ET_CHECK(fwrite(buf, 1, len, f) == len, "fwrite %s: %s", path, et_errno_name(errno));
	ET_CHECK(fclose(f) == 0, "fclose %s: %s", path, et_errno_name(errno));
}

/* Store page `seed` under `name` with writer generation gen; 0 if it existed. */
static int store_page(const struct sglang *s, const char *name, uint64_t seed,
		      unsigned int gen, uint8_t *buf)
{
	char final[4200], tmp[4400];
	struct stat st;

	snprintf(final, sizeof(final), "%s/%s", s->dir, name);
	if (stat(final, &st) == 0)
		return 0;
	ET_CHECK(errno == ENOENT, "exists %s: %s", final, et_errno_name(errno));
	et_fill(buf, s->size, seed);
	if (gen == 0) {
		tofile(final, buf, s->size);
		return 1;
	}
	if (gen == 1)
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%d.%016" PRIx64 "%016" PRIx64, final,
			 getpid(), gettid(), et_random64(), et_random64());
	else
		snprintf(tmp, sizeof(tmp), "%s/.%016" PRIx64 "%016" PRIx64 ".tmp", s->dir,
			 et_random64(), et_random64());
	tofile(tmp, buf, s->size);
	SYS(rename(tmp, final));
	return 1;
}

static void *populate_worker(void *arg, unsigned int tid)
{
	struct sglang *s = arg;
	uint8_t *buf = et_alloc(s->size);
	uint64_t i;

	for (i = tid; i < s->pages; i += s->threads)
		ET_CHECK(store_page(s, s->names[i], i, (unsigned int)(i % 3), buf) == 1,
			 "page %" PRIu64 " existed before its store", i);
	free(buf);
	return NULL;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * os.scandir over the whole directory: every page listed exactly once as a
 * regular file, no temp file, nothing else; returns how many were listed.
 */
static unsigned int scandir_check(const struct sglang *s, const char *dir,
				  unsigned int expect, uint8_t *seen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	ET_CHECK(d, "opendir %s: %s", dir, et_errno_name(errno));
	memset(seen, 0, s->pages);
	while ((errno = 0, e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, ".maru") == 0)
			continue;
		char (*hit)[NAME_MAX_LEN] = bsearch(e->d_name, s->sorted, s->pages,
						    NAME_MAX_LEN, name_cmp);

		ET_CHECK(hit, "%s lists an unexpected entry '%s'", dir, e->d_name);
		ET_CHECK(e->d_type == DT_REG, "%s: d_type %d", e->d_name, e->d_type);
		ET_CHECK(!seen[hit - s->sorted], "%s listed twice", e->d_name);
		seen[hit - s->sorted] = 1;
		n++;
	}
	ET_CHECK(errno == 0, "readdir %s: %s", dir, et_errno_name(errno));
	closedir(d);
	ET_CHECK(n == expect, "%s lists %u pages, expected %u", dir, n, expect);
	return n;
}

/* Load page i: one read of the page length (readinto), or read to EOF. */
static void load_page(const struct sglang *s, uint64_t i, uint8_t *buf)
{
	char p[4200];
	int fd;
	ssize_t n, more;

	snprintf(p, sizeof(p), "%s/%s", s->dir, s->names[i]);
	fd = SYS(open(p, O_RDONLY | O_CLOEXEC));
	n = SYS(read(fd, buf, s->size + 1));
	ET_CHECK((size_t)n == s->size, "readinto %s: %zd of %zu bytes", p, n, s->size);
	if (i % 3 == 0) {
		more = SYS(read(fd, buf + s->size, 1));
		ET_CHECK(more == 0, "%s: bytes after the page", p);
	}
	SYS(close(fd));
	et_verify(buf, s->size, i, p);
}

static void *load_worker(void *arg, unsigned int tid)
{
	struct sglang *s = arg;
	uint8_t *buf = et_alloc(s->size + 1);
	uint64_t i;

	for (i = tid; i < s->pages; i += s->threads)
		load_page(s, i, buf);
	free(buf);
	return NULL;
}

/* Batch exists of pages that are there and of pages never written. */
static void exists_check(const struct sglang *s)
{
	char name[NAME_MAX_LEN], p[4200];
	struct stat st;
	uint64_t i;

	for (i = 0; i < 256; i++) {
		page_name(s->pages + 1000 + i, name);
		ET_CHECK(!bsearch(name, s->sorted, s->pages, NAME_MAX_LEN, name_cmp),
			 "hash collision");
		snprintf(p, sizeof(p), "%s/%s", s->dir, name);
		FAILS_WITH(stat(p, &st), ENOENT);
		snprintf(p, sizeof(p), "%s/%s", s->dir, s->names[i % s->pages]);
		SYS(stat(p, &st));
		ET_CHECK((size_t)st.st_size == s->size, "%s: size %jd", p, (intmax_t)st.st_size);
	}
}

struct race {
	struct sglang *s;
	char name[NAME_MAX_LEN];
};

static void *race_worker(void *arg, unsigned int tid)
{
	struct race *r = arg;
	uint8_t *buf = et_alloc(r->s->size);

	store_page(r->s, r->name, r->s->pages, tid % 3, buf);
	free(buf);
	return NULL;
}

/* Eight writers of one new page at once, all three generations mixed. */
static void race_one_page(struct sglang *s)
{
	struct race r = { .s = s };
	uint8_t *buf = et_alloc(s->size + 1);
	char p[4200];
	int fd;

	page_name(s->pages, r.name);
	et_run_threads(8, race_worker, &r);
	snprintf(p, sizeof(p), "%s/%s", s->dir, r.name);
	fd = SYS(open(p, O_RDONLY));
	ET_CHECK(SYS(read(fd, buf, s->size + 1)) == (ssize_t)s->size, "raced page size");
	SYS(close(fd));
	et_verify(buf, s->size, s->pages, "page stored by 8 racing writers");
	SYS(unlink(p));
	free(buf);
}

struct entry {
	char name[NAME_MAX_LEN];
	struct timespec mtime;
	off_t size;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* os.listdir + os.stat of each entry, as the evictor and clear() start. */
static struct entry *list_and_stat(const struct sglang *s, unsigned int *count)
{
	struct entry *v = calloc(s->pages + 1, sizeof(*v));
	DIR *d = opendir(s->dir);
	struct dirent *e;
	struct stat st;
	char p[4200];
	unsigned int n = 0;

	ET_CHECK(v && d, "listdir %s: %s", s->dir, et_errno_name(errno));
	while ((errno = 0, e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..") ||
					    !strcmp(e->d_name, ".maru")))
			continue;
		ET_CHECK(n < s->pages && strlen(e->d_name) < NAME_MAX_LEN,
			 "listdir: unexpected entry %s", e->d_name);
		snprintf(p, sizeof(p), "%s/%s", s->dir, e->d_name);
		SYS(stat(p, &st));
		memcpy(v[n].name, e->d_name, strlen(e->d_name) + 1);
		v[n].mtime = st.st_mtim;
		v[n].size = st.st_size;
		n++;
	}
	ET_CHECK(errno == 0, "readdir %s: %s", s->dir, et_errno_name(errno));
	closedir(d);
	*count = n;
	return v;
}

/* The statvfs the evictor reads: marufs-design(7) §4.1's bsize, bfree, bavail. */
static void statvfs_check(const struct sglang *s)
{
	struct statvfs vfs;

	SYS(statvfs(s->dir, &vfs));
	ET_CHECK(vfs.f_bsize == 4096, "statvfs bsize %lu", vfs.f_bsize);
	ET_CHECK(vfs.f_blocks > 0 && vfs.f_bfree <= vfs.f_blocks &&
		 vfs.f_bavail >= vfs.f_bfree && vfs.f_bavail <= vfs.f_blocks,
		 "statvfs blocks %lu bfree %lu bavail %lu", (unsigned long)vfs.f_blocks,
		 (unsigned long)vfs.f_bfree, (unsigned long)vfs.f_bavail);
}

/* Remove the oldest pages until the total is under half of what it was. */
static void evict_lru(struct sglang *s, uint8_t *seen)
{
	unsigned int n, i, removed = 0;
	struct entry *v = list_and_stat(s, &n);
	off_t total = 0, limit;
	struct stat st;
	char p[4200];

	ET_CHECK(n == s->pages, "evictor listed %u pages, expected %u", n, s->pages);
	for (i = 0; i < n; i++)
		total += v[i].size;
	ET_CHECK(total == (off_t)s->size * n, "evictor sums %jd bytes", (intmax_t)total);
	statvfs_check(s);
	qsort(v, n, sizeof(*v), entry_cmp);
	for (limit = total / 2, i = 0; total > limit; i++, removed++) {
		snprintf(p, sizeof(p), "%s/%s", s->dir, v[i].name);
		SYS(unlink(p));
		total -= v[i].size;
	}
	for (i = 0; i < removed; i++) {
		snprintf(p, sizeof(p), "%s/%s", s->dir, v[i].name);
		FAILS_WITH(stat(p, &st), ENOENT);
	}
	scandir_check(s, s->dir, s->pages - removed, seen);
	for (i = 0; i < removed; i++)
		ET_CHECK(!seen[(char (*)[NAME_MAX_LEN])bsearch(v[i].name, s->sorted, s->pages,
				NAME_MAX_LEN, name_cmp) - s->sorted], "evicted %s still listed", v[i].name);
	statvfs_check(s);
	printf("evictor removed the %u oldest pages\n", removed);
	free(v);
}

/* clear(): list everything and remove it; the directory is then empty. */
static void clear_all(struct sglang *s, uint8_t *seen)
{
	unsigned int n, i;
	struct entry *v = list_and_stat(s, &n);
	char p[4200];

	for (i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", s->dir, v[i].name);
		SYS(unlink(p));
	}
	scandir_check(s, s->dir, 0, seen);
	if (s->other)
		scandir_check(s, s->other, 0, seen);
	printf("clear() removed %u pages\n", n);
	free(v);
}

static void run(struct sglang *s)
{
	uint8_t *seen = malloc(s->pages);
	uint64_t t0 = et_mono_ms();

	ET_CHECK(seen, "out of memory");
	et_run_threads(s->threads, populate_worker, s);
	printf("stored %u pages of %zu bytes with %u threads in %" PRIu64 " ms\n",
	       s->pages, s->size, s->threads, et_mono_ms() - t0);
	t0 = et_mono_ms();
	scandir_check(s, s->dir, s->pages, seen);
	printf("scandir of %u entries in %" PRIu64 " ms\n", s->pages, et_mono_ms() - t0);
	if (s->other) {
		t0 = et_mono_ms();
		scandir_check(s, s->other, s->pages, seen);
		printf("scandir through the other mount in %" PRIu64 " ms\n", et_mono_ms() - t0);
	}
	exists_check(s);
	t0 = et_mono_ms();
	et_run_threads(s->threads, load_worker, s);
	printf("loaded %u pages in %" PRIu64 " ms, every byte checked\n", s->pages,
	       et_mono_ms() - t0);
	race_one_page(s);
	scandir_check(s, s->dir, s->pages, seen);
	evict_lru(s, seen);
	clear_all(s, seen);
	free(seen);
}

int main(int argc, char **argv)
{
	struct sglang s = { .pages = 200000, .threads = 4, .size = 1024 };
	unsigned int i;
	int opt;

	while ((opt = getopt(argc, argv, "n:s:t:")) != -1) {
		if (opt == 'n')
			s.pages = (unsigned int)et_num(optarg, "page count");
		else if (opt == 's')
			s.size = et_num(optarg, "page size");
		else if (opt == 't')
			s.threads = (unsigned int)et_num(optarg, "thread count");
		else
			return 2;
	}
	if (argc - optind < 1 || argc - optind > 2) {
		fprintf(stderr, "usage: engine_sglang [-n PAGES] [-s BYTES] [-t THREADS] DIR [OTHER]\n");
		return 2;
	}
	s.dir = argv[optind];
	s.other = argc - optind == 2 ? argv[optind + 1] : NULL;
	s.names = calloc(s.pages, NAME_MAX_LEN);
	s.sorted = calloc(s.pages, NAME_MAX_LEN);
	ET_CHECK(s.names && s.sorted, "out of memory");
	for (i = 0; i < s.pages; i++)
		page_name(i, s.names[i]);
	memcpy(s.sorted, s.names, (size_t)s.pages * NAME_MAX_LEN);
	qsort(s.sorted, s.pages, NAME_MAX_LEN, name_cmp);
	run(&s);
	free(s.names);
	free(s.sorted);
	printf("OK\n");
	return 0;
}
