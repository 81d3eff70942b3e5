/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/source.h: where marustat reads the metrics from: a marufs
 * mount's .maru/stats, an HTTP /metrics endpoint (marud --metrics-listen,
 * marufs -o metrics=) fetched with a plain HTTP/1.0 GET, or a pool's marud
 * asked through libmaru (pool.c).
 */
#ifndef MARUSTAT_SOURCE_H
#define MARUSTAT_SOURCE_H

#include <stddef.h>

struct maru_client;

enum source_kind { SOURCE_MOUNT, SOURCE_HTTP, SOURCE_POOL };

struct source {
	enum source_kind kind;
	char path[4096];	/* mount: the stats file */
	char host[256], port[16], target[1024];	/* http */
	char name[1100];	/* as errors and the header show it */
	struct maru_client *client;	/* pool */
};

#define SOURCE_ERR_LEN 512

/* arg as -p gives it, NULL: the first marufs mount of /proc/self/mounts;
 * key_file for a pool URI (may be NULL). */
int source_open(const char *arg, const char *key_file, struct source *s, char *err);
void source_close(struct source *s);
/* The whole text, malloc'd and NUL-terminated, in *text; 0 or -errno. */
int source_fetch(const struct source *s, char **text, char *err);

#endif
