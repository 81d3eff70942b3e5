/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/engine_lmcache.c: the calls of LMCache's `fs`
 * remote connector (remote_url fs://localhost:0/<dir>, or the `fs` storage
 * plugin / L2 adapter with base_path <dir>), as the engine's own sources (late 2026)
 * record them: one flat directory of `<key, / as -SEP->.data`; a put
 * writes `<name>.tmp` BESIDE the target, the SAME temp name for every
 * concurrent writer of a key, opened O_WRONLY|O_CREAT|O_TRUNC (aiofiles
 * "wb"), a 28-byte header then the payload, close, os.replace; a get is
 * stat (exists) + one readinto of the whole file; list is glob("*.data");
 * remove is os.remove. No locks, no fsync. The key is illustrative (engines.md
 * gives only that keys hold '@' and '%'); the header is the tool's own
 * 28 bytes (magic, writer seed, payload length, XXH3 of the payload), so a
 * reader can tell one writer's complete bytes from a torn or mixed file.
 *
 * usage: engine_lmcache one [-w WRITERS] [-r ROUNDS] [-s BYTES] DIR
 *        engine_lmcache two [-w WRITERS] [-r ROUNDS] [-s BYTES] DIR_A DIR_B DIR_C
 * one: WRITERS threads race to put each key with the same bytes (what an
 * engine writes for one key) on one mount; the result must be what a local
 * filesystem gives: every rename succeeds or fails with ENOENT (another
 * writer moved the shared temp), the key ends whole, no temp is left. Also a
 * scripted interleaving shows the writers share one file, as on ext4.
 * two: half the writers on mount A with one payload, half on mount B with
 * another, while a reader on mount C opens the key and the temp name: it may
 * find nothing (ENOENT) or one writer's complete bytes, never a mix or a
 * partial file; afterwards all three mounts see the same whole bytes and no
 * temp, within LATE_MS_MAX on a mount whose acknowledgement was late (the
 * longest wait is printed). Exit 0 only when every check passed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>

#include "engine_tool.h"

#define HDR 28u
#define MAGIC 0x4c4d4331u	/* "LMC1" */

struct lmc {
	const char *dirs[3];
	unsigned int writers, rounds, mounts;
	size_t size;		/* payload bytes */
	atomic_uint round;
	atomic_int stop;
	atomic_uint renamed, enoent, observed;
	uint64_t late_ms;	/* longest wait for another mount to see a rename */
};

/*
 * How long another mount may take to see a rename: marud waits at most
 * --ack-timeout-ms (50 ms) for each mount's acknowledgement of a rename,
 * then stops waiting for a mount that is late (marud(8),
 * ACKNOWLEDGEMENTS); on a loaded machine a mount's event comes a few
 * hundred ms after that (seen: 296 ms). A stale entry past this bound fails.
 */
#define LATE_MS_MAX	3000

static void key_name(unsigned int round, char *out, size_t outsz)
{
	char h[65];

	et_hash_hex(h, 32, 0x6c6d63, round);
	/* key vllm@meta-llama/Llama-3.1-8B-Instruct@1@0@<hash>@bfloat16%0 */
	snprintf(out, outsz, "vllm@meta-llama-SEP-Llama-3.1-8B-Instruct@1@0@%s@bfloat16%%0.data", h);
}

/* Header + payload of the writer with seed `seed`. */
static void make_object(uint8_t *buf, size_t size, uint64_t seed)
{
	uint32_t magic = MAGIC;
	uint64_t len = size, sum;

	et_fill(buf + HDR, size, seed);
	sum = XXH3_64bits(buf + HDR, size);
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &seed, 8);
	memcpy(buf + 12, &len, 8);
	memcpy(buf + 20, &sum, 8);
}

/* 0 when buf[0..n) is one writer's complete object (its seed in *seed). */
static const char *object_check(const uint8_t *buf, size_t n, size_t size, uint64_t *seed)
{
	uint32_t magic;
	uint64_t len, sum;

	if (n != HDR + size)
		return "partial (wrong size)";
	memcpy(&magic, buf, 4);
	memcpy(seed, buf + 4, 8);
	memcpy(&len, buf + 12, 8);
	memcpy(&sum, buf + 20, 8);
	if (magic != MAGIC || len != size)
		return "torn header";
	if (XXH3_64bits(buf + HDR, size) != sum)
		return "payload mixed or torn";
	return NULL;
}

