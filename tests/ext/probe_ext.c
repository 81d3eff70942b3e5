// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/ext/probe_ext.c: a region extension for tests. It records every
 * hook marud calls, one line each, in the file its config names, and can
 * be told to fail: config "log=PATH[,fail_mapped=N][,fail_hint=1]
 * [,actions=HEX][,gen=PATH]". fail_mapped: the first N mapped() calls
 * fail; fail_hint: every hint fails; gen: memory_generation() is the
 * number in that file (-EAGAIN while it is missing or empty). Lines:
 *   open | validate BACKEND | mapped FRESH RC | hint CONN ACTION REQ N OFF+LEN...
 *   wait CONN ACTION N TIMEOUT | retire OFF+LEN | closed CONN | close
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maru/marud_extension.h"

struct probe {
	pthread_mutex_t lock;
	FILE *log;
	char gen[512];
	unsigned long fail_mapped;
	int fail_hint;
};

static void line(struct probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct probe *p, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&p->lock);
	va_start(ap, fmt);
	vfprintf(p->log, fmt, ap);
	va_end(ap);
	fputc('\n', p->log);
	fflush(p->log);
	pthread_mutex_unlock(&p->lock);
}

static uint32_t actions = 0x7e;
extern struct marud_extension marud_extension __attribute__((visibility("default")));

/* One key=value of the config; the value is NUL-terminated in place. */
static int option(struct probe *p, char *kv, char *log, size_t loglen)
{
	char *eq = strchr(kv, '=');

	if (!eq)
		return -EINVAL;
	*eq++ = '\0';
	if (!strcmp(kv, "log"))
		snprintf(log, loglen, "%s", eq);
	else if (!strcmp(kv, "fail_mapped"))
		p->fail_mapped = strtoul(eq, NULL, 10);
	else if (!strcmp(kv, "fail_hint"))
		p->fail_hint = (int)strtol(eq, NULL, 10);
	else if (!strcmp(kv, "actions"))
		actions = (uint32_t)strtoul(eq, NULL, 16);
	else if (!strcmp(kv, "gen"))
		snprintf(p->gen, sizeof(p->gen), "%s", eq);
	else
		return -EINVAL;
	return 0;
}

static int p_open(const char *config, void **state)
{
	struct probe *p = calloc(1, sizeof(*p));
	char buf[1024], log[512] = "", *save = NULL, *kv;

	if (!p)
		return -ENOMEM;
	snprintf(buf, sizeof(buf), "%s", config);
	for (kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
		if (option(p, kv, log, sizeof(log))) {
			free(p);
			return -EINVAL;
		}
	p->log = fopen(log[0] ? log : "/dev/null", "a");
	if (!p->log) {
		free(p);
		return -errno;
	}
	pthread_mutex_init(&p->lock, NULL);
	marud_extension.actions = actions;	/* what HELLO advertises */
	*state = p;
	line(p, "open");
	return 0;
}

static void p_close(void *state)
{
	struct probe *p = state;

	line(p, "close");
	fclose(p->log);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static int p_validate(void *state, const struct marud_ext_region *r)
{
	line(state, "validate %u", r->backend);
	return 0;
}

static int p_mapped(void *state, const struct marud_ext_region *r, int fresh)
{
	struct probe *p = state;
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (p->fail_mapped) {
		p->fail_mapped--;
		rc = -EIO;
	}
	pthread_mutex_unlock(&p->lock);
	line(p, "mapped %d %d", fresh, rc);
	return rc;
}

static int p_hint(void *state, uint64_t conn, enum marud_ext_action a, const char *req,
		  const struct marud_ext_range *r, uint32_t n)
{
	struct probe *p = state;
	char buf[512];
	size_t len = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < n && len < sizeof(buf) - 48; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %" PRIu64 "+%" PRIu64,
					r[i].off, r[i].len);
	line(p, "hint %" PRIu64 " %d %s %u%s", conn, (int)a, req[0] ? req : "-", n, buf);
	return p->fail_hint ? -EIO : 0;
}

static int p_wait(void *state, uint64_t conn, const struct marud_ext_range *r, uint32_t n,
		  uint32_t timeout_ms)
{
	line(state, "wait %" PRIu64 " %u %u", conn, n, timeout_ms);
	return (int)n;
}

static void p_retire(void *state, const struct marud_ext_range *r)
{
	line(state, "retire %" PRIu64 "+%" PRIu64, r->off, r->len);
}

static void p_closed(void *state, uint64_t conn)
{
	line(state, "closed %" PRIu64, conn);
}

static int p_memgen(void *state, uint64_t *gen)
{
	struct probe *p = state;
	unsigned long long v;
	FILE *f;
	int ok;

	if (!p->gen[0]) {
		*gen = 1;
		return 0;
	}
	f = fopen(p->gen, "r");
	if (!f)
		return -EAGAIN;
	ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	if (!ok)
		return -EAGAIN;
	*gen = v;
	return 0;
}

struct marud_extension marud_extension = {
	.abi_version = MARUD_EXTENSION_ABI,
	.size = sizeof(struct marud_extension),
	.name = "probe",
	.open = p_open,
	.close = p_close,
	.validate_access = p_validate,
	.mapped = p_mapped,
	.hint = p_hint,
	.read_wait = p_wait,
	.write_wait = p_wait,
	.retire = p_retire,
	.connection_closed = p_closed,
	.memory_generation = p_memgen,
};
