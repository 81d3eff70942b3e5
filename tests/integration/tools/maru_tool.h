/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_tool.h: what the libmaru integration tools
 * share: CHECK/OK assertions that name the failing line and exit 1, a client
 * constructor honouring MARU_DATA=auto|shm|tcp, MARU_COHERENCE=flush and
 * MARU_KEY_FILE, deterministic chunk contents, and store/load helpers. Header-only so each tool stays one
 * source file in the meson dict.
 */
#ifndef MARU_TOOL_H
#define MARU_TOOL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <maru/libmaru.h>

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: check failed: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		exit(1);						\
	}								\
} while (0)

/* Evaluate a libmaru call; fail the tool on a negative result. */
#define OK(expr) ({							\
	long _r = (long)(expr);						\
	if (_r < 0) {							\
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,	\
			#expr, maru_strerror((int)_r));			\
		exit(1);						\
	}								\
	_r;								\
})

/* The call must fail with exactly -err. */
#define FAILS(expr, err) do {						\
	long _r = (long)(expr);						\
	if (_r != -(long)(err)) {					\
		fprintf(stderr, "%s:%d: %s returned %ld (%s), expected -%s\n", \
			__FILE__, __LINE__, #expr, _r,			\
			_r < 0 ? maru_strerror((int)_r) : "ok", #err);	\
		exit(1);						\
	}								\
} while (0)

static inline uint64_t tool_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A counter from marud's stats text (maru_stats_text); exits if absent. */
static inline uint64_t tool_metric(struct maru_client *c, const char *name)
{
	static char buf[256 * 1024];
	size_t n = strlen(name);
	char *p;

	OK(maru_stats_text(c, buf, sizeof(buf)));
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	fprintf(stderr, "metric %s missing\n", name);
	exit(1);
}

static inline enum maru_data_path tool_data_path(void)
{
	const char *s = getenv("MARU_DATA");

	if (!s || !strcmp(s, "auto"))
		return MARU_DATA_AUTO;
	if (!strcmp(s, "shm"))
		return MARU_DATA_SHM;
	if (!strcmp(s, "tcp"))
		return MARU_DATA_TCP;
	if (!strcmp(s, "rdma"))
		return MARU_DATA_RDMA;
	fprintf(stderr, "MARU_DATA must be auto, shm, tcp or rdma\n");
	exit(2);
}

static inline struct maru_client *tool_client_dp(const char *uri, enum maru_data_path dp)
{
	struct maru_client_opts o;
	struct maru_client *c;

	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.data_path = dp;
	o.client_name = "maru-it";
	o.key_file = getenv("MARU_KEY_FILE");
	if (getenv("MARU_COHERENCE") && !strcmp(getenv("MARU_COHERENCE"), "flush"))
		o.coherence = MARU_COHERENCE_FLUSH;
	OK(maru_client_new(&o, &c));
	return c;
}

static inline struct maru_client *tool_client(const char *uri)
{
	return tool_client_dp(uri, tool_data_path());
}

/* Deterministic bytes for (seed, offset): any slice can be checked alone. */
static inline void tool_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t x = (seed + off + i) * 0x9e3779b97f4a7c15ull;

		p[i] = (uint8_t)(x >> 56);
	}
}

static inline int tool_check_fill(const uint8_t *p, size_t len, uint64_t seed, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t x = (seed + off + i) * 0x9e3779b97f4a7c15ull;

		if (p[i] != (uint8_t)(x >> 56))
			return 0;
	}
	return 1;
}

/* Create, write and publish parent/name; returns 0 or -errno. */
static inline int tool_store(struct maru_client *c, uint64_t parent, const char *name,
			     const void *data, size_t len)
{
	struct maru_file *f;
	ssize_t n;
	int rc;

	rc = maru_file_create(c, parent, name, 0644, 0, 0, 0, 0, &f);
	if (rc)
		return rc;
	n = len ? maru_file_pwrite(f, data, len, 0) : 0;
	rc = n < 0 ? (int)n : (size_t)n != len ? -EIO : maru_file_publish(f);
	maru_file_close(f);
	return rc;
}

/* Lease parent/name and read it whole into a malloc'd buffer. */
static inline int tool_load(struct maru_client *c, uint64_t parent, const char *name,
			    uint8_t **out, size_t *len)
{
	struct maru_attr a;
	struct maru_file *f;
	uint8_t *buf;
	ssize_t n;
	int rc;

	rc = maru_file_open(c, parent, name, &f);
	if (rc)
		return rc;
	rc = maru_file_attr(f, &a);
	buf = rc ? NULL : malloc(a.size + 1);
	n = buf ? maru_file_pread(f, buf, a.size + 1, 0) : (rc ? rc : -ENOMEM);
	maru_file_close(f);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	if ((uint64_t)n != a.size) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*len = (size_t)n;
	return 0;
}

#endif
