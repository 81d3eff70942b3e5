/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/engine_vllm.c: the calls vLLM's OffloadingConnector
 * makes on the root_dir of an `fs` secondary tier (TieringOffloadingSpec;
 * older releases name the tier type `fs_python`), as the engine's own sources (late 2026)
 * record them: an O_DIRECT probe file `.o_direct_probe_<n>.tmp` written and
 * removed; `config.json` once per run config; blocks named
 * `<root>/<model, / as _>_<12 hex>_r<rank>/<h[0:3]>/<h[3:5]>_g<group>/<h>.bin`;
 * a store skipped when access(F_OK) finds the block, else mkdir -p, open
 * `<final>_<random per thread>.tmp` O_CREAT|O_EXCL|O_WRONLY|O_TRUNC
 * (+O_DIRECT), ONE write of the block, close, rename onto the final name;
 * a load of ONE readv of the whole block, a short read deleting the file.
 * 32 I/O threads. Every byte read is checked, and every failure the engine
 * expects (ENOENT of a miss, EEXIST of a taken temp name) by its errno.
 *
 * usage: engine_vllm [-B] [-b BLOCKS] [-s BLOCK_BYTES] [-t THREADS]
 *                    ROOT [OTHER_ROOT]
 * -B: buffered (what vLLM does when the probe fails). OTHER_ROOT: the same
 * directory seen through another mount, where every block is looked up and
 * loaded again, byte-exact. Exit 0 only when every check passed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/uio.h>

#include "engine_tool.h"

#define MODEL "meta-llama_Llama-3.1-8B-Instruct"
#define HASH_BYTES 32

struct vllm {
	char base[4096];	/* <root>/<model>_<digest> */
	const char *other;	/* OTHER_ROOT or NULL */
	const char *root;
	unsigned int blocks, threads;
	size_t bs;
	int odirect;		/* O_DIRECT or 0, from the probe */
	uint8_t **bufs;		/* per-thread aligned block buffer */
};

static void block_path(const struct vllm *v, const char *root, uint64_t i,
		       char *out, size_t outsz)
{
	char h[2 * HASH_BYTES + 1];
	int n;

	et_hash_hex(h, HASH_BYTES, 0x766c6c6d, i);
	n = snprintf(out, outsz, "%s%s_r0/%.3s/%.2s_g0/%s.bin", root,
		     v->base + strlen(v->root), h, h + 3, h);
	ET_CHECK(n > 0 && (size_t)n < outsz, "path too long");
}

/* vLLM's probe: a small O_DIRECT file written and removed at start. */
static int odirect_probe(const char *root)
{
	char p[4096];
	uint8_t *buf = et_alloc(4096);
	int fd, ok = 0;

	snprintf(p, sizeof(p), "%s/.o_direct_probe_%" PRIu64 ".tmp", root,
		 et_random64() >> 1);
	et_fill(buf, 4096, 1);
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_TRUNC | O_DIRECT, 0644);
	if (fd >= 0) {
		ok = write(fd, buf, 4096) == 4096;
		if (!ok)
			ET_CHECK(errno == EINVAL, "probe write: %s", et_errno_name(errno));
		SYS(close(fd));
		SYS(unlink(p));
	} else {
		ET_CHECK(errno == EINVAL, "probe open: %s", et_errno_name(errno));
	}
	FAILS_WITH(access(p, F_OK), ENOENT);
	free(buf);
	return ok ? O_DIRECT : 0;
}

static __thread char tmp_suffix[32];	/* vLLM: one random suffix per thread */

/* Store one block the way vLLM does; 1 when written, 0 when skipped. */
static int store_block(const struct vllm *v, const char *dest, const uint8_t *buf)
{
	char tmp[4200], dir[4096];
	int fd;
	ssize_t n;

	if (access(dest, F_OK) == 0)
		return 0;
	ET_CHECK(errno == ENOENT, "access %s: %s", dest, et_errno_name(errno));
	if (!tmp_suffix[0])
		snprintf(tmp_suffix, sizeof(tmp_suffix), "_%" PRIu64 ".tmp",
			 et_random64() >> 1);
	snprintf(tmp, sizeof(tmp), "%s%s", dest, tmp_suffix);
	snprintf(dir, sizeof(dir), "%s", dest);
	*strrchr(dir, '/') = '\0';
	et_mkdirs(dir);
	fd = SYS(open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_TRUNC | v->odirect, 0644));
	n = SYS(write(fd, buf, v->bs));
	ET_CHECK((size_t)n == v->bs, "short write %zd of %zu to %s", n, v->bs, tmp);
	SYS(close(fd));
	SYS(rename(tmp, dest));
	return 1;
}

