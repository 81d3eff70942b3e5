/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/failpoint.c: the fail points armed by MARU_FAILPOINT. The variable is
 * parsed once per process (pthread_once), into a fixed table that is never
 * written again except for the atomic hit counters, so failpoint_hit() takes
 * no lock and costs one string compare per armed point. An entry that does
 * not parse is reported once and ignored, so a typo in a test never turns
 * into a crash somewhere else.
 */
#include "config.h"

#if HAVE_FAILPOINTS

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "failpoint.h"
#include "log.h"
#include "parse.h"

#define FP_MAX		32
#define FP_NAME_MAX	64

enum fp_action { FP_ABORT, FP_EXIT, FP_SLEEP, FP_ERROR };

struct fp_entry {
	char name[FP_NAME_MAX];
	enum fp_action action;
	uint64_t arg;		/* ms for sleep, errno for error */
	uint64_t nth;		/* 0: every hit; N: only the N-th */
	uint64_t hits;
};

static struct fp_entry fp_table[FP_MAX];
static int fp_count;
static pthread_once_t fp_once = PTHREAD_ONCE_INIT;

static const struct {
	const char *name;
	int err;
} fp_errnames[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "ENOMEM", ENOMEM },
	{ "ENOENT", ENOENT }, { "EEXIST", EEXIST }, { "EAGAIN", EAGAIN },
	{ "EINTR", EINTR }, { "EPIPE", EPIPE }, { "EPROTO", EPROTO },
	{ "ECONNRESET", ECONNRESET }, { "ETIMEDOUT", ETIMEDOUT },
	{ "ESTALE", ESTALE }, { "EACCES", EACCES }, { "EINVAL", EINVAL },
};

/* "5", "-5" or "ENOSPC" -> 5; -EINVAL otherwise. */
static int fp_parse_errno(const char *s, uint64_t *out)
{
	size_t i;

	if (*s == '-')
		s++;
	if (parse_u64(s, out) == 0)
		return *out > 0 && *out < 4096 ? 0 : -EINVAL;
	for (i = 0; i < sizeof(fp_errnames) / sizeof(fp_errnames[0]); i++) {
		if (!strcmp(s, fp_errnames[i].name)) {
			*out = (uint64_t)fp_errnames[i].err;
			return 0;
		}
	}
	return -EINVAL;
}

/* "[N*]action[:arg]" into e; -EINVAL on anything else. */
static int fp_parse_action(char *act, struct fp_entry *e)
{
	char *star = strchr(act, '*');

	if (star) {
		*star = '\0';
		if (parse_u64(act, &e->nth) || e->nth == 0)
			return -EINVAL;
		act = star + 1;
	}
	if (!strcmp(act, "abort")) {
		e->action = FP_ABORT;
	} else if (!strcmp(act, "exit")) {
		e->action = FP_EXIT;
	} else if (!strncmp(act, "sleep:", 6)) {
		e->action = FP_SLEEP;
		return parse_u64(act + 6, &e->arg) ? -EINVAL : 0;
	} else if (!strncmp(act, "error:", 6)) {
		e->action = FP_ERROR;
		return fp_parse_errno(act + 6, &e->arg);
	} else {
		return -EINVAL;
	}
	return 0;
}

/* One "name=action" item (NUL-terminated, writable). */
static void fp_parse_item(char *item)
{
	char *eq = strchr(item, '=');
	struct fp_entry e = { 0 };
	size_t nlen;

	if (!*item)
		return;
	nlen = eq ? (size_t)(eq - item) : 0;
	if (!eq || nlen == 0 || nlen >= sizeof(e.name)) {
		log_warnx("MARU_FAILPOINT: ignoring \"%s\"", item);
		return;
	}
	memcpy(e.name, item, nlen);
	if (fp_parse_action(eq + 1, &e)) {
		log_warnx("MARU_FAILPOINT: unknown action for %s, ignored", e.name);
		return;
	}
	if (fp_count == FP_MAX) {
		log_warnx("MARU_FAILPOINT: more than %d points, %s ignored", FP_MAX, e.name);
		return;
	}
	fp_table[fp_count++] = e;
}

static void fp_parse_env(void)
{
	const char *env = getenv("MARU_FAILPOINT");
	char *copy, *item, *comma;

	if (!env || !*env)
		return;
	copy = strdup(env);
	if (!copy) {
		log_warnx("MARU_FAILPOINT: out of memory, fail points disabled");
		return;
	}
	for (item = copy; item; item = comma ? comma + 1 : NULL) {
		comma = strchr(item, ',');
		if (comma)
			*comma = '\0';
		fp_parse_item(item);
	}
	free(copy);
}

static int fp_fire(const struct fp_entry *e)
{
	struct timespec ts;

	switch (e->action) {
	case FP_ABORT:
		log_warnx("failpoint %s: killing this process", e->name);
		kill(getpid(), SIGKILL);
		_exit(137);	/* not reached: SIGKILL cannot be caught */
	case FP_EXIT:
		log_warnx("failpoint %s: exiting", e->name);
		_exit(1);
	case FP_SLEEP:
		ts.tv_sec = (time_t)(e->arg / 1000);
		ts.tv_nsec = (long)(e->arg % 1000) * 1000000L;
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		return 0;
	case FP_ERROR:
		return -(int)e->arg;
	}
	return 0;
}

int failpoint_hit(const char *name)
{
	int i, saved = errno, rc = 0;

	pthread_once(&fp_once, fp_parse_env);
	for (i = 0; i < fp_count; i++) {
		struct fp_entry *e = &fp_table[i];
		uint64_t hit;

		if (strcmp(e->name, name))
			continue;
		hit = __atomic_add_fetch(&e->hits, 1, __ATOMIC_RELAXED);
		if (e->nth == 0 || hit == e->nth)
			rc = fp_fire(e);
		break;
	}
	errno = saved;
	return rc;
}

#endif /* HAVE_FAILPOINTS */
