/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/failpoint.h: named points where tests stop or fail a process at an
 * exact phase. MARU_FAILPOINT="name=action[,name=action...]" in the
 * environment arms them; actions: abort (SIGKILL self), exit (_exit(1)),
 * sleep:MS, error:ERRNO (failpoint() returns -ERRNO), and with an optional
 * "N*" prefix only the N-th hit fires (e.g. "2*abort"). Compiled to nothing
 * when HAVE_FAILPOINTS is 0.
 */
#ifndef MARU_FAILPOINT_H
#define MARU_FAILPOINT_H

#include "config.h"

#if HAVE_FAILPOINTS
/* 0, or -errno for an error action; may not return for abort/exit. */
int failpoint_hit(const char *name);
#define FAILPOINT(name) failpoint_hit(name)
#else
#define FAILPOINT(name) 0
#endif

#endif
