/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/client.c: the life of a struct maru_client: options (defaults, the
 * caller's opts version), construction (key, first session, data path) and
 * teardown (handles, sockets, the notifier thread, the data path), the
 * callbacks the data paths are given (c->env), the pool
 * facts of maru_client_pool_info(), maru_strerror() and maru_version().
 * The session itself is session.c's, the sockets transport.c's.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "auth.h"
#include "client_priv.h"
#include "lease_cache.h"
#include "session.h"
#include "splice.h"
#include "tlsdial.h"
#include "transport.h"
#include "route.h"

#define DEFAULT_TIMEOUT_MS	5000
#define DEFAULT_MAX_CONNS	4
#define MAX_CONNS_LIMIT		256
#define DEFAULT_SPIN_US		50
#define SPIN_US_LIMIT		10000
#define DEFAULT_LEASE_CACHE_MS	5000

void maru_client_opts_init(struct maru_client_opts *opts, size_t size)
{
	struct maru_client_opts d = {
		.opts_size = sizeof(d),
		.data_path = MARU_DATA_AUTO,
		.coherence = MARU_COHERENCE_HW,
		.timeout_ms = DEFAULT_TIMEOUT_MS,
		.max_conns = DEFAULT_MAX_CONNS,
		.log_priority = LOG_INFO,
		.spin_us = DEFAULT_SPIN_US,
		.lease_cache_ms = DEFAULT_LEASE_CACHE_MS,
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
	if (c->opts.spin_us > SPIN_US_LIMIT)
		return -EINVAL;
	memcpy(c->uri, c->opts.uri, strlen(c->opts.uri) + 1);
	c->opts.uri = c->uri;
	if (c->opts.client_name)
		snprintf(c->name, sizeof(c->name), "%s", c->opts.client_name);
	c->opts.client_name = c->name;
	return 0;
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
	return session_notifier_start(c);
}

static void client_destroy_sync(struct maru_client *c)
{
	session_notifier_stop(c);
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
	/* what the data paths may ask of the layers above them */
	c->env.call = transport_call;
	c->env.facts = session_facts;
	*out = c;
	return 0;

out_free:
	free(c);
	return rc;
}

/*
 * The one-pool calls a routed client (maru+etcd://, lib/cluster/route.h)
 * makes on its pools' clients: handed down as a table, so that no file of
 * lib/cluster calls a public entry point that calls it.
 */
static const struct route_ops single_pool = {
	.client_new = maru_client_new,
	.client_free = maru_client_free,
	.pool_info = maru_client_pool_info,
	.epoch = session_epoch,
	.mkdir = maru_mkdir,
	.rmdir = maru_rmdir,
	.lookup = maru_lookup,
	.unlink = maru_unlink,
	.getattr = maru_getattr,
	.setattr = maru_setattr,
	.rename_seq = maru_rename_seq,
	.readdir = maru_readdir,
	.symlink = maru_symlink,
	.readlink = maru_readlink,
	.link = maru_link,
	.mknod = maru_mknod,
	.file_create = maru_file_create,
	.file_rewrite = maru_file_rewrite,
	.file_open = maru_file_open,
	.file_open_ino = maru_file_open_ino,
	.statfs = maru_statfs,
	.stats_text = maru_stats_text,
	.pin_set = maru_pin_set,
	.pin_get = maru_pin_get,
	.hint_actions = maru_hint_actions,
	.hint = maru_hint,
	.ns_usage = maru_ns_usage,
	.events_open = maru_events_open,
	.events_next = maru_events_next,
	.events_ack = maru_events_ack,
	.events_up = maru_events_up,
	.events_close = maru_events_close,
	.lc_take = maru_lease_cache_take,
	.lc_drop = maru_lease_cache_drop,
	.lc_clear = maru_lease_cache_clear,
	.lc_expire = maru_lease_cache_expire,
	.lc_count = maru_lease_cache_count,
};

int maru_client_new(const struct maru_client_opts *opts, struct maru_client **out)
{
	struct maru_client *c;
	int rc;

	if (!opts || !out)
		return -EINVAL;
	if (route_uri(opts->uri))
		return route_client_new(opts, &single_pool, out);
	rc = client_alloc(opts, &c);
	if (rc)
		return rc;
	if (c->opts.key_file) {
		rc = auth_load_key(c, c->opts.key_file, c->key, c->key_name);
		if (rc)
			goto out_free;
		c->has_key = 1;
	}
	/* the caller's string need not outlive this call */
	c->opts.key_file = NULL;
	rc = tlsdial_init(c);
	if (rc)
		goto out_free;
	rc = client_init_sync(c);
	if (rc)
		goto out_free;
	rc = splice_src_new(c);
	if (!rc)
		rc = lease_cache_new(c);
	if (!rc)
		rc = transport_connect_first(c);
	if (!rc)
		rc = session_dp_select(c);
	if (rc)
		goto out_close;
	clog_debug(c, "%s: connected, generation %llu, data path %s", c->uri,
		   (unsigned long long)c->s.generation, c->dp->name);
	*out = c;
	return 0;

out_close:
	transport_close_conns(c);
	client_destroy_sync(c);
	lease_cache_free(c);
	splice_src_free(c);
out_free:
	tlsdial_free(c);
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
	if (c->route) {
		route_client_free(c);
		return;
	}
	lease_cache_free(c);	/* its leases are among the files below */
	for (;;) {
		pthread_mutex_lock(&c->lock);
		f = c->files;
		pthread_mutex_unlock(&c->lock);
		if (!f)
			break;
		maru_file_close(f);
	}
	transport_close_conns(c);
	/* before the locks go: closing the path takes dp_lock */
	session_dp_close(c);
	splice_src_free(c);
	client_destroy_sync(c);
	tlsdial_free(c);
	sodium_memzero(c->key, sizeof(c->key));
	free(c->conns);
	free(c);
}

/* ---- pool facts ---- */

int maru_client_pool_info(struct maru_client *c, struct maru_pool_info *out)
{
	if (!c || !out)
		return -EINVAL;
	if (c->route)
		return route_pool_info(c, out);
	memset(out, 0, sizeof(*out));
	out->info_size = sizeof(*out);
	pthread_mutex_lock(&c->lock);
	memcpy(out->uuid, c->s.uuid, sizeof(out->uuid));
	out->generation = c->s.generation;
	out->size = c->s.pool_size;
	out->align = c->s.pool_align;
	out->data_off = c->s.data_off;
	memcpy(out->path, c->s.pool_path, sizeof(out->path));
	pthread_mutex_unlock(&c->lock);
	memcpy(out->uri, c->uri, sizeof(out->uri));
	out->data_path = session_dp_kind(c);
	out->coherence = c->opts.coherence;
	return 0;
}

uint64_t maru_client_epoch(struct maru_client *c, uint64_t id)
{
	if (!c)
		return 0;
	return c->route ? route_epoch(c, id) : session_epoch(c);
}

int maru_client_pool_at(struct maru_client *c, unsigned int i,
			struct maru_cluster_pool *member, struct maru_pool_info *info, int *state)
{
	if (!c)
		return -EINVAL;
	if (!c->route)
		return -ENOENT;
	return route_pool_at(c, i, member, info, state);
}

const char *maru_client_rdma_rights(struct maru_client *c)
{
	uint32_t f;

	if (!c)
		return NULL;
	pthread_mutex_lock(&c->lock);
	f = c->s.rdma_port ? c->s.rdma_flags : 0;
	pthread_mutex_unlock(&c->lock);
	if (f & RDMA_F_WINDOWS)
		return "windows";
	if (f & RDMA_F_EXTENT_MR)
		return "extent-mr";
	if (f & RDMA_F_WHOLE_POOL)
		return "trust-pool";
	return NULL;
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
