// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/session.c: the session table of marud. It owns the mapping from a
 * 16-byte token to a session, the attach/detach counting of connections,
 * the grace period and the reaper thread that ends sessions nobody came back
 * for, and each session's reply cache.
 *
 * Locks: the table lock guards the hash, the detached list and every
 * session's `attached`/`detached_ms`; a session's cache lock guards its reply
 * cache only. They are never held together. dir_session_end() is called with
 * no lock held. A session is freed only by the reaper or sessions_destroy(),
 * and only when no connection is attached, so a connection's pointer stays
 * valid from HELLO until it detaches. Both condition variables run on
 * CLOCK_MONOTONIC (clock.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "clock.h"
#include "log.h"
#include "proto.h"
#include "session.h"

#define SESSION_BUCKETS		1024
#define REAPER_PERIOD_MS	100

enum slot_state {
	SLOT_EMPTY = 0,
	SLOT_BUSY = 1,
	SLOT_DONE = 2,
};

struct cache_slot {
	uint64_t reqid;
	uint64_t seq;		/* when it was taken: the smallest is the oldest */
	uint64_t ino;
	int32_t status;
	uint32_t len;
	uint16_t op;
	uint8_t state;
	uint8_t too_large;
	uint8_t *payload;	/* kept across uses of the slot, cap bytes */
	uint32_t cap;
};

struct session {
	struct session *hnext;
	struct session *dprev, *dnext;	/* detached list, when attached == 0 */
	uint8_t token[SESSION_TOKEN_BYTES];
	struct dir_session *ds;
	struct tenant *tenant;	/* tenant.h: NULL unscoped; set once at HELLO */
	unsigned int attached;
	uint64_t detached_ms;

	pthread_mutex_t cache_lock;
	pthread_cond_t cache_cond;
	struct cache_slot slots[SESSION_CACHE_SLOTS];
	uint64_t taken;		/* slots taken so far (their seq) */
	unsigned int last_slot;	/* the slot taken last: where its finish looks first */
	uint64_t max_reqid;	/* no slot ever held a larger request id */
	/* the versions this session published last (under cache_lock) */
	uint64_t published[SESSION_PUBLISHED_KEEP];
	unsigned int published_next;
};

struct sessions {
	struct dir *dir;
	pthread_mutex_t lock;
	pthread_cond_t reaper_cond;
	struct session *buckets[SESSION_BUCKETS];
	struct session *detached;	/* head of the detached list */
	size_t count;
	uint64_t grace_ms;
	int reaper_running, reaper_stop;
	pthread_t reaper;
	session_end_hook end_hook;	/* set before the reaper starts */
	void *end_arg;
};

uint64_t sessions_now_ms(void)
{
	return mono_ms();
}

static unsigned int token_bucket(const uint8_t *token)
{
	uint64_t h;

	/* Tokens are random: any 8 of their bytes are a fine hash. */
	memcpy(&h, token, sizeof(h));
	return (unsigned int)(h % SESSION_BUCKETS);
}

int sessions_new(struct dir *d, uint64_t grace_ms, struct sessions **out)
{
	struct sessions *t;
	int rc;

	if (sodium_init() < 0)
		return -EIO;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	rc = cond_init_mono(&t->reaper_cond);
	if (rc) {
		free(t);
		return rc;
	}
	t->dir = d;
	t->grace_ms = grace_ms;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

static void session_free(struct session *s)
{
	unsigned int i;

	for (i = 0; i < SESSION_CACHE_SLOTS; i++)
		free(s->slots[i].payload);
	pthread_cond_destroy(&s->cache_cond);
	pthread_mutex_destroy(&s->cache_lock);
	free(s);
}

static void hash_remove(struct sessions *t, struct session *s)
{
	struct session **pp = &t->buckets[token_bucket(s->token)];

	while (*pp && *pp != s)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = s->hnext;
	t->count--;
}

static void detached_add(struct sessions *t, struct session *s)
{
	s->dprev = NULL;
	s->dnext = t->detached;
	if (t->detached)
		t->detached->dprev = s;
	t->detached = s;
}

static void detached_remove(struct sessions *t, struct session *s)
{
	if (s->dprev)
		s->dprev->dnext = s->dnext;
	else
		t->detached = s->dnext;
	if (s->dnext)
		s->dnext->dprev = s->dprev;
	s->dprev = s->dnext = NULL;
}

void sessions_set_end_hook(struct sessions *t, session_end_hook fn, void *arg)
{
	t->end_hook = fn;
	t->end_arg = arg;
}

static void session_end(struct sessions *t, struct session *s)
{
	/* rights handed out beside the directory (rdma) end first */
	if (t->end_hook)
		t->end_hook(t->end_arg, s);
	dir_session_end(t->dir, s->ds);
	session_free(s);
}

void sessions_destroy(struct sessions *t)
{
	unsigned int i;
	struct session *s;

	if (!t)
		return;
	sessions_stop_reaper(t);
	for (i = 0; i < SESSION_BUCKETS; i++) {
		while ((s = t->buckets[i])) {
			t->buckets[i] = s->hnext;
			session_end(t, s);
		}
	}
	pthread_cond_destroy(&t->reaper_cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct session *lookup_locked(struct sessions *t, const uint8_t *token)
{
	struct session *s;

	for (s = t->buckets[token_bucket(token)]; s; s = s->hnext)
		if (!memcmp(s->token, token, SESSION_TOKEN_BYTES))
			return s;
	return NULL;
}

uint64_t sessions_token_sid(struct sessions *t, const uint8_t *token)
{
	struct session *s;
	uint64_t sid = 0;

	pthread_mutex_lock(&t->lock);
	s = lookup_locked(t, token);
	if (s)
		sid = dir_session_id(s->ds);
	pthread_mutex_unlock(&t->lock);
	return sid;
}

static int token_is_zero(const uint8_t *token)
{
	static const uint8_t zero[SESSION_TOKEN_BYTES];

	return !memcmp(token, zero, sizeof(zero));
}

/* A fresh random token no live session has (table lock held). */
static void token_fresh_locked(struct sessions *t, uint8_t *token)
{
	do
		randombytes_buf(token, SESSION_TOKEN_BYTES);
	while (token_is_zero(token) || lookup_locked(t, token));
}

static int session_create(struct sessions *t, struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	rc = cond_init_mono(&s->cache_cond);
	if (rc) {
		free(s);
		return rc;
	}
	rc = dir_session_new(t->dir, &s->ds);
	if (rc) {
		pthread_cond_destroy(&s->cache_cond);
		free(s);
		return rc;
	}
	pthread_mutex_init(&s->cache_lock, NULL);
	*out = s;
	return 0;
}

static void insert_locked(struct sessions *t, struct session *s)
{
	unsigned int b;

	token_fresh_locked(t, s->token);
	b = token_bucket(s->token);
	s->hnext = t->buckets[b];
	t->buckets[b] = s;
	t->count++;
}

static struct session *attach_locked(struct sessions *t, const uint8_t *token)
{
	struct session *s = lookup_locked(t, token);

	if (s && s->attached++ == 0)
		detached_remove(t, s);
	return s;
}

int session_hello(struct sessions *t, const uint8_t *token, struct session **out,
		  int *reclaimed)
{
	struct session *s = NULL;
	int rc;

	if (token && !token_is_zero(token)) {
		pthread_mutex_lock(&t->lock);
		s = attach_locked(t, token);
		pthread_mutex_unlock(&t->lock);
	}
	*reclaimed = s != NULL;
	if (s) {
		*out = s;
		return 0;
	}
	/* Made outside the lock: dir_session_new takes the dir lock. */
	rc = session_create(t, &s);
	if (rc)
		return rc;
	pthread_mutex_lock(&t->lock);
	insert_locked(t, s);
	s->attached = 1;
	pthread_mutex_unlock(&t->lock);
	*out = s;
	return 0;
}

void session_detach_at(struct sessions *t, struct session *s, uint64_t now_ms)
{
	pthread_mutex_lock(&t->lock);
	if (s->attached && --s->attached == 0) {
		s->detached_ms = now_ms;
		detached_add(t, s);
		pthread_cond_signal(&t->reaper_cond);
	}
	pthread_mutex_unlock(&t->lock);
}

void session_detach(struct sessions *t, struct session *s)
{
	session_detach_at(t, s, sessions_now_ms());
}

unsigned int session_attached(struct sessions *t, const struct session *s)
{
	unsigned int n;

	pthread_mutex_lock(&t->lock);
	n = s->attached;
	pthread_mutex_unlock(&t->lock);
	return n;
}

struct dir_session *session_dir(const struct session *s)
{
	return s->ds;
}

const uint8_t *session_token(const struct session *s)
{
	return s->token;
}

size_t sessions_count(struct sessions *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

void sessions_set_grace(struct sessions *t, uint64_t grace_ms)
{
	pthread_mutex_lock(&t->lock);
	t->grace_ms = grace_ms;
	pthread_cond_signal(&t->reaper_cond);
	pthread_mutex_unlock(&t->lock);
}

unsigned int sessions_reap(struct sessions *t, uint64_t now_ms)
{
	struct session *s, *next, *dead = NULL;
	unsigned int n = 0;

	pthread_mutex_lock(&t->lock);
	for (s = t->detached; s; s = next) {
		next = s->dnext;
		if (now_ms - s->detached_ms < t->grace_ms || now_ms < s->detached_ms)
			continue;
		detached_remove(t, s);
		hash_remove(t, s);
		s->dnext = dead;
		dead = s;
	}
	pthread_mutex_unlock(&t->lock);
	for (s = dead; s; s = next) {
		next = s->dnext;
		log_debug("session %llu: grace period over, ending it",
			  (unsigned long long)dir_session_id(s->ds));
		session_end(t, s);
		n++;
	}
	return n;
}

static void *reaper_main(void *arg)
{
	struct sessions *t = arg;
	struct timespec ts;

	pthread_mutex_lock(&t->lock);
	while (!t->reaper_stop) {
		deadline_ms(&ts, REAPER_PERIOD_MS);
		pthread_cond_timedwait(&t->reaper_cond, &t->lock, &ts);
		if (t->reaper_stop)
			break;
		pthread_mutex_unlock(&t->lock);
		sessions_reap(t, sessions_now_ms());
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int sessions_start_reaper(struct sessions *t)
{
	int rc;

	if (t->reaper_running)
		return 0;
	t->reaper_stop = 0;
	rc = pthread_create(&t->reaper, NULL, reaper_main, t);
	if (rc)
		return -rc;
	t->reaper_running = 1;
	return 0;
}

void sessions_stop_reaper(struct sessions *t)
{
	if (!t->reaper_running)
		return;
	pthread_mutex_lock(&t->lock);
	t->reaper_stop = 1;
	pthread_cond_signal(&t->reaper_cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->reaper, NULL);
	t->reaper_running = 0;
}

/* ---- reply cache ---- */

static struct cache_slot *cache_find(struct session *s, uint64_t reqid)
{
	struct cache_slot *last = &s->slots[s->last_slot];
	unsigned int i;

	/* a new request id (a client counts up): no slot to scan for it */
	if (reqid > s->max_reqid)
		return NULL;
	if (last->state != SLOT_EMPTY && last->reqid == reqid)
		return last;
	for (i = 0; i < SESSION_CACHE_SLOTS; i++)
		if (s->slots[i].state != SLOT_EMPTY && s->slots[i].reqid == reqid)
			return &s->slots[i];
	return NULL;
}

/*
 * Replies whose loss would hide a change of the namespace from its client
 * (a resend executed again would fail: EEXIST, ENOENT, a version no longer
 * pending). A bulk request (WRITE, RESERVE, OPEN, ...) is cheap to run
 * again or fails its version anyway; a session streaming them must not push
 * these out of the cache within the time its client may still ask again.
 */
static int slot_keeps_namespace(const struct cache_slot *c)
{
	if (c->state != SLOT_DONE)
		return 0;
	switch (c->op) {
	case OP_MKDIR: case OP_RMDIR: case OP_SETATTR: case OP_RENAME: case OP_UNLINK:
	case OP_SYMLINK: case OP_LINK: case OP_MKNOD: case OP_CREATE: case OP_PUBLISH:
	case OP_ABANDON:
		return 1;
	default:
		return 0;
	}
}

/*
 * The oldest slot not in use by a running request, emptied but for its
 * payload buffer (reused: no malloc per recorded reply), for reqid; or NULL.
 * Slots that hold a namespace change's reply go last: the oldest other one
 * is taken while there is one.
 */
static struct cache_slot *cache_take(struct session *s, uint64_t reqid)
{
	unsigned int i, pass, at = SESSION_CACHE_SLOTS;
	struct cache_slot *c;

	for (pass = 0; pass < 2 && at == SESSION_CACHE_SLOTS; pass++) {
		for (i = 0; i < SESSION_CACHE_SLOTS; i++) {
			c = &s->slots[i];
			if (c->state == SLOT_BUSY || (pass == 0 && slot_keeps_namespace(c)))
				continue;
			if (at == SESSION_CACHE_SLOTS || c->seq < s->slots[at].seq)
				at = i;
		}
	}
	if (at == SESSION_CACHE_SLOTS)
		return NULL;
	c = &s->slots[at];
	*c = (struct cache_slot){ .payload = c->payload, .cap = c->cap, .reqid = reqid,
				  .seq = ++s->taken };
	s->last_slot = at;
	if (reqid > s->max_reqid)
		s->max_reqid = reqid;
	return c;
}

/* Room for len payload bytes in c; 0 or -ENOMEM. */
static int slot_room(struct cache_slot *c, size_t len)
{
	uint8_t *p;

	if (len <= c->cap)
		return 0;
	p = realloc(c->payload, len);
	if (!p)
		return -ENOMEM;
	c->payload = p;
	c->cap = (uint32_t)len;
	return 0;
}

static void cache_copy_out(const struct cache_slot *c, struct cache_reply *out)
{
	out->op = c->op;
	out->status = c->status;
	out->too_large = c->too_large;
	out->ino = c->ino;
	out->len = c->len;
	if (c->len)
		memcpy(out->payload, c->payload, c->len);
}

enum cache_result session_cache_begin(struct session *s, uint64_t reqid, uint16_t op,
				      struct cache_reply *out)
{
	enum cache_result r = CACHE_BYPASS;
	struct cache_slot *c;

	if (reqid == 0)
		return CACHE_BYPASS;
	pthread_mutex_lock(&s->cache_lock);
	while ((c = cache_find(s, reqid)) && c->state == SLOT_BUSY)
		pthread_cond_wait(&s->cache_cond, &s->cache_lock);
	if (c && c->op == op) {
		cache_copy_out(c, out);
		r = CACHE_HIT;
	} else if (!c) {
		c = cache_take(s, reqid);
		if (c) {
			c->op = op;
			c->state = SLOT_BUSY;
			r = CACHE_MISS;
		}
	}
	/* Same reqid, other op: a confused client; execute, record nothing. */
	pthread_mutex_unlock(&s->cache_lock);
	return r;
}

void session_cache_forget(struct session *s, uint64_t reqid)
{
	struct cache_slot *c;

	pthread_mutex_lock(&s->cache_lock);
	c = cache_find(s, reqid);
	if (c && c->state == SLOT_BUSY) {
		c->state = SLOT_EMPTY;
		c->reqid = 0;
		pthread_cond_broadcast(&s->cache_cond);
	}
	pthread_mutex_unlock(&s->cache_lock);
}

void session_cache_finish(struct session *s, uint64_t reqid, int32_t status,
			  const void *payload, size_t len, uint64_t ino)
{
	struct cache_slot *c;

	pthread_mutex_lock(&s->cache_lock);
	c = cache_find(s, reqid);
	if (c && c->state == SLOT_BUSY) {
		c->status = status;
		c->ino = ino;
		if (len > SESSION_CACHE_PAYLOAD) {
			c->too_large = 1;
		} else if (len && !slot_room(c, len)) {
			memcpy(c->payload, payload, len);
			c->len = (uint32_t)len;
		} else if (len) {
			c->too_large = 1;
		}
		c->state = SLOT_DONE;
		pthread_cond_broadcast(&s->cache_cond);
	}
	pthread_mutex_unlock(&s->cache_lock);
}

void session_note_published(struct session *s, uint64_t ino)
{
	pthread_mutex_lock(&s->cache_lock);
	s->published[s->published_next++ % SESSION_PUBLISHED_KEEP] = ino;
	pthread_mutex_unlock(&s->cache_lock);
}

int session_published(struct session *s, uint64_t ino)
{
	unsigned int i;
	int found = 0;

	pthread_mutex_lock(&s->cache_lock);
	for (i = 0; i < SESSION_PUBLISHED_KEEP && !found; i++)
		found = ino && s->published[i] == ino;
	pthread_mutex_unlock(&s->cache_lock);
	return found;
}

struct tenant *session_tenant(const struct session *s)
{
	return s ? s->tenant : NULL;
}

void session_set_tenant(struct session *s, struct tenant *tn)
{
	s->tenant = tn;
}
