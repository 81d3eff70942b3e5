/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/clog.c: formatting and delivering one libmaru log line (see clog.h).
 * The line is built in a local buffer and leaves in one callback or one
 * write(2), so lines of concurrent threads (callers, the event stream,
 * reconnects) never interleave. Logging never changes errno. A log_priority
 * of 0 (opts the caller zeroed instead of calling maru_client_opts_init)
 * means the default, LOG_INFO, not "LOG_EMERG only".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_priv.h"
#include "clog.h"

#define CLOG_LINE_MAX	1024
#define CLOG_PREFIX	"libmaru: "

static size_t clamp_len(int n, size_t room)
{
	if (n < 0)
		return 0;
	return (size_t)n < room ? (size_t)n : room - 1;
}

static void to_stderr(const char *line, size_t len)
{
	char buf[CLOG_LINE_MAX + sizeof(CLOG_PREFIX) + 1];
	size_t n = sizeof(CLOG_PREFIX) - 1;
	ssize_t w;

	memcpy(buf, CLOG_PREFIX, n);
	memcpy(buf + n, line, len);
	n += len;
	buf[n++] = '\n';
	for (size_t off = 0; off < n; off += (size_t)w) {
		w = write(STDERR_FILENO, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			w = 0;
		else if (w <= 0)
			return;
	}
}

static int clog_max(const struct maru_client *c)
{
	return c->opts.log_priority ? c->opts.log_priority : LOG_INFO;
}

void clog_msg(const struct maru_client *c, int prio, int err, const char *fmt, ...)
{
	char line[CLOG_LINE_MAX], ebuf[128];
	int saved = errno;
	size_t off;
	va_list ap;

	if (prio > clog_max(c) || (!c->opts.log_fn && prio > LOG_WARNING))
		return;
	va_start(ap, fmt);
	off = clamp_len(vsnprintf(line, sizeof(line), fmt, ap), sizeof(line));
	va_end(ap);
	if (err)
		off += clamp_len(snprintf(line + off, sizeof(line) - off, ": %s",
					  strerror_r(abs(err), ebuf, sizeof(ebuf))),
				 sizeof(line) - off);
	line[off] = '\0';
	if (c->opts.log_fn)
		c->opts.log_fn(c->opts.log_arg, prio, line);
	else
		to_stderr(line, off);
	errno = saved;
}
