/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/ratelog.h: warnings that may come once per request, rate-limited per
 * call site (ratelog.c). Every EIO marufs returns from a write, flush,
 * fsync or publish path says why through RATELOG_WARN.
 */
#ifndef MARUFS_RATELOG_H
#define MARUFS_RATELOG_H

#include <stdint.h>

#include "log.h"

/* One call site's state; zero-initialised. */
struct ratelog {
	uint64_t next_ms;	/* mono ms before which lines are only counted */
	unsigned int dropped;	/* lines left out since the last one written */
};

#define RATELOG_PERIOD_MS	1000

/* At most one warning line per RATELOG_PERIOD_MS from rl; says how many were left out. */
void ratelog_warn(struct ratelog *rl, const char *fmt, ...) LOG_PRINTF(2, 3);

#define RATELOG_WARN(...)						\
	do {								\
		static struct ratelog ratelog_site_;			\
		ratelog_warn(&ratelog_site_, __VA_ARGS__);		\
	} while (0)

#endif
