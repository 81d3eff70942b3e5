/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/clog.h: libmaru's log, per client. Every line goes to the client's
 * opts.log_fn (marufs passes its own logger, so libmaru's lines land in its
 * log), or, without one, warnings and errors to stderr as "libmaru: ...".
 * A line above opts.log_priority is not even formatted. libmaru does not use
 * common/log.c's process-wide sink for its own lines.
 */
#ifndef MARU_CLOG_H
#define MARU_CLOG_H

#include <syslog.h>

#include "log.h"	/* LOG_PRINTF */

struct maru_client;

/* err != 0 appends ": strerror(err)" (positive or negative errno). */
void clog_msg(const struct maru_client *c, int prio, int err, const char *fmt, ...)
	LOG_PRINTF(4, 5);

#define clog_warn(c, err, ...)	clog_msg((c), LOG_WARNING, (err), __VA_ARGS__)
#define clog_warnx(c, ...)	clog_msg((c), LOG_WARNING, 0, __VA_ARGS__)
#define clog_info(c, ...)	clog_msg((c), LOG_INFO, 0, __VA_ARGS__)
#define clog_debug(c, ...)	clog_msg((c), LOG_DEBUG, 0, __VA_ARGS__)

#endif
