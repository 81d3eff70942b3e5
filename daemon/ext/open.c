// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/ext/open.c: the hint requests one client session keeps open, so
 * that one client cannot make the extension hold an unbounded number of
 * them: a read hint opens its request id, read_end closes it, the
 * session's end closes all (the extension hears connection_closed with the
 * session's hint id). At most PROTO_MAX_HINT_OPEN per session; request ids
 * are kept as 64-bit hashes in a small growing array per session, in a
 * table of sessions under one lock (a session's connections run on threads
 * of their own).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"
#include "hash.h"
#include "proto.h"

struct hint_open {
	unsigned int n, cap;
	uint64_t id[];
};

static uint64_t req_hash(const char *request)
{
	uint64_t h = hash_xxh3(request, strlen(request));

	return h ? h : 1;
}

static int find(const struct hint_open *s, uint64_t h)
{
	unsigned int i;

	for (i = 0; s && i < s->n; i++)
		if (s->id[i] == h)
			return (int)i;
	return -1;
}

static int grow(struct hint_open **set)
{
	unsigned int cap = *set ? (*set)->cap * 2 : 16;
	struct hint_open *s;

	if (cap > PROTO_MAX_HINT_OPEN)
		cap = PROTO_MAX_HINT_OPEN;
	s = realloc(*set, sizeof(*s) + cap * sizeof(s->id[0]));
	if (!s)
		return -ENOMEM;
	if (!*set)
		s->n = 0;
	s->cap = cap;
	*set = s;
	return 0;
}

int ext_open_add(struct hint_open **set, const char *request)
{
	uint64_t h = req_hash(request);
	int rc;

	if (find(*set, h) >= 0)
		return 1;
	if (*set && (*set)->n >= PROTO_MAX_HINT_OPEN)
		return -EMFILE;
	if (!*set || (*set)->n == (*set)->cap) {
		rc = grow(set);
		if (rc)
			return rc;
	}
	(*set)->id[(*set)->n++] = h;
	return 0;
}

int ext_open_del(struct hint_open *set, const char *request)
{
	int i = find(set, req_hash(request));

	if (i < 0)
		return 0;
	set->id[i] = set->id[--set->n];
	return 1;
}

unsigned int ext_open_count(const struct hint_open *set)
{
	return set ? set->n : 0;
}

void ext_open_free(struct hint_open *set)
{
	free(set);
}

/*
 * The open sets of all sessions, keyed by the session's hint id: a client's
 * connections share one session, and libmaru sends each request on
 * whichever of them is idle, so a read and its read_end may come on two
 * connections at once. The lock guards the buckets and every set in them.
 */
#define SESS_BUCKETS 64

struct sess_ent {
	struct sess_ent *next;
	uint64_t sid;
	struct hint_open *set;
};

struct hint_sessions {
	pthread_mutex_t lock;
	struct sess_ent *b[SESS_BUCKETS];
};

uint64_t ext_open_session_id(const uint8_t *token, size_t len)
{
	uint64_t h = hash_xxh3(token, len);

	return h ? h : 1;
}

int ext_open_sessions_new(struct hint_sessions **out)
{
	struct hint_sessions *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void ext_open_sessions_free(struct hint_sessions *t)
{
	struct sess_ent *s;
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < SESS_BUCKETS; i++)
		while ((s = t->b[i])) {
			t->b[i] = s->next;
			ext_open_free(s->set);
			free(s);
		}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* The entry of sid (made when make is set); lock held. */
static struct sess_ent *sess_find(struct hint_sessions *t, uint64_t sid, int make)
{
	struct sess_ent **pp = &t->b[sid % SESS_BUCKETS], *s;

	for (s = *pp; s; s = s->next)
		if (s->sid == sid)
			return s;
	if (!make || !(s = calloc(1, sizeof(*s))))
		return NULL;
	s->sid = sid;
	s->next = *pp;
	*pp = s;
	return s;
}

int ext_open_session_track(struct hint_sessions *t, uint64_t sid, int open, const char *request)
{
	struct sess_ent *s;
	int rc = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	s = sess_find(t, sid, 1);
	if (!s)
		rc = -ENOMEM;
	else if (open > 0)
		rc = ext_open_add(&s->set, request);
	else if (open < 0)
		rc = ext_open_del(s->set, request);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

unsigned int ext_open_session_count(struct hint_sessions *t, uint64_t sid)
{
	struct sess_ent *s;
	unsigned int n;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	s = sess_find(t, sid, 0);
	n = s ? ext_open_count(s->set) : 0;
	pthread_mutex_unlock(&t->lock);
	return n;
}

int ext_open_session_end(struct hint_sessions *t, uint64_t sid)
{
	struct sess_ent **pp, *s;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (pp = &t->b[sid % SESS_BUCKETS]; (s = *pp); pp = &s->next)
		if (s->sid == sid) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&t->lock);
	if (s) {
		ext_open_free(s->set);
		free(s);
	}
	return s != NULL;
}
