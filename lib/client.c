/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/client.c: the life of a struct maru_client: options, construction and
 * teardown, the session state a HELLO reports (new generation -> new epoch,
 * stale handles, remap, generation callback on the client's own notifier
 * thread), data path selection, pool facts, statfs and the stats text.
 *
 * A handle remembers the session epoch and the generation it was made in;
 * when a HELLO starts a new session, handles of an older epoch fail with
 * -ESTALE (marud restarted: new generation) or -EIO (same generation but
 * the session expired, so marud dropped its leases and pending versions).
 */
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "client_priv.h"
#include "datapath.h"
#include "log.h"

#define DEFAULT_TIMEOUT_MS	5000
#define DEFAULT_MAX_CONNS	4
#define MAX_CONNS_LIMIT		256

void maru_client_opts_init(struct maru_client_opts *opts, size_t size)
{
	struct maru_client_opts d = {
		.opts_size = sizeof(d),
		.data_path = MARU_DATA_AUTO,
		.coherence = MARU_COHERENCE_HW,
		.timeout_ms = DEFAULT_TIMEOUT_MS,
		.max_conns = DEFAULT_MAX_CONNS,
		.log_priority = LOG_INFO,
	};

	if (!opts || size < sizeof(size_t))
		return;
	memset(opts, 0, size);
	memcpy(opts, &d, size < sizeof(d) ? size : sizeof(d));
	opts->opts_size = size;
}

/* Copy what the caller's opts version has over our defaults. */
static int opts_copy(struct maru_client *c, const struct maru_client_opts *in)
{
	size_t n = in->opts_size ? in->opts_size : sizeof(*in);

	maru_client_opts_init(&c->opts, sizeof(c->opts));
	memcpy(&c->opts, in, n < sizeof(c->opts) ? n : sizeof(c->opts));
	c->opts.opts_size = sizeof(c->opts);
	if (!c->opts.uri || strlen(c->opts.uri) >= sizeof(c->uri))
		return -EINVAL;
	if (c->opts.data_path > MARU_DATA_TCP || c->opts.coherence > MARU_COHERENCE_FLUSH)
		return -EINVAL;
	if (!c->opts.timeout_ms)
		c->opts.timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!c->opts.max_conns)
		c->opts.max_conns = DEFAULT_MAX_CONNS;
	if (c->opts.max_conns > MAX_CONNS_LIMIT)
		c->opts.max_conns = MAX_CONNS_LIMIT;
	memcpy(c->uri, c->opts.uri, strlen(c->opts.uri) + 1);
	c->opts.uri = c->uri;
	if (c->opts.client_name)
		snprintf(c->name, sizeof(c->name), "%s", c->opts.client_name);
	c->opts.client_name = c->name;
	return 0;
}

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

void maru_client_on_generation(struct maru_client *c, maru_generation_cb cb, void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->gen_cb = cb;
	c->gen_arg = arg;
	pthread_mutex_unlock(&c->lock);
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

static const char *dp_name(enum maru_data_path p)
{
	switch (p) {
	case MARU_DATA_SHM: return "shm";
	case MARU_DATA_RDMA: return "rdma";
	case MARU_DATA_TCP: return "tcp";
	default: return "auto";
	}
}

static int select_rdma(struct maru_client *c)
{
	const char *why = "RDMA transfers are not implemented in this libmaru";
	int rc = rdma_probe(&why);

	if (rc == 0)
		why = "RDMA transfers are not implemented in this libmaru";
	log_warnx("%s: data=rdma unavailable: %s", c->uri, why);
	return -ENODEV;
}

/* Choose the data path for the session in c->s. Caller holds dp_lock (write). */
static int dp_select_locked(struct maru_client *c, const struct session *s)
{
	const char *why = NULL;
	int rc;

	shm_map_close(c->map);
	c->map = NULL;
	c->dp = NULL;
	if (c->opts.data_path == MARU_DATA_RDMA)
		return select_rdma(c);
	if (c->opts.data_path == MARU_DATA_TCP) {
		c->dp = &dp_tcp_ops;
		return 0;
	}
	rc = shm_map_open(s, &c->map, &why);
	if (rc == 0) {
		c->dp = &dp_shm_ops;
		return 0;
	}
	if (c->opts.data_path == MARU_DATA_SHM) {
		log_warnx("%s: data=shm: cannot map pool %s here: %s", c->uri,
			  s->pool_path, why);
		return -ENODEV;
	}
	log_debug("%s: pool %s not mappable here (%s): using tcp", c->uri, s->pool_path, why);
	c->dp = &dp_tcp_ops;
	return 0;
}

static int dp_select(struct maru_client *c)
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
	memcpy(s->pool_path, rep->pool_path, sizeof(s->pool_path));
	s->pool_path[sizeof(s->pool_path) - 1] = '\0';
	s->established = 1;
}

