/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/report.h: marustat's columns, computed from two parsed
 * expositions (rates over the time between them) or from one (totals
 * since the counters started).
 */
#ifndef MARUSTAT_REPORT_H
#define MARUSTAT_REPORT_H

#include <stdio.h>

#include "expo.h"

/* Whether e holds any marud, marufs or libmaru family. */
int report_known(const struct expo *e);
void report_header(FILE *out);
/* then NULL: totals of now; else rates over secs. */
void report_line(FILE *out, const struct expo *then, const struct expo *now, double secs);

#endif
