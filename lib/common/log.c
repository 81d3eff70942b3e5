/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/log.c: the one logging sink of marud, marufs and libmaru. Every message
 * is formatted into a local buffer first and then leaves in a single write()
 * (foreground) or a single syslog() call, so lines from concurrent threads
 * never interleave and no lock is needed. Until log_init() runs, messages go
 * to stderr under the name "maru". Logging never changes errno. A process
 * that asks (marud in the foreground: log_set_time()) starts each stderr
 * line with the UTC time to the millisecond, as syslog would add it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LOG_LINE_MAX 2048

static char log_prog[64] = "maru";
static int log_to_stderr = 1;
static int log_verbose;
static int log_time;

void log_init(const char *prog, int to_stderr, int verbose)
{
	const char *base = prog ? strrchr(prog, '/') : NULL;

	if (prog)
		snprintf(log_prog, sizeof(log_prog), "%s", base ? base + 1 : prog);
	__atomic_store_n(&log_verbose, verbose, __ATOMIC_RELAXED);
	__atomic_store_n(&log_to_stderr, to_stderr, __ATOMIC_RELAXED);
	if (!to_stderr)
		openlog(log_prog, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_verbose(int verbose)
{
	__atomic_store_n(&log_verbose, verbose, __ATOMIC_RELAXED);
}

void log_set_time(int on)
{
	__atomic_store_n(&log_time, on, __ATOMIC_RELAXED);
}

/* "2026-12-02T09:58:01.123Z " into buf: its length, 0 if the clock failed. */
static size_t log_stamp(char *buf, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	if (clock_gettime(CLOCK_REALTIME, &ts) || !gmtime_r(&ts.tv_sec, &tm))
		return 0;
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!n)
		return 0;
	n += (size_t)snprintf(buf + n, cap - n, ".%03ldZ ", ts.tv_nsec / 1000000);
	return n < cap ? n : 0;
}

int log_get_verbose(void)
{
	return __atomic_load_n(&log_verbose, __ATOMIC_RELAXED);
}

/* Write all of buf to stderr; a short write to a pipe is retried. */
static void log_write_stderr(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* Format, append ": strerror(err)" when err != 0, and emit one line. */
static void log_emit(int prio, int err, const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX], ebuf[128];
	size_t off = 0, room = sizeof(line) - 1;	/* keep one byte for '\n' */
	int saved = errno, n;

	if (prio == LOG_DEBUG && !log_get_verbose())
		return;
	if (__atomic_load_n(&log_to_stderr, __ATOMIC_RELAXED)) {
		if (__atomic_load_n(&log_time, __ATOMIC_RELAXED))
			off = log_stamp(line, 64);
		n = snprintf(line + off, room - off, "%s: ", log_prog);
		off += n < 0 ? 0 : ((size_t)n < room - off ? (size_t)n : room - off - 1);
	}
	n = vsnprintf(line + off, room - off, fmt, ap);
	if (n > 0)
		off += (size_t)n < room - off ? (size_t)n : room - off - 1;
	if (err) {
		const char *es = strerror_r(abs(err), ebuf, sizeof(ebuf));

		n = snprintf(line + off, room - off, ": %s", es);
		if (n > 0)
			off += (size_t)n < room - off ? (size_t)n : room - off - 1;
	}
	if (__atomic_load_n(&log_to_stderr, __ATOMIC_RELAXED)) {
		line[off++] = '\n';
		log_write_stderr(line, off);
	} else {
		line[off] = '\0';
		syslog(prio, "%s", line);
	}
	errno = saved;
}

void log_vmsg(int prio, const char *fmt, va_list ap)
{
	log_emit(prio, 0, fmt, ap);
}

void log_warn(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_WARNING, err, fmt, ap);
	va_end(ap);
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_WARNING, 0, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_INFO, 0, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_DEBUG, 0, fmt, ap);
	va_end(ap);
}

void log_fatal(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_CRIT, err, fmt, ap);
	va_end(ap);
	exit(1);
}

void log_fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_CRIT, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
