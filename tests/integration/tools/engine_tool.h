/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/engine_tool.h: what the engine-pattern tools
 * (engine_vllm, engine_sglang, engine_nixl, engine_lmcache) share: SYS/
 * FAILS_WITH assertions that name the failing call, its line and its errno
 * and exit 1; deterministic block contents that say where a read-back first
 * differs; aligned buffers for O_DIRECT; mkdir -p that tolerates racing
 * creators; a thread pool started behind one barrier; and the hex names the
 * engines derive from their hashes. Header-only so each tool stays one
 * source file.
 */
#ifndef MARU_ENGINE_TOOL_H
#define MARU_ENGINE_TOOL_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#define ET_FAIL(...) do {						\
	fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);			\
	fprintf(stderr, __VA_ARGS__);					\
	fputc('\n', stderr);						\
	exit(1);							\
} while (0)

#define ET_CHECK(cond, ...) do {					\
	if (!(cond))							\
		ET_FAIL(__VA_ARGS__);					\
} while (0)

/* A system call that must succeed: its result, or exit 1 naming errno. */
#define SYS(expr) ({							\
	long _r = (long)(expr);						\
	if (_r < 0)							\
		ET_FAIL("%s: %s", #expr, et_errno_name(errno));		\
	_r;								\
})

/* A system call that must fail with exactly err. */
#define FAILS_WITH(expr, err) do {					\
	errno = 0;							\
	long _r = (long)(expr);						\
	if (_r != -1 || errno != (err))					\
		ET_FAIL("%s returned %ld (%s), expected %s", #expr, _r,	\
			_r == -1 ? et_errno_name(errno) : "ok", #err);	\
} while (0)

static inline const char *et_errno_name(int err)
{
	switch (err) {
	case 0: return "no error";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case EIO: return "EIO";
	case ESTALE: return "ESTALE";
	case EBUSY: return "EBUSY";
	case ENOTEMPTY: return "ENOTEMPTY";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EAGAIN: return "EAGAIN";
	case EBADF: return "EBADF";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	default: return strerror(err);
	}
}

static inline uint64_t et_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Parse a positive decimal option value or exit 2. */
static inline unsigned long et_num(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v == 0) {
		fprintf(stderr, "bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

/* The bytes of block `seed`: a cheap xorshift stream, different per seed. */
static inline void et_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
	for (; i < len; i++)
		buf[i] = (uint8_t)(x >> (8 * (i & 7)));
}

/* Exit 1 unless buf[0..len) is block `seed`, naming the first bad offset. */
static inline void et_verify(const uint8_t *buf, size_t len, uint64_t seed,
			     const char *what)
{
	uint8_t *want = malloc(len ? len : 1);
	size_t i;

	ET_CHECK(want, "out of memory");
	et_fill(want, len, seed);
	if (memcmp(buf, want, len) != 0) {
		for (i = 0; i < len && buf[i] == want[i]; i++)
			;
		ET_FAIL("%s: bytes differ from block %" PRIu64 " at offset %zu of %zu",
			what, seed, i, len);
	}
	free(want);
}

/* A 4096-aligned buffer (O_DIRECT needs the alignment), or exit 1. */
static inline uint8_t *et_alloc(size_t len)
{
	void *p = NULL;

	ET_CHECK(posix_memalign(&p, 4096, len ? len : 4096) == 0, "out of memory");
	return p;
}

/* mkdir -p (Python's makedirs(exist_ok=True)): EEXIST from a racer is fine. */
static inline void et_mkdirs(const char *path)
{
	char buf[4096];
	size_t i, n = strlen(path);

	ET_CHECK(n < sizeof(buf), "path too long: %s", path);
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			ET_FAIL("mkdir %s: %s", buf, et_errno_name(errno));
		buf[i] = path[i];
	}
}

/* 2 * nbytes hex digits of a hash of (salt, i): an engine's block hash. */
static inline void et_hash_hex(char *out, size_t nbytes, uint64_t salt, uint64_t i)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t key[3] = { salt, i, 0 };
	size_t k;

	for (k = 0; k < nbytes; k++) {
		if (k % 8 == 0) {
			key[2] = XXH3_64bits(key, sizeof(key));
		}
		uint8_t b = (uint8_t)(key[2] >> (8 * (k % 8)));

		out[2 * k] = hex[b >> 4];
		out[2 * k + 1] = hex[b & 15];
	}
	out[2 * nbytes] = '\0';
}

struct et_pool {
	pthread_barrier_t start;
	void *(*fn)(void *arg, unsigned int tid);
	void *arg;
};

struct et_thread {
	struct et_pool *pool;
	unsigned int tid;
};

static inline void *et_thread_main(void *p)
{
	struct et_thread *t = p;

	pthread_barrier_wait(&t->pool->start);
	return t->pool->fn(t->pool->arg, t->tid);
}

/* Run fn(arg, 0..n-1) on n threads released together; join them all. */
static inline void et_run_threads(unsigned int n, void *(*fn)(void *, unsigned int),
				  void *arg)
{
	struct et_pool pool = { .fn = fn, .arg = arg };
	pthread_t *th = calloc(n, sizeof(*th));
	struct et_thread *ts = calloc(n, sizeof(*ts));
	unsigned int i;

	ET_CHECK(th && ts && n > 0, "out of memory");
	ET_CHECK(pthread_barrier_init(&pool.start, NULL, n) == 0, "barrier");
	for (i = 0; i < n; i++) {
		ts[i] = (struct et_thread){ &pool, i };
		ET_CHECK(pthread_create(&th[i], NULL, et_thread_main, &ts[i]) == 0,
			 "pthread_create");
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&pool.start);
	free(ts);
	free(th);
}

/* A random 64-bit value (per-thread temp suffixes, uuids). */
static inline uint64_t et_random64(void)
{
	static __thread uint64_t x;

	if (!x)
		x = XXH3_64bits_withSeed(&x, sizeof(&x),
					 et_mono_ms() ^ ((uint64_t)getpid() << 32) ^
					 (uint64_t)(uintptr_t)&x);
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

#endif
