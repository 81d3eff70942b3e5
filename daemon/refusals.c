// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/refusals.c: refusals of connections logged with a count, so that a
 * flood of them (an attacker's idle sockets, a client with the wrong key in
 * a retry loop) costs a line per source and reason every window rather than
 * a line per connection. It owns a small table of (source, reason) pairs
 * and its lock, taken under no other lock and with none taken under it;
 * sources beyond the table's size share its last slot ("other sources").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "refusals.h"

#define OVERFLOW_SLOT	(REFUSALS_SLOTS - 1)

int refusals_init(struct refusals *r, unsigned int window_ms)
{
	memset(r, 0, sizeof(*r));
	r->window_ms = window_ms ? window_ms : REFUSALS_WINDOW_MS;
	return -pthread_mutex_init(&r->lock, NULL);
}

void refusals_destroy(struct refusals *r)
{
	pthread_mutex_destroy(&r->lock);
}

/*
 * The end of s's window: its count line when there is more in it than the
 * line logged at its start. A window with refusals is followed by another
 * (kept quietly: a flood that goes on is one line per window); a window
 * without any frees s, so that the next refusal is logged at once again.
 */
static void slot_end(struct refusals *r, struct refusals_slot *s, uint64_t now, int free_it)
{
	if (s->count > (uint64_t)s->first_logged)
		log_warnx("refused %llu connections from %s in the last %u s: %s",
			  (unsigned long long)s->count, s->source, (r->window_ms + 999) / 1000,
			  s->reason);
	if (free_it || s->count <= (uint64_t)s->first_logged)
		s->source[0] = '\0';
	s->start_ms = now;
	s->count = 0;
	s->first_logged = 0;
}

static struct refusals_slot *slot_find(struct refusals *r, const char *source,
				       const char *reason)
{
	unsigned int i;

	for (i = 0; i < OVERFLOW_SLOT; i++)
		if (r->slot[i].source[0] && r->slot[i].reason == reason &&
		    !strcmp(r->slot[i].source, source))
			return &r->slot[i];
	return NULL;
}

static struct refusals_slot *slot_free(struct refusals *r)
{
	unsigned int i;

	for (i = 0; i < OVERFLOW_SLOT; i++)
		if (!r->slot[i].source[0])
			return &r->slot[i];
	return NULL;
}

static void slot_open(struct refusals *r, struct refusals_slot *s, const char *source,
		      const char *reason, uint64_t now)
{
	snprintf(s->source, sizeof(s->source), "%s", source[0] ? source : "?");
	s->reason = reason;
	s->start_ms = now;
	s->count = 1;
	s->first_logged = 1;
	log_warnx("refused a connection from %s: %s (more are counted, one line per %u s)",
		  s->source, reason, (r->window_ms + 999) / 1000);
}

void refusals_note(struct refusals *r, const char *source, const char *reason)
{
	uint64_t now = mono_ms();
	struct refusals_slot *s;

	pthread_mutex_lock(&r->lock);
	r->total++;
	s = slot_find(r, source, reason);
	if (!s)
		s = slot_free(r);
	if (!s) {
		s = &r->slot[OVERFLOW_SLOT];
		source = "other sources";
		if (s->source[0] && s->reason != reason)
			s->reason = "several reasons";
		reason = s->source[0] ? s->reason : reason;
	}
	if (s->source[0] && now >= s->start_ms + r->window_ms)
		slot_end(r, s, now, 0);
	if (!s->source[0])
		slot_open(r, s, source, reason, now);
	else
		s->count++;
	pthread_mutex_unlock(&r->lock);
}

void refusals_flush(struct refusals *r, uint64_t now_ms, int force)
{
	unsigned int i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < REFUSALS_SLOTS; i++) {
		struct refusals_slot *s = &r->slot[i];

		if (s->source[0] && (force || now_ms >= s->start_ms + r->window_ms))
			slot_end(r, s, now_ms, force);
	}
	pthread_mutex_unlock(&r->lock);
}

uint64_t refusals_total(struct refusals *r)
{
	uint64_t n;

	pthread_mutex_lock(&r->lock);
	n = r->total;
	pthread_mutex_unlock(&r->lock);
	return n;
}
