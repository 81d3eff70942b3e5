/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/ratelog.h: refusals logged with a count instead of a line each
 * (ratelog.c). The first refusal of a (source, reason) pair is logged at
 * once; the ones after it within the window are counted and logged as one
 * line when the window ends ("refused 983 connections from 10.0.0.3 in the
 * last 10 s: handshake limit"). Used by admit.c, listen.c and the AUTH
 * handler; it calls nothing of the server.
 */
#ifndef MARUD_RATELOG_H
#define MARUD_RATELOG_H

#include <pthread.h>
#include <stdint.h>

#define RATELOG_SLOTS		32	/* pairs counted at once; more fold into one */
#define RATELOG_SOURCE_MAX	64
#define RATELOG_WINDOW_MS	10000

struct ratelog_slot {
	char source[RATELOG_SOURCE_MAX];	/* "" : free */
	const char *reason;			/* a string literal */
	uint64_t start_ms;			/* the window's start (monotonic) */
	uint64_t counted;			/* refusals after the first, not yet logged */
};

struct ratelog {
	pthread_mutex_t lock;
	unsigned int window_ms;
	struct ratelog_slot slot[RATELOG_SLOTS];
	uint64_t total;				/* every refusal noted */
};

int ratelog_init(struct ratelog *r, unsigned int window_ms);
void ratelog_destroy(struct ratelog *r);
/* One refusal of a connection from source (a host, no port) for reason (a literal). */
void ratelog_note(struct ratelog *r, const char *source, const char *reason);
/* Log the counts of the windows that ended by now_ms; force: all of them. */
void ratelog_flush(struct ratelog *r, uint64_t now_ms, int force);
/* Every refusal noted so far. */
uint64_t ratelog_total(struct ratelog *r);

#endif
