// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/server.c: marud's server as a whole, for run.c. It owns struct
 * server (server_priv.h) for the life of the process and wires its parts
 * together: the pool mapping, the allocator, the directory (with io.c's
 * copy callback), the session table, the connection list (conn.c), the
 * subscriber registry (subscribe.c), the handshake limits (admit.c) and the
 * listeners (listen.c); it starts
 * them, stops them in order, applies a reload. The request path lives below
 * it: listen.c -> conn.c -> dispatch.c -> subscribe.c, handlers/ -> wire.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "admit.h"
#include "conn.h"
#include "keys.h"
#include "dir.h"
#include "ext.h"
#include "join.h"
#include "listen.h"
#include "hist.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"
#include "rdma.h"
#include "persist.h"
#include "recover.h"
#include "server.h"
#include "server_priv.h"
#include "srvtls.h"
#include "session.h"
#include "subscribe.h"

uint64_t server_generation(const struct server *srv)
{
	return srv->generation;
}

static int server_dir(struct server *srv)
{
	struct pool *pl = srv->pool;
	uint64_t block = 4096, align = pl->align >= block ? pl->align : block;
	uint64_t size = (pl->size - pl->data_off) & ~(block - 1);
	struct dir_opts o = {
		.eviction = srv->cfg.eviction,
		.copy = hdl_io_copy,
		.copy_arg = pl->base,
		.max_leases = srv->cfg.max_leases,
		.max_pending_bytes = srv->cfg.max_pending,
		.retire = srv->ext ? ext_retire : NULL,
		.retire_arg = srv->ext,
	};
	int rc;

	if (pl->data_off >= pl->size)
		return -ENOSPC;
	rc = alloc_new(pl->data_off, size, block, align, &srv->alloc);
	if (rc)
		return rc;
	o.alloc = srv->alloc;
	o.pin_max_bytes = srv->cfg.pin_max_bytes == CONFIG_PIN_BYTES_HALF ? size / 2
								 : srv->cfg.pin_max_bytes;
	o.pin_max_seconds = srv->cfg.pin_max_seconds;
	return dir_new(&o, &srv->dir);
}

/* The fields, then the locks; on error no lock is left to destroy. */
static int server_init(struct server *srv, const struct config *cfg, const uint8_t *key,
		       uint64_t generation)
{
	unsigned int i;
	int rc;

	srv->cfg = *cfg;
	srv->generation = generation;
	srv->wake[0] = srv->wake[1] = -1;
	for (i = 0; i < CONFIG_MAX_LISTEN; i++)
		srv->listeners[i].fd = -1;
	if (key) {
		memcpy(srv->key, key, CONFIG_KEY_BYTES);
		srv->have_key = 1;
	}
	atomic_store(&srv->max_conns, cfg->max_conns);
	atomic_store(&srv->max_frame, cfg->max_frame);
	atomic_store(&srv->ack_publish_ms, cfg->ack_publish_ms);
	atomic_store(&srv->ack_ms, cfg->ack_ms);
	atomic_store(&srv->hs_timeout_ms, cfg->handshake_timeout_ms);
	atomic_store(&srv->hs_max, cfg->handshake_max);
	atomic_store(&srv->hs_per_source, cfg->handshake_per_source);
	rc = tenants_init(&srv->tenants);
	if (rc)
		return rc;
	rc = conns_init(srv);
	if (rc)
		goto out_tenants;
	rc = admit_init(srv);
	if (rc)
		goto out_conns;
	rc = -pthread_mutex_init(&srv->reborn_lock, NULL);
	if (rc)
		goto out_admit;
	rc = subs_init(srv);
	if (!rc)
		return 0;
	pthread_mutex_destroy(&srv->reborn_lock);
out_admit:
	admit_destroy(srv);
out_conns:
	conns_destroy(srv);
out_tenants:
	tenants_fini(&srv->tenants);
	return rc;
}

/*
 * The region extension (refusing to start when it cannot load), the pool
 * mapping, and the extension told of it. *fresh: start the directory
 * empty (asked for, or the memory lost its contents).
 */
