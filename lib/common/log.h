/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/log.h: one logging sink for marud, marufs and libmaru. In the
 * foreground it writes "prog: message" lines to stderr (the time first when
 * log_set_time() asked); daemonized it goes to syslog. log_warn() appends
 * strerror of the errno given (positive or negative); the *x forms do not.
 */
#ifndef MARU_LOG_H
#define MARU_LOG_H

#include <stdarg.h>
#include <syslog.h>

#define LOG_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* to_stderr: 1 foreground, 0 syslog. verbose: 0 info, 1 debug. */
void log_init(const char *prog, int to_stderr, int verbose);
void log_set_verbose(int verbose);
/* 1: stderr lines start with the UTC time ("2026-12-02T09:58:01.123Z marud: ..."). */
void log_set_time(int on);
int log_get_verbose(void);
void log_warn(int err, const char *fmt, ...) LOG_PRINTF(2, 3);
void log_warnx(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_info(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_debug(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_vmsg(int prio, const char *fmt, va_list ap);
__attribute__((noreturn)) void log_fatal(int err, const char *fmt, ...) LOG_PRINTF(2, 3);
__attribute__((noreturn)) void log_fatalx(const char *fmt, ...) LOG_PRINTF(1, 2);

#endif
