/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ratelog.c: rate-limited warnings for marufs. A call site writes at
 * most one line per RATELOG_PERIOD_MS; the lines it left out meanwhile are
 * counted and the next line it writes says how many. Lock-free: the site's
 * state is two atomics, so it may be used under any lock.
 */
#include <stdarg.h>
#include <stdio.h>

#include "clock.h"
#include "ratelog.h"

#define RATELOG_LINE	512

void ratelog_warn(struct ratelog *rl, const char *fmt, ...)
{
	uint64_t now = mono_ms(), next = __atomic_load_n(&rl->next_ms, __ATOMIC_ACQUIRE);
	char line[RATELOG_LINE];
	unsigned int dropped;
	va_list ap;

	if (now < next || !__atomic_compare_exchange_n(&rl->next_ms, &next,
						       now + RATELOG_PERIOD_MS, 0,
						       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&rl->dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	dropped = __atomic_exchange_n(&rl->dropped, 0, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (dropped)
		log_warnx("%s (and %u more like it since the last)", line, dropped);
	else
		log_warnx("%s", line);
}