static int session_same(const struct session *s, const struct proto_hello_rep *rep)
{
	return rep->reclaimed && rep->generation == s->generation &&
	       !memcmp(rep->token, s->token, sizeof(s->token));
}

/*
 * Called by conn.c with hello_lock held after every successful HELLO.
 * Returns the session epoch the socket belongs to.
 */
uint64_t client_session_update(struct maru_client *c, const struct proto_hello_rep *rep)
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
		if (old_gen != rep->generation)
			notify_locked(c, old_gen, rep->generation);
	}
	session_fill(&c->s, rep);
	/* handles read the epoch without the lock (file_check) */
	epoch = __atomic_add_fetch(&c->s.epoch, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	if (epoch > 1)
		log_info("marud at %s: new session (generation %llu -> %llu)", c->uri,
			 (unsigned long long)old_gen, (unsigned long long)rep->generation);
	if (moved && dp_select(c))
		log_warnx("%s: pool moved and cannot be mapped again", c->uri);
	return epoch;
}

/* ---- construction ---- */

static int client_init_sync(struct maru_client *c)
{
	int rc;

	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->hello_lock, NULL);
	rc = cond_init_mono(&c->cond);
	if (!rc)
		rc = cond_init_mono(&c->notify_cond);
	if (rc)
		return rc;
	pthread_rwlock_init(&c->dp_lock, NULL);
	return -pthread_create(&c->notifier, NULL, notifier_main, c);
}

static void client_destroy_sync(struct maru_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->notify_stop = 1;
	pthread_cond_signal(&c->notify_cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->notifier, NULL);
	pthread_rwlock_destroy(&c->dp_lock);
	pthread_cond_destroy(&c->notify_cond);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->hello_lock);
	pthread_mutex_destroy(&c->lock);
}

static int client_alloc(const struct maru_client_opts *opts, struct maru_client **out)
{
	struct maru_client *c;
	unsigned int i;
	int rc;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	rc = opts_copy(c, opts);
	if (!rc)
		rc = addr_parse(c->uri, &c->addr);
	if (rc)
		goto out_free;
	c->conns = calloc(c->opts.max_conns, sizeof(*c->conns));
	if (!c->conns) {
		rc = -ENOMEM;
		goto out_free;
	}
	c->nconns = c->opts.max_conns;
	for (i = 0; i < c->nconns; i++)
		c->conns[i].fd = -1;
	c->next_reqid = 1;
	*out = c;
	return 0;

out_free:
	free(c);
	return rc;
}

int maru_client_new(const struct maru_client_opts *opts, struct maru_client **out)
{
	struct maru_client *c;
	int rc;

	if (!opts || !out)
		return -EINVAL;
	rc = client_alloc(opts, &c);
	if (rc)
		return rc;
	if (c->opts.key_file) {
		rc = auth_load_key(c->opts.key_file, c->key);
		if (rc)
			goto out_free;
		c->has_key = 1;
	}
	/* the caller's string need not outlive this call */
	c->opts.key_file = NULL;
	rc = client_init_sync(c);
	if (rc)
		goto out_free;
	rc = client_connect_first(c);
	if (!rc)
		rc = dp_select(c);
	if (rc)
		goto out_close;
	log_debug("%s: connected, generation %llu, data path %s", c->uri,
		  (unsigned long long)c->s.generation, c->dp->name);
	*out = c;
	return 0;

out_close:
	client_close_conns(c);
	client_destroy_sync(c);
out_free:
	sodium_memzero(c->key, sizeof(c->key));
	free(c->conns);
	free(c);
	return rc;
}

