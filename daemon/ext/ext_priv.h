/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/ext/ext_priv.h: struct ext, shared by ext.c (which owns it) and
 * gen.c (the generation watch) and by nothing else.
 */
#ifndef MARUD_EXT_PRIV_H
#define MARUD_EXT_PRIV_H

#include <pthread.h>

#include "ext.h"

/* What ext_watch_start() was given, read by the watch thread only. */
struct ext_watch_args {
	unsigned int poll_ms, grace_ms;
	void (*reset)(void *arg);
	void (*unknown)(void *arg);
	void *arg;
};

struct ext {
	void *dl;
	const struct marud_extension *x;
	void *state;
	char name[64];
	struct marud_ext_region region;
	struct pool *pool;
	atomic_int mapped_ok;		/* mapped() succeeded */
	atomic_int gen_known;		/* memory generation known (or no hook) */
	uint64_t memgen;		/* last known, watch thread only */
	struct ext_stats st;
	struct hint_sessions *sessions;	/* open.c: open hint requests */
	/* gen.c */
	pthread_t watch;
	int watching;
	pthread_mutex_t wlock;
	pthread_cond_t wcond;		/* CLOCK_MONOTONIC: stop asked */
	int stop;
	struct ext_watch_args wargs;
};

/* ext.c: mapped() again, for the watch thread. */
void ext_remap(struct ext *e);

#endif
