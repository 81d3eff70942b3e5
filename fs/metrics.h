/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/metrics.h: marufs's own counters as Prometheus text (metrics.c).
 */
#ifndef MARUFS_METRICS_H
#define MARUFS_METRICS_H

#include <stddef.h>

#include "mount.h"

/* The gauges that are not counters of struct mfs. */
struct metrics_gauges {
	size_t inodes, pendings, pins, dentries, leases_kept;
	/* the hint queue (hints.c): counters, read with its lock */
	uint64_t hq_queued, hq_sent, hq_dropped, hq_unsupported, hq_refused, hq_failed;
	uint64_t lookup_hints, lookup_batches;
};

/*
 * The text of .maru/stats: marud's and libmaru's (maru_stats_text(), none
 * while marud is unreachable), then marufs's own. *out is malloc()ed;
 * 0 or -ENOMEM (what fit is kept).
 */
int metrics_text(struct mfs *m, char **out, size_t *len);
/* Serve that text on -o metrics=ADDR:PORT (nothing when unset); 0 or -errno. */
int metrics_serve(struct mfs *m);
void metrics_unserve(struct mfs *m);
/* Read the gauges from the mount's tables. */
void metrics_gauges(struct mfs *m, struct metrics_gauges *g);
/* Append the text to the malloc()ed *buf (capacity *cap) at *pos; grows it.
 * -ENOMEM leaves what fit. */
int metrics_append(const struct counters *c, const struct metrics_gauges *g, char **buf,
		   size_t *cap, size_t *pos);

#endif