/* An LMCache put: shared temp beside the target, header, payload, replace. */
static int put(const char *dir, const char *name, const uint8_t *obj, size_t size)
{
	char final[4200], tmp[4300];
	int fd;

	snprintf(final, sizeof(final), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	fd = SYS(open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	ET_CHECK(SYS(write(fd, obj, HDR)) == HDR, "short header write to %s", tmp);
	ET_CHECK((size_t)SYS(write(fd, obj + HDR, size)) == size, "short payload write to %s", tmp);
	SYS(close(fd));
	if (rename(tmp, final) == 0)
		return 0;
	ET_CHECK(errno == ENOENT, "os.replace %s: %s", tmp, et_errno_name(errno));
	return -ENOENT;
}

/*
 * An LMCache get: exists, then one readinto. Returns the bytes read, or
 * -ENOENT when the name is missing.
 */
static ssize_t get(const char *path, uint8_t *buf, size_t cap)
{
	struct stat st;
	int fd;
	ssize_t n;

	if (stat(path, &st) < 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		ET_CHECK(errno == ENOENT, "get %s: %s", path, et_errno_name(errno));
		return -ENOENT;
	}
	n = SYS(read(fd, buf, cap));
	SYS(close(fd));
	return n;
}

/* The key of `round` on dirs[m] must be whole with seed want (or any if ~0). */
static uint64_t expect_whole(struct lmc *l, unsigned int m, unsigned int round,
			     uint8_t *buf, uint64_t want)
{
	char name[256], p[4400];
	const char *why;
	uint64_t seed = 0;
	ssize_t n;

	uint64_t t0 = et_mono_ms(), waited;

	key_name(round, name, sizeof(name));
	snprintf(p, sizeof(p), "%s/%s", l->dirs[m], name);
	while ((n = get(p, buf, HDR + l->size + 1)) < 0 && et_mono_ms() - t0 < LATE_MS_MAX)
		usleep(5000);
	ET_CHECK(n >= 0, "round %u: %s missing after the race (%d ms)", round, p, LATE_MS_MAX);
	why = object_check(buf, (size_t)n, l->size, &seed);
	ET_CHECK(!why, "round %u: %s is %s", round, p, why);
	ET_CHECK(want == ~0ULL || seed == want, "round %u: %s holds writer %" PRIu64
		 ", expected %" PRIu64, round, p, seed, want);
	snprintf(p, sizeof(p), "%s/%s.tmp", l->dirs[m], name);
	while (access(p, F_OK) == 0 && et_mono_ms() - t0 < LATE_MS_MAX)
		usleep(5000);
	FAILS_WITH(access(p, F_OK), ENOENT);
	waited = et_mono_ms() - t0;
	if (waited > l->late_ms)
		l->late_ms = waited;
	return seed;
}

static void *writer(void *arg, unsigned int tid)
{
	struct lmc *l = arg;
	unsigned int m = l->mounts == 1 ? 0 : tid % 2;
	uint8_t *obj = et_alloc(HDR + l->size);
	char name[256];

	key_name(l->round, name, sizeof(name));
	make_object(obj, l->size, (uint64_t)l->round * 8 + m);
	if (put(l->dirs[m], name, obj, l->size) == 0)
		atomic_fetch_add(&l->renamed, 1);
	else
		atomic_fetch_add(&l->enoent, 1);
	free(obj);
	return NULL;
}

/* Mount C during the race: the key and the temp are absent or whole. */
static void *observer(void *arg)
{
	struct lmc *l = arg;
	uint8_t *buf = et_alloc(HDR + l->size + 1);
	char name[256], p[4400];
	const char *why;
	uint64_t seed;
	ssize_t n;

	while (!atomic_load(&l->stop)) {
		unsigned int round = atomic_load(&l->round);

		key_name(round, name, sizeof(name));
		for (int t = 0; t < 2; t++) {
			snprintf(p, sizeof(p), "%s/%s%s", l->dirs[2], name, t ? ".tmp" : "");
			n = get(p, buf, HDR + l->size + 1);
			if (n < 0)
				continue;
			why = object_check(buf, (size_t)n, l->size, &seed);
			ET_CHECK(!why, "round %u: mount C read %s: %s", round, p, why);
			ET_CHECK(seed / 8 == round, "round %u: mount C read %s of round %" PRIu64,
				 round, p, seed / 8);
			atomic_fetch_add(&l->observed, 1);
		}
	}
	free(buf);
	return NULL;
}

/*
 * One mount, scripted: B's truncating open of the shared temp lands while
 * A holds it, A closes and renames it, then B writes and renames. As on a
 * local filesystem the two share one file: the key ends with B's complete
 * bytes and B's rename finds the temp gone (ENOENT).
 */
static void shared_temp(struct lmc *l)
{
	uint8_t *a = et_alloc(HDR + l->size), *b = et_alloc(HDR + l->size);
	char name[256], final[4300], tmp[4400];
	uint64_t t0;
	int fa, fb;

	key_name(l->rounds, name, sizeof(name));
	snprintf(final, sizeof(final), "%s/%s", l->dirs[0], name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	make_object(a, l->size, (uint64_t)l->rounds * 8);
	make_object(b, l->size, (uint64_t)l->rounds * 8 + 1);
	fa = SYS(open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	ET_CHECK((size_t)SYS(write(fa, a, HDR + l->size)) == HDR + l->size, "A's write");
	fb = SYS(open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	SYS(close(fa));
	t0 = et_mono_ms();
	SYS(rename(tmp, final));
	printf("rename of the temp B still writes: %" PRIu64 " ms\n", et_mono_ms() - t0);
	ET_CHECK((size_t)SYS(write(fb, b, HDR + l->size)) == HDR + l->size, "B's write");
	SYS(close(fb));
	FAILS_WITH(rename(tmp, final), ENOENT);
	l->round = l->rounds;
	expect_whole(l, 0, l->rounds, a, (uint64_t)l->rounds * 8 + 1);
	SYS(unlink(final));
	free(a);
	free(b);
}

/* Every round: all writers race on a new key; then the key must be whole. */
static void race(struct lmc *l)
{
	uint8_t *buf = et_alloc(HDR + l->size + 1);
	pthread_t obs;
	unsigned int r, m;
	uint64_t seed;

	if (l->mounts == 3)
		ET_CHECK(pthread_create(&obs, NULL, observer, l) == 0, "pthread_create");
	for (r = 0; r < l->rounds; r++) {
		atomic_store(&l->round, r);
		et_run_threads(l->writers, writer, l);
		seed = expect_whole(l, 0, r, buf, l->mounts == 1 ? (uint64_t)r * 8 : ~0ULL);
		for (m = 1; m < l->mounts; m++)
			expect_whole(l, m, r, buf, seed);
	}
	atomic_store(&l->stop, 1);
	if (l->mounts == 3)
		pthread_join(obs, NULL);
	ET_CHECK(l->renamed >= l->rounds, "only %u renames succeeded in %u rounds",
		 l->renamed, l->rounds);
	printf("%u rounds of %u writers on %u mount(s): %u renames, %u ENOENT (temp "
	       "already moved)\n", l->rounds, l->writers, l->mounts == 1 ? 1 : 2,
	       l->renamed, l->enoent);
	if (l->mounts == 3)
		printf("mount C read the key or its temp whole %u times, never torn\n",
		       l->observed);
	printf("longest wait for a mount to see the round's key and no temp: %" PRIu64 " ms\n",
	       l->late_ms);
	free(buf);
}

/* glob("*.data") finds every key once; os.remove of each; then empty. */
static void list_remove(struct lmc *l)
{
	DIR *d = opendir(l->dirs[0]);
	struct dirent *e;
	unsigned int data = 0, other = 0;
	char p[4400];
	size_t n;

	ET_CHECK(d, "opendir %s: %s", l->dirs[0], et_errno_name(errno));
	while ((e = readdir(d)) != NULL) {
		n = strlen(e->d_name);
		if (n > 5 && strcmp(e->d_name + n - 5, ".data") == 0) {
			snprintf(p, sizeof(p), "%s/%s", l->dirs[0], e->d_name);
			SYS(unlink(p));
			FAILS_WITH(unlink(p), ENOENT);
			data++;
		} else if (e->d_name[0] != '.') {
			fprintf(stderr, "unexpected entry %s\n", e->d_name);
			other++;
		}
	}
	closedir(d);
	ET_CHECK(data == l->rounds && other == 0, "glob found %u keys (expected %u), %u others",
		 data, l->rounds, other);
}

int main(int argc, char **argv)
{
	struct lmc l = { .writers = 8, .rounds = 40, .size = 2u << 20 };
	const char *mode = argc > 1 ? argv[1] : "";
	int opt;

	optind = 2;
	while ((opt = getopt(argc, argv, "w:r:s:")) != -1) {
		if (opt == 'w')
			l.writers = (unsigned int)et_num(optarg, "writer count");
		else if (opt == 'r')
			l.rounds = (unsigned int)et_num(optarg, "round count");
		else if (opt == 's')
			l.size = et_num(optarg, "payload size");
		else
			return 2;
	}
	l.mounts = strcmp(mode, "one") == 0 ? 1 : strcmp(mode, "two") == 0 ? 3 : 0;
	if (!l.mounts || argc - optind != (int)l.mounts) {
		fprintf(stderr, "usage: engine_lmcache one|two [-w N] [-r N] [-s BYTES] DIR [DIR_B DIR_C]\n");
		return 2;
	}
	for (unsigned int m = 0; m < l.mounts; m++)
		l.dirs[m] = argv[optind + m];
	if (l.mounts == 1)
		shared_temp(&l);
	race(&l);
	list_remove(&l);
	printf("OK\n");
	return 0;
}