void maru_client_free(struct maru_client *c)
{
	struct maru_file *f;

	if (!c)
		return;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		f = c->files;
		pthread_mutex_unlock(&c->lock);
		if (!f)
			break;
		maru_file_close(f);
	}
	client_close_conns(c);
	client_destroy_sync(c);
	shm_map_close(c->map);
	sodium_memzero(c->key, sizeof(c->key));
	free(c->conns);
	free(c);
}

void client_file_link(struct maru_client *c, struct maru_file *f)
{
	pthread_mutex_lock(&c->lock);
	f->prev = NULL;
	f->next_file = c->files;
	if (c->files)
		c->files->prev = f;
	c->files = f;
	pthread_mutex_unlock(&c->lock);
}

void client_file_unlink(struct maru_client *c, struct maru_file *f)
{
	pthread_mutex_lock(&c->lock);
	if (f->prev)
		f->prev->next_file = f->next_file;
	else
		c->files = f->next_file;
	if (f->next_file)
		f->next_file->prev = f->prev;
	pthread_mutex_unlock(&c->lock);
}

/* ---- pool facts, statfs ---- */

int maru_client_pool_info(struct maru_client *c, struct maru_pool_info *out)
{
	if (!c || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lock);
	memcpy(out->uuid, c->s.uuid, sizeof(out->uuid));
	out->generation = c->s.generation;
	out->size = c->s.pool_size;
	out->align = c->s.pool_align;
	out->data_off = c->s.data_off;
	memcpy(out->path, c->s.pool_path, sizeof(out->path));
	pthread_mutex_unlock(&c->lock);
	memcpy(out->uri, c->uri, sizeof(out->uri));
	pthread_rwlock_rdlock(&c->dp_lock);
	out->data_path = c->dp ? c->dp->kind : MARU_DATA_TCP;
	pthread_rwlock_unlock(&c->dp_lock);
	out->coherence = c->opts.coherence;
	return 0;
}

int maru_statfs(struct maru_client *c, struct maru_statfs *out)
{
	struct req r = { .op = OP_STATFS };
	const struct proto_statfs *p;
	int rc;

	if (!c || !out)
		return -EINVAL;
	rc = client_call(c, &r);
	if (rc)
		return rc;
	p = r.rep;
	out->capacity = p->capacity;
	out->free = p->free;
	out->evictable = p->evictable;
	out->used = p->used;
	out->pending = p->pending;
	out->orphaned = p->orphaned;
	out->names = p->names;
	out->dirs = p->dirs;
	out->block = p->block;
	req_done(&r);
	return 0;
}

/* ---- stats text ---- */

struct text {
	char *buf;
	size_t len, cap;
	int err;
};