static int server_pool(struct server *srv, int *fresh)
{
	const struct config *cfg = &srv->cfg;
	int rc, memfresh = 0;

	*fresh = cfg->fresh;
	if (cfg->region_ext[0]) {
		rc = ext_load(cfg->region_ext, cfg->region_ext_config, &srv->ext);
		if (rc)
			return rc;
	}
	rc = pool_open_meta(cfg->pool, cfg->size, cfg->meta_size, srv->generation, &srv->pool);
	if (rc) {
		log_warn(rc, "pool %s", cfg->pool);
		return rc;
	}
	if (cfg->prealloc && (rc = pool_reserve(srv->pool))) {
		pool_discard_created(srv->pool);
		return rc;
	}
	if (!srv->ext)
		return 0;
	rc = ext_attach(srv->ext, srv->pool,
			cfg->fresh || srv->pool->created || srv->pool->sb_fresh, &memfresh);
	*fresh |= memfresh;
	/* refused: a pool made only now is nobody's (a big /dev/shm file) */
	if (rc)
		pool_discard_created(srv->pool);
	return rc;
}

/* The extension's memory was reset: run.c restarts marud in place. */
static void server_memory_reset(void *arg)
{
	struct server *srv = arg;

	atomic_store(&srv->reset, 1);
	kill(getpid(), SIGUSR2);
}

/*
 * The extension cannot tell its memory generation: opens are refused from
 * now on, so the mounts must stop serving them from the leases they keep
 * (libmaru's lease cache, maru_lease_cache_*). An overflow event tells
 * every subscriber to drop all it caches.
 */
static void server_memory_unknown(void *arg)
{
	struct server *srv = arg;

	dir_events_gap(srv->dir);
}

/* A session ended: the rdma data path revokes its windows, the hints end. */
static void session_ended(void *arg, struct session *s)
{
	struct server *srv = arg;

	rdma_session_end(srv->rdma, s);
	ext_session_end(srv->ext, ext_open_session_id(session_token(s), SESSION_TOKEN_BYTES));
}

int server_reset_asked(const struct server *srv)
{
	return atomic_load(&srv->reset);
}

int server_new(const struct config *cfg, const uint8_t *key, uint64_t generation,
	       struct server **out)
{
	struct server *srv = calloc(1, sizeof(*srv));
	struct persist_owner own;
	int rc, fresh;