/* Load one block: one readv; a short read unlinks it (vLLM's recovery). */
static ssize_t load_block(const struct vllm *v, const char *src, uint8_t *buf,
			  size_t want)
{
	struct iovec iov = { buf, want };
	int fd = open(src, O_RDONLY | v->odirect);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = readv(fd, &iov, 1);
	SYS(close(fd));
	ET_CHECK(n >= 0, "readv %s: %s", src, et_errno_name(errno));
	if ((size_t)n < want)
		SYS(unlink(src));
	return n;
}

static void *store_worker(void *arg, unsigned int tid)
{
	struct vllm *v = arg;
	char p[4096];
	uint64_t i;

	for (i = tid; i < v->blocks; i += v->threads) {
		block_path(v, v->root, i, p, sizeof(p));
		et_fill(v->bufs[tid], v->bs, i);
		ET_CHECK(store_block(v, p, v->bufs[tid]) == 1, "block %" PRIu64
			 " existed before its store", i);
	}
	return NULL;
}

struct load_job {
	struct vllm *v;
	const char *root;
};

static void *load_worker(void *arg, unsigned int tid)
{
	struct load_job *j = arg;
	struct vllm *v = j->v;
	char p[4096];
	uint64_t i;

	for (i = tid; i < v->blocks; i += v->threads) {
		block_path(v, j->root, i, p, sizeof(p));
		ET_CHECK(access(p, F_OK) == 0, "lookup %s: %s", p, et_errno_name(errno));
		ssize_t n = load_block(v, p, v->bufs[tid], v->bs);

		ET_CHECK(n == (ssize_t)v->bs, "load %s: %zd of %zu bytes", p, n, v->bs);
		et_verify(v->bufs[tid], v->bs, i, p);
	}
	return NULL;
}

static int tmp_seen;

static int find_tmp(const char *path, const struct stat *st, int type, struct FTW *f)
{
	size_t n = strlen(path);

	if (type == FTW_F && n > 4 && strcmp(path + n - 4, ".tmp") == 0) {
		fprintf(stderr, "left behind: %s\n", path);
		tmp_seen++;
	}
	return 0;
}

/* config.json of the run config, written once if missing, read back. */
static void config_json(struct vllm *v)
{
	static const char cfg[] = "{\n  \"model_name\": \"meta-llama/Llama-3.1-8B-Instruct\",\n"
		"  \"tokens_per_hash\": 16\n}\n";
	char p[4200], got[sizeof(cfg) + 16];
	FILE *f;

	snprintf(p, sizeof(p), "%s/config.json", v->base);
	et_mkdirs(v->base);
	FAILS_WITH(access(p, F_OK), ENOENT);
	ET_CHECK((f = fopen(p, "w")) != NULL, "fopen %s: %s", p, et_errno_name(errno));
	ET_CHECK(fwrite(cfg, 1, sizeof(cfg) - 1, f) == sizeof(cfg) - 1, "fwrite");
	ET_CHECK(fclose(f) == 0, "fclose %s: %s", p, et_errno_name(errno));
	ET_CHECK((f = fopen(p, "r")) != NULL, "reopen %s", p);
	ET_CHECK(fread(got, 1, sizeof(got), f) == sizeof(cfg) - 1, "config.json size");
	fclose(f);
	ET_CHECK(memcmp(got, cfg, sizeof(cfg) - 1) == 0, "config.json bytes");
}

static void *race_worker(void *arg, unsigned int tid)
{
	struct vllm *v = arg;
	char p[4096];

	block_path(v, v->root, v->blocks, p, sizeof(p));
	et_fill(v->bufs[tid], v->bs, v->blocks);
	store_block(v, p, v->bufs[tid]);	/* stored or skipped, both fine */
	return NULL;
}

/* All threads store one new block at once: renames over the final name. */
static void race_one_block(struct vllm *v)
{
	char p[4096];

	et_run_threads(v->threads, race_worker, v);
	block_path(v, v->root, v->blocks, p, sizeof(p));
	ET_CHECK(load_block(v, p, v->bufs[0], v->bs) == (ssize_t)v->bs, "raced block size");
	et_verify(v->bufs[0], v->bs, v->blocks, "block stored by racing threads");
}

/* Temp names are O_EXCL: a second exclusive create fails with EEXIST. */
static void excl_tmp(struct vllm *v)
{
	char p[4096], tmp[4200];
	int fd;

	block_path(v, v->root, 0, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s_%d.tmp", p, 42);
	fd = SYS(open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_TRUNC | v->odirect, 0644));
	FAILS_WITH(open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_TRUNC | v->odirect, 0644), EEXIST);
	SYS(close(fd));
	FAILS_WITH(open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_TRUNC | v->odirect, 0644), EEXIST);
	SYS(unlink(tmp));
}