static void text_put(struct text *t, const char *p, size_t n)
{
	if (t->err)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = (t->len + n + 1) * 2;
		char *nb = realloc(t->buf, cap);

		if (!nb) {
			t->err = -ENOMEM;
			return;
		}
		t->buf = nb;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static void LOG_PRINTF(2, 3) text_printf(struct text *t, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		text_put(t, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void stats_dp(struct text *t, struct maru_client *c, const char *metric,
		     int bytes)
{
	static const enum maru_data_path paths[] = { MARU_DATA_SHM, MARU_DATA_RDMA, MARU_DATA_TCP };
	size_t i;

	text_printf(t, "# HELP %s %s moved by this client per data path and direction.\n"
		    "# TYPE %s counter\n", metric, bytes ? "Bytes" : "Transfers", metric);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct dp_counters *d = &c->st.dp[paths[i]];

		text_printf(t, "%s{path=\"%s\",dir=\"read\"} %llu\n", metric, dp_name(paths[i]),
			    (unsigned long long)(bytes ? d->rd_bytes : d->rd_ops));
		text_printf(t, "%s{path=\"%s\",dir=\"write\"} %llu\n", metric, dp_name(paths[i]),
			    (unsigned long long)(bytes ? d->wr_bytes : d->wr_ops));
	}
}

static void stats_counter(struct text *t, const char *metric, const char *help, uint64_t v)
{
	text_printf(t, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", metric, help, metric,
		    metric, (unsigned long long)v);
}

static void stats_client(struct text *t, struct maru_client *c)
{
	enum maru_data_path cur;
	uint64_t gen;
	int down;

	pthread_mutex_lock(&c->lock);
	down = c->down;
	gen = c->s.generation;
	pthread_mutex_unlock(&c->lock);
	pthread_rwlock_rdlock(&c->dp_lock);
	cur = c->dp ? c->dp->kind : MARU_DATA_TCP;
	pthread_rwlock_unlock(&c->dp_lock);
	stats_dp(t, c, "maru_client_bytes_total", 1);
	stats_dp(t, c, "maru_client_ops_total", 0);
	stats_counter(t, "maru_client_requests_total", "Requests sent to marud.", c->st.requests);
	stats_counter(t, "maru_client_reconnects_total", "Sockets reopened after an outage.",
		      c->st.reconnects);
	stats_counter(t, "maru_client_timeouts_total", "Calls that gave up with ETIMEDOUT.",
		      c->st.timeouts);
	stats_counter(t, "maru_client_sessions_total", "New sessions after the first (restart or expiry).",
		      c->st.new_sessions);
	text_printf(t, "# HELP maru_client_data_path Data path in use (1 for the active one).\n"
		    "# TYPE maru_client_data_path gauge\n");
	text_printf(t, "maru_client_data_path{path=\"shm\"} %d\n", cur == MARU_DATA_SHM);
	text_printf(t, "maru_client_data_path{path=\"rdma\"} %d\n", cur == MARU_DATA_RDMA);
	text_printf(t, "maru_client_data_path{path=\"tcp\"} %d\n", cur == MARU_DATA_TCP);
	text_printf(t, "# HELP maru_client_connected 1 while marud answers, 0 during an outage.\n"
		    "# TYPE maru_client_connected gauge\nmaru_client_connected %d\n", !down);
	text_printf(t, "# HELP maru_client_generation Pool generation of the current session.\n"
		    "# TYPE maru_client_generation gauge\nmaru_client_generation %llu\n",
		    (unsigned long long)gen);
}

ssize_t maru_stats_text(struct maru_client *c, char *buf, size_t len)
{
	struct req r = { .op = OP_STATS };
	struct text t = { 0 };
	ssize_t n;
	int rc;

	if (!c || (!buf && len))
		return -EINVAL;
	rc = client_call(c, &r);
	if (rc)
		return rc;
	text_put(&t, r.rep ? r.rep : "", r.rlen);
	req_done(&r);
	if (t.len && t.buf[t.len - 1] != '\n')
		text_put(&t, "\n", 1);
	stats_client(&t, c);
	if (t.err) {
		free(t.buf);
		return t.err;
	}
	if (len) {
		size_t k = t.len < len - 1 ? t.len : len - 1;

		memcpy(buf, t.buf, k);
		buf[k] = '\0';
	}
	n = (ssize_t)t.len;
	free(t.buf);
	return n;
}

/* ---- misc ---- */

const char *maru_strerror(int err)
{
	const char *s;

	switch (-err) {
	case 0: return "Success";
	case ETIMEDOUT: return "marud unreachable (timed out, still reconnecting)";
	case ESTALE: return "Stale handle: marud restarted (new pool generation)";
	case ENODEV: return "Data path unavailable on this host (pool not mappable or no device)";
	case EACCES: return "Authentication with marud failed or key file not private";
	case ENOSPC: return "Pool full (even after eviction)";
	case EIO: return "Transport or protocol failure talking to marud";
	case EBADF: return "Handle not open for writing (not a pending version)";
	}
	s = err < 0 ? strerrordesc_np(-err) : NULL;
	return s ? s : "Unknown error";
}

const char *maru_version(void)
{
	return MARU_VERSION;
}