	if (!srv)
		return -ENOMEM;
	rc = server_init(srv, cfg, key, generation);
	if (rc) {
		free(srv);
		return rc;
	}
	rc = sodium_init() < 0 ? -EIO : 0;
	if (!rc && pipe2(srv->wake, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc)
		goto out_destroy;
	rc = server_pool(srv, &fresh);
	if (rc)
		goto out_destroy;
	rc = server_dir(srv);
	if (rc) {
		log_warn(rc, "directory over pool %s", cfg->pool);
		goto out_destroy;
	}
	/* Warm restart: the directory the pool's journal holds, before serving. */
	dir_persist_owner(srv->dir, &own);
	rc = persist_start(srv->pool, &own,
			   &(struct persist_start_opts){ .journal = cfg->journal, .fresh = fresh },
			   &srv->persist);
	if (rc)
		goto out_destroy;
	dir_set_persist(srv->dir, srv->persist);
	rc = sessions_new(srv->dir, cfg->grace_ms, &srv->sessions);
	if (rc)
		goto out_destroy;
	/* scoped keys: their roots are directories of the (restored) namespace */
	rc = keys_load(srv, 0);
	if (rc)
		goto out_destroy;
	rc = srvtls_open(srv);
	if (rc)
		goto out_destroy;
	rc = listen_open_all(srv);
	if (rc)
		goto out_destroy;
	rc = rdma_srv_open(srv, &srv->rdma);
	if (rc)
		goto out_destroy;
	sessions_set_end_hook(srv->sessions, session_ended, srv);
	*out = srv;
	return 0;
out_destroy:
	server_destroy(srv);
	return rc;
}

int server_start(struct server *srv)
{
	int rc;

	rc = sessions_start_reaper(srv->sessions);
	if (rc)
		return rc;
	rc = rdma_srv_start(srv->rdma);
	if (rc)
		return rc;
	if (srv->ext) {
		rc = ext_watch_start(srv->ext, srv->cfg.memgen_poll_ms, srv->cfg.memgen_grace_ms,
				     server_memory_reset, server_memory_unknown, srv);
		if (rc)
			return rc;
	}
	rc = listen_accept_start(srv);
	if (rc)
		return rc;
	/* off by the option; else as MARU_HISTOGRAMS says (default on) */
	if (!srv->cfg.histograms)
		hist_enable(0);
	rc = metrics_start(srv);
	if (rc || !srv->cfg.cluster_etcd[0])
		return rc;
	/* last: a pool joins only once it serves */
	return cluster_join(&srv->cfg, srv->pool->uuid, alloc_capacity(srv->alloc),
			    srv->generation, &srv->member);
}

int server_stop(struct server *srv)
{
	int rc;

	atomic_store(&srv->stopping, 1);
	/* first: clients stop sending new names here */
	member_stop(srv->member);
	srv->member = NULL;
	metrics_stop(srv);
	ext_watch_stop(srv->ext);
	listen_accept_stop(srv);
	listen_close_all(srv);
	conns_close_all(srv);
	sessions_destroy(srv->sessions);
	srv->sessions = NULL;
	rdma_srv_close(srv->rdma);
	srv->rdma = NULL;
	rc = dir_check(srv->dir);
	if (rc)
		log_warnx("shutdown: directory check failed: %s", strerror(-rc));
	else
		log_info("shutdown: directory check passed, accounting exact");
	return rc;
}

void server_destroy(struct server *srv)
{
	if (!srv)
		return;
	if (srv->accepting || atomic_load(&srv->nconns))
		server_stop(srv);
	metrics_stop(srv);
	listen_close_all(srv);
	srvtls_close(srv);
	sessions_destroy(srv->sessions);
	rdma_srv_close(srv->rdma);
	if (srv->dir)
		dir_destroy(srv->dir);
	persist_close(srv->persist);	/* after the directory stopped its thread */
	ext_watch_stop(srv->ext);
	ext_unload(srv->ext);	/* after the directory: it retires into it */
	if (srv->alloc)
		alloc_destroy(srv->alloc);
	if (srv->pool)
		pool_close(srv->pool);
	if (srv->wake[0] >= 0)
		close(srv->wake[0]);
	if (srv->wake[1] >= 0)
		close(srv->wake[1]);
	subs_destroy(srv);
	pthread_mutex_destroy(&srv->reborn_lock);
	admit_destroy(srv);
	conns_destroy(srv);
	tenants_fini(&srv->tenants);
	sodium_memzero(srv->key, sizeof(srv->key));
	free(srv);
}

void server_reload(struct server *srv, const struct config *nc)
{
	config_diff_log(&srv->cfg, nc);
	log_set_verbose(nc->verbose);
	sessions_set_grace(srv->sessions, nc->grace_ms);
	atomic_store(&srv->max_conns, nc->max_conns);
	atomic_store(&srv->max_frame, nc->max_frame);
	atomic_store(&srv->ack_publish_ms, nc->ack_publish_ms);
	atomic_store(&srv->ack_ms, nc->ack_ms);
	atomic_store(&srv->hs_timeout_ms, nc->handshake_timeout_ms);
	atomic_store(&srv->hs_max, nc->handshake_max);
	atomic_store(&srv->hs_per_source, nc->handshake_per_source);
	srv->cfg.verbose = nc->verbose;
	srv->cfg.grace_ms = nc->grace_ms;
	srv->cfg.max_conns = nc->max_conns;
	srv->cfg.max_frame = nc->max_frame;
	srv->cfg.ack_publish_ms = nc->ack_publish_ms;
	srv->cfg.ack_ms = nc->ack_ms;
	srv->cfg.handshake_timeout_ms = nc->handshake_timeout_ms;
	srv->cfg.handshake_max = nc->handshake_max;
	srv->cfg.handshake_per_source = nc->handshake_per_source;
	if (srv->member && nc->drain != srv->cfg.drain)
		member_set_draining(srv->member, nc->drain);
	srv->cfg.drain = nc->drain;
}