/* Skip of an existing block, unlink under a reader, short read, miss. */
static void edge_cases(struct vllm *v)
{
	char p[4096];
	struct stat a, b;
	struct iovec iov = { v->bufs[0], v->bs };
	int fd;

	block_path(v, v->root, 0, p, sizeof(p));
	SYS(stat(p, &a));
	ET_CHECK(store_block(v, p, v->bufs[0]) == 0, "store of an existing block not skipped");
	SYS(stat(p, &b));
	ET_CHECK(a.st_ino == b.st_ino, "skipped store changed the inode");

	block_path(v, v->root, 1, p, sizeof(p));
	fd = SYS(open(p, O_RDONLY | v->odirect));
	SYS(unlink(p));
	FAILS_WITH(access(p, F_OK), ENOENT);
	ET_CHECK(readv(fd, &iov, 1) == (ssize_t)v->bs, "reader after unlink: short");
	SYS(close(fd));
	et_verify(v->bufs[0], v->bs, 1, "open reader after unlink");
	ET_CHECK(load_block(v, p, v->bufs[0], v->bs) == -ENOENT, "load of an evicted block");

	block_path(v, v->root, 2, p, sizeof(p));
	SYS(truncate(p, (off_t)(v->bs / 2)));
	ET_CHECK(load_block(v, p, v->bufs[0], v->bs) == (ssize_t)(v->bs / 2),
		 "short block: not short");
	et_verify(v->bufs[0], v->bs / 2, 2, "head of a short block");
	FAILS_WITH(access(p, F_OK), ENOENT);	/* vLLM deleted it */
}

static void run(struct vllm *v)
{
	struct load_job here = { v, v->root }, there = { v, v->other };
	uint64_t t0 = et_mono_ms();
	unsigned int i;

	config_json(v);
	et_run_threads(v->threads, store_worker, v);
	printf("stored %u blocks of %zu bytes with %u threads in %" PRIu64 " ms\n",
	       v->blocks, v->bs, v->threads, et_mono_ms() - t0);
	ET_CHECK(nftw(v->root, find_tmp, 16, FTW_PHYS) == 0, "nftw %s", v->root);
	ET_CHECK(tmp_seen == 0, "%d temp files left after the stores", tmp_seen);
	t0 = et_mono_ms();
	et_run_threads(v->threads, load_worker, &here);
	printf("loaded %u blocks in %" PRIu64 " ms, every byte checked\n",
	       v->blocks, et_mono_ms() - t0);
	if (v->other) {
		et_run_threads(v->threads, load_worker, &there);
		printf("loaded %u blocks again through %s\n", v->blocks, v->other);
	}
	race_one_block(v);
	excl_tmp(v);
	edge_cases(v);
	ET_CHECK(nftw(v->root, find_tmp, 16, FTW_PHYS) == 0, "nftw %s", v->root);
	ET_CHECK(tmp_seen == 0, "%d temp files left at the end", tmp_seen);
	for (i = 0; i < v->threads; i++)
		free(v->bufs[i]);
	free(v->bufs);
}

int main(int argc, char **argv)
{
	struct vllm v = { .blocks = 96, .threads = 32, .bs = 2u << 20 };
	int opt, buffered = 0;
	unsigned int i;

	while ((opt = getopt(argc, argv, "Bb:s:t:")) != -1) {
		if (opt == 'B')
			buffered = 1;
		else if (opt == 'b')
			v.blocks = (unsigned int)et_num(optarg, "block count");
		else if (opt == 's')
			v.bs = et_num(optarg, "block size");
		else if (opt == 't')
			v.threads = (unsigned int)et_num(optarg, "thread count");
		else
			return 2;
	}
	if (argc - optind < 1 || argc - optind > 2 || v.bs % 4096) {
		fprintf(stderr, "usage: engine_vllm [-B] [-b N] [-s BYTES%%4096] [-t N] ROOT [OTHER]\n");
		return 2;
	}
	v.root = argv[optind];
	v.other = argc - optind == 2 ? argv[optind + 1] : NULL;
	snprintf(v.base, sizeof(v.base), "%s/%s_%012" PRIx64, v.root, MODEL,
		 (uint64_t)(XXH3_64bits(MODEL, sizeof(MODEL)) & 0xffffffffffffULL));
	v.odirect = odirect_probe(v.root);
	printf("O_DIRECT probe: %s\n", v.odirect ? "works" : "refused with EINVAL");
	if (buffered)
		v.odirect = 0;
	v.bufs = calloc(v.threads, sizeof(*v.bufs));
	ET_CHECK(v.bufs, "out of memory");
	for (i = 0; i < v.threads; i++)
		v.bufs[i] = et_alloc(v.bs);
	run(&v);
	printf("OK\n");
	return 0;
}
