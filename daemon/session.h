/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/session.h: marud's session table. A session is what a client's
 * token names: one dir_session (its leases and pending versions), the count
 * of connections attached to it, and a reply cache for idempotent retries.
 * A session outlives its connections by the grace period, then a reaper ends
 * it (dir_session_end releases its leases and abandons its pending versions).
 */
#ifndef MARUD_SESSION_H
#define MARUD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "dir.h"

#define SESSION_TOKEN_BYTES	16
#define SESSION_CACHE_SLOTS	64
#define SESSION_CACHE_PAYLOAD	4096

struct sessions;
struct session;

/* What the reply cache recorded for one request id. */
struct cache_reply {
	uint16_t op;
	int32_t status;
	/* 1: the reply payload was over SESSION_CACHE_PAYLOAD and not kept:
	 * the caller rebuilds it from `ino` (re-query), never re-applies. */
	int too_large;
	uint64_t ino;
	uint32_t len;
	uint8_t payload[SESSION_CACHE_PAYLOAD];
};

enum cache_result {
	CACHE_MISS = 0,		/* slot reserved: execute, then session_cache_finish() */
	CACHE_HIT = 1,		/* *out holds the recorded reply */
	CACHE_BYPASS = 2,	/* not cacheable now (no slot, reqid 0): execute only */
};

/* grace_ms: how long a session with no connection is kept. */
int sessions_new(struct dir *d, uint64_t grace_ms, struct sessions **out);
/* Stops the reaper, ends every session (attached or not), frees the table. */
void sessions_destroy(struct sessions *t);
/*
 * Called with no lock held just before a session's leases and pending
 * versions end (dir_session_end): the rdma data path revokes its windows.
 */
typedef void (*session_end_hook)(void *arg, struct session *s);
void sessions_set_end_hook(struct sessions *t, session_end_hook fn, void *arg);
/* Background reaper: wakes at least every 100 ms and on detach. */
int sessions_start_reaper(struct sessions *t);
void sessions_stop_reaper(struct sessions *t);
void sessions_set_grace(struct sessions *t, uint64_t grace_ms);
/*
 * One reaper step at monotonic time now_ms (tests call it directly): ends
 * every detached session detached for at least grace. Returns how many.
 */
unsigned int sessions_reap(struct sessions *t, uint64_t now_ms);
/* Sessions in the table (attached or in grace). */
size_t sessions_count(struct sessions *t);
/* Milliseconds on the clock the reaper uses (CLOCK_MONOTONIC). */
uint64_t sessions_now_ms(void);

/*
 * HELLO: with token == NULL (or an unknown token) make a new session
 * (*reclaimed = 0); with a known token attach to it (*reclaimed = 1), even
 * inside its grace period. Either way the connection is attached.
 */
int session_hello(struct sessions *t, const uint8_t *token, struct session **out,
		  int *reclaimed);
/* The connection went away; the last one starts the grace period. */
void session_detach(struct sessions *t, struct session *s);
/* Same as session_detach, at a given monotonic time (tests). */
void session_detach_at(struct sessions *t, struct session *s, uint64_t now_ms);
unsigned int session_attached(struct sessions *t, const struct session *s);
struct dir_session *session_dir(const struct session *s);
/*
 * The tenant (daemon/tenant.h) whose key made the session, NULL for the
 * unscoped administrator. Set by HELLO right after session_hello() made
 * the session, never changed after.
 */
struct tenant;
struct tenant *session_tenant(const struct session *s);
void session_set_tenant(struct session *s, struct tenant *tn);
/* The directory session id of the session with token, 0 if there is none. */
uint64_t sessions_token_sid(struct sessions *t, const uint8_t *token);
const uint8_t *session_token(const struct session *s);

/*
 * Reply cache of mutating requests. Requests of one session may arrive on
 * several connections at once: a retry of a request still executing waits
 * for its result. reqid 0 is never cached.
 */
enum cache_result session_cache_begin(struct session *s, uint64_t reqid, uint16_t op,
				      struct cache_reply *out);
/* Record the reply of a CACHE_MISS request (payload may be NULL). */
/*
 * Give up a CACHE_MISS slot without recording anything: the request failed
 * in a way its client never heard of (the connection broke under it), so a
 * retry of the same id runs again instead of being answered that failure.
 */
/*
 * The last SESSION_PUBLISHED_KEEP versions s published: a PUBLISH asked
 * again after its reply cache entry went is answered as done only to the
 * session that published it (daemon/handlers/version.c).
 */
#define SESSION_PUBLISHED_KEEP 16
void session_note_published(struct session *s, uint64_t ino);
int session_published(struct session *s, uint64_t ino);
void session_cache_forget(struct session *s, uint64_t reqid);
void session_cache_finish(struct session *s, uint64_t reqid, int32_t status,
			  const void *payload, size_t len, uint64_t ino);

#endif
