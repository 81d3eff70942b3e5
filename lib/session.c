/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/session.c: the session state a HELLO reports. A new generation or a
 * lost session starts a new epoch; handles of an older epoch then fail with
 * -ESTALE (marud restarted: new generation) or -EIO (same generation, but
 * the session expired, so marud dropped its leases and pending versions).
 * A new generation is reported to the generation callback on the client's
 * own notifier thread, coalesced. The data path is chosen when the client
 * is made and again, lazily, before the next I/O after a HELLO said the
 * pool moved: the one opts.data_path names, or for AUTO the first of shm
 * (the pool maps here), rdma (a device here and marud's rdma listener) and
 * tcp that opens. Each path is probed, opened and closed through its
 * struct dp_ops, handed the session's facts as a value; a path asks for
 * them again (and makes its control calls) through the client's callbacks
 * (c->env), of which session_facts() is one.
 *
 * Locks: c->lock for the session fields; dp_lock (write) while the data
 * path and the mapping change. Neither is held while the callback runs.
 */
#include <errno.h>
#include <string.h>

#include "session.h"

/* ---- generation callback, delivered on a thread of our own ---- */

static void *notifier_main(void *arg)
{
	struct maru_client *c = arg;
	maru_generation_cb cb;
	void *cb_arg;
	uint64_t o, n;

	pthread_mutex_lock(&c->lock);
	while (!c->notify_stop) {
		if (!c->notify_pending) {
			pthread_cond_wait(&c->notify_cond, &c->lock);
			continue;
		}
		c->notify_pending = 0;
		o = c->notify_old;
		n = c->notify_new;
		cb = c->gen_cb;
		cb_arg = c->gen_arg;
		pthread_mutex_unlock(&c->lock);
		if (cb)
			cb(cb_arg, o, n);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int session_notifier_start(struct maru_client *c)
{
	return -pthread_create(&c->notifier, NULL, notifier_main, c);
}

void session_notifier_stop(struct maru_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->notify_stop = 1;
	pthread_cond_signal(&c->notify_cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->notifier, NULL);
}

void maru_client_on_generation(struct maru_client *c, maru_generation_cb cb, void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->gen_cb = cb;
	c->gen_arg = arg;
	pthread_mutex_unlock(&c->lock);
}

uint64_t session_epoch(struct maru_client *c)
{
	return atomic_load(&c->gen_epoch);
}

static void notify_locked(struct maru_client *c, uint64_t old_gen, uint64_t new_gen)
{
	/* Coalesce: one callback from the oldest unreported to the newest. */
	if (!c->notify_pending)
		c->notify_old = old_gen;
	c->notify_new = new_gen;
	c->notify_pending = 1;
	pthread_cond_signal(&c->notify_cond);
}

/* ---- data path ---- */

int session_held_check(struct maru_client *c, uint64_t epoch, uint64_t generation)
{
	uint64_t gen;

	if (epoch == __atomic_load_n(&c->s.epoch, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&c->lock);
	gen = c->s.generation;
	pthread_mutex_unlock(&c->lock);
	/* new generation: marud restarted; same one: our session expired */
	return generation != gen ? -ESTALE : -EIO;
}

const char *session_dp_name(enum maru_data_path p)
{
	switch (p) {
	case MARU_DATA_SHM: return "shm";
	case MARU_DATA_RDMA: return "rdma";
	case MARU_DATA_TCP: return "tcp";
	default: return "auto";
	}
}

/* AUTO: the pool mapped here, then marud's rdma listener, then tcp. */
static const struct dp_ops *const auto_order[] = { &dp_shm_ops, &dp_rdma_ops, &dp_tcp_ops };

/* Probe and open dp for session s; forced: opts.data_path names it. */
static int path_try(struct maru_client *c, const struct dp_ops *dp, const struct session *s,
		    int forced)
{
	const char *why = "unknown reason";
	int rc = dp->probe ? dp->probe(s, &why) : 0;

	if (!rc && dp->open)
		rc = dp->open(c, s, &why);
	if (!rc) {
		c->dp = dp;
		return 0;
	}
	if (forced)
		clog_warnx(c, "%s: data=%s unavailable (pool %s): %s", c->uri, dp->name,
			   s->pool_path, why);
	else
		clog_debug(c, "%s: data path %s not usable for pool %s (%s)", c->uri, dp->name,
			   s->pool_path, why);
	return forced ? -ENODEV : rc;
}

/* Choose the data path for session s. Caller holds dp_lock (write). */
static int dp_select_locked(struct maru_client *c, const struct session *s)
{
	size_t i;

	if (c->dp && c->dp->close)
		c->dp->close(c);
	c->dp = NULL;
	if (c->opts.data_path != MARU_DATA_AUTO)
		return path_try(c, dp_of(c->opts.data_path), s, 1);
	for (i = 0; i < sizeof(auto_order) / sizeof(auto_order[0]); i++)
		if (path_try(c, auto_order[i], s, 0) == 0)
			return 0;
	return -ENODEV;		/* not reached: tcp always opens */
}

int session_dp_select(struct maru_client *c)
{
	struct session s;
	int rc;

	pthread_mutex_lock(&c->lock);
	s = c->s;
	pthread_mutex_unlock(&c->lock);
	pthread_rwlock_wrlock(&c->dp_lock);
	rc = dp_select_locked(c, &s);
	pthread_rwlock_unlock(&c->dp_lock);
	return rc;
}

const struct dp_ops *session_dp(struct maru_client *c)
{
	const struct dp_ops *dp;

	if (atomic_exchange(&c->remap, 0) && session_dp_select(c))
		clog_warnx(c, "%s: pool moved and cannot be mapped again", c->uri);
	pthread_rwlock_rdlock(&c->dp_lock);
	dp = c->dp;
	pthread_rwlock_unlock(&c->dp_lock);
	return dp ? dp : &dp_tcp_ops;
}

enum maru_data_path session_dp_kind(struct maru_client *c)
{
	return session_dp(c)->kind;
}

void session_dp_close(struct maru_client *c)
{
	pthread_rwlock_wrlock(&c->dp_lock);
	if (c->dp && c->dp->close)
		c->dp->close(c);
	c->dp = NULL;
	pthread_rwlock_unlock(&c->dp_lock);
}

void session_facts(struct maru_client *c, struct dp_facts *out)
{
	pthread_mutex_lock(&c->lock);
	dp_facts_of(&c->s, out);
	pthread_mutex_unlock(&c->lock);
}

/* ---- session ---- */

static void session_fill(struct session *s, const struct proto_hello_rep *rep)
{
	memcpy(s->token, rep->token, sizeof(s->token));
	memcpy(s->uuid, rep->uuid, sizeof(s->uuid));
	s->generation = rep->generation;
	s->pool_size = rep->pool_size;
	s->pool_align = rep->pool_align;
	s->data_off = rep->data_off;
	s->max_frame = rep->max_frame && rep->max_frame < UINT32_MAX ?
		       (uint32_t)rep->max_frame : PROTO_MAX_FRAME;
	s->send_max = s->max_frame;
	/* replies carry a READ frame of PROTO_MAX_IO at least */
	if (s->max_frame < PROTO_MAX_IO)
		s->max_frame = PROTO_MAX_IO;
	s->backend = rep->backend;
	s->hint_actions = rep->hint_actions;
	memcpy(s->pool_path, rep->pool_path, sizeof(s->pool_path));
	s->pool_path[sizeof(s->pool_path) - 1] = '\0';
	s->rdma_port = rep->rdma_port;
	s->rdma_flags = rep->rdma_flags;
	memcpy(s->rdma_host, rep->rdma_host, sizeof(s->rdma_host));
	s->rdma_host[sizeof(s->rdma_host) - 1] = '\0';
	s->established = 1;
}

static int session_same(const struct session *s, const struct proto_hello_rep *rep)
{
	return rep->reclaimed && rep->generation == s->generation &&
	       !memcmp(rep->token, s->token, sizeof(s->token));
}

uint64_t session_update(struct maru_client *c, const struct proto_hello_rep *rep)
{
	uint64_t epoch, old_gen;
	int moved;

	pthread_mutex_lock(&c->lock);
	if (c->s.established && session_same(&c->s, rep)) {
		epoch = c->s.epoch;
		pthread_mutex_unlock(&c->lock);
		return epoch;
	}
	old_gen = c->s.generation;
	moved = c->s.established && (memcmp(c->s.uuid, rep->uuid, 16) ||
				     strcmp(c->s.pool_path, rep->pool_path));
	if (c->s.established) {
		atomic_fetch_add(&c->st.new_sessions, 1);
		if (old_gen != rep->generation) {
			/* before any reply of the new marud reaches a caller */
			atomic_fetch_add(&c->gen_epoch, 1);
			notify_locked(c, old_gen, rep->generation);
		}
	}
	session_fill(&c->s, rep);
	/* handles read the epoch without the lock (file_check) */
	epoch = __atomic_add_fetch(&c->s.epoch, 1, __ATOMIC_RELEASE);
	if (moved)
		atomic_store(&c->remap, 1);
	pthread_mutex_unlock(&c->lock);
	if (epoch > 1)
		clog_info(c, "marud at %s: new session (generation %llu -> %llu)", c->uri,
			  (unsigned long long)old_gen, (unsigned long long)rep->generation);
	return epoch;
}
