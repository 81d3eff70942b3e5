/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/refusals.h: refusals logged with a count instead of a line each
 * (refusals.c). The first refusal of a (source, reason) pair is logged at
 * once; the ones after it within the window are counted and logged as one
 * line when the window ends ("refused 983 connections from 10.0.0.3 in the
 * last 10 s: handshake limit"), and while they go on, one such line per
 * window. Used by admit.c, listen.c and the AUTH handler; it calls nothing
 * of the server.
 */
#ifndef MARUD_REFUSALS_H
#define MARUD_REFUSALS_H

#include <pthread.h>
#include <stdint.h>

#define REFUSALS_SLOTS		32	/* pairs counted at once; more fold into one */
#define REFUSALS_SOURCE_MAX	64
#define REFUSALS_WINDOW_MS	10000

struct refusals_slot {
	char source[REFUSALS_SOURCE_MAX];	/* "" : free */
	const char *reason;			/* a string literal */
	uint64_t start_ms;			/* the window's start (monotonic) */
	uint64_t count;				/* refusals in this window */
	int first_logged;			/* the window's first one had its own line */
};

struct refusals {
	pthread_mutex_t lock;
	unsigned int window_ms;
	struct refusals_slot slot[REFUSALS_SLOTS];
	uint64_t total;				/* every refusal noted */
};

int refusals_init(struct refusals *r, unsigned int window_ms);
void refusals_destroy(struct refusals *r);
/* One refusal of a connection from source (a host, no port) for reason (a literal). */
void refusals_note(struct refusals *r, const char *source, const char *reason);
/* Log the counts of the windows that ended by now_ms; force: all of them. */
void refusals_flush(struct refusals *r, uint64_t now_ms, int force);
/* Every refusal noted so far. */
uint64_t refusals_total(struct refusals *r);

#endif
