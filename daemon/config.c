// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/config.c: marud's configuration keys. It owns the defaults and
 * the table of keys (the long option names, '-' or '_') with the setter
 * that checks and stores each value; config_set() is the one way a value
 * gets into a struct config, from the file or the command line
 * (config_parse.c). The checks that need the system, the -n summary and
 * the SIGHUP comparison are config_check.c's. Nothing here opens the pool
 * or a socket.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "config.h"
#include "config_priv.h"
#include "proto.h"
#include "parse.h"

typedef int (*config_setter)(struct config *c, const char *v, int layer);

struct config_key {
	const char *name;
	config_setter set;
};

void config_errf(FILE *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputc('\n', err);
}

static int set_string(char *dst, size_t cap, const char *v)
{
	size_t n = strlen(v);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, v, n + 1);
	return 0;
}

static int set_pool(struct config *c, const char *v, int layer)
{
	static const char *const schemes[] = { "shm:", "file:", "dax:" };
	size_t i;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i]);

		if (!strncmp(v, schemes[i], n) && v[n])
			return set_string(c->pool, sizeof(c->pool), v);
	}
	return -EINVAL;
}

static int set_size(struct config *c, const char *v, int layer)
{
	return parse_size(v, &c->size);
}

static int set_listen(struct config *c, const char *v, int layer)
{
	if (strncmp(v, "unix:", 5) && strncmp(v, "tcp://", 6) && strncmp(v, "rdma://", 7))
		return -EINVAL;
	/* A layer that names listen addresses replaces the lower layer's list. */
	if (c->listen_layer != layer) {
		c->nlisten = 0;
		c->listen_layer = layer;
	}
	if (c->nlisten >= CONFIG_MAX_LISTEN)
		return -E2BIG;
	if (set_string(c->listen[c->nlisten], sizeof(c->listen[0]), v))
		return -ENAMETOOLONG;
	c->nlisten++;
	return 0;
}

static int set_eviction(struct config *c, const char *v, int layer)
{
	if (!strcmp(v, "lru"))
		c->eviction = DIR_EVICT_LRU;
	else if (!strcmp(v, "none"))
		c->eviction = DIR_EVICT_NONE;
	else
		return -EINVAL;
	return 0;
}

/* Seconds with up to three decimals ("30", "0.25"), kept in milliseconds. */
static int set_grace(struct config *c, const char *v, int layer)
{
	uint64_t ms = 0;
	const char *p = v;
	int frac = -1;

	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		if (*p == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (!isdigit((unsigned char)*p) || frac >= 3)
			return -EINVAL;
		if (ms > UINT64_MAX / 10 - 10)
			return -ERANGE;
		ms = ms * 10 + (uint64_t)(*p - '0');
		if (frac >= 0)
			frac++;
	}
	for (frac = frac < 0 ? 0 : frac; frac < 3; frac++) {
		if (ms > UINT64_MAX / 10)
			return -ERANGE;
		ms *= 10;
	}
	if (ms > 365ULL * 86400 * 1000)
		return -ERANGE;
	c->grace_ms = ms;
	return 0;
}

static int set_key_file(struct config *c, const char *v, int layer)
{
	return set_string(c->key_file, sizeof(c->key_file), v);
}

static int set_tls_cert(struct config *c, const char *v, int layer)
{
	(void)layer;
	return set_string(c->tls_cert, sizeof(c->tls_cert), v);
}

static int set_tls_key(struct config *c, const char *v, int layer)
{
	(void)layer;
	return set_string(c->tls_key, sizeof(c->tls_key), v);
}

static int set_tls_client_ca(struct config *c, const char *v, int layer)
{
	(void)layer;
	return set_string(c->tls_client_ca, sizeof(c->tls_client_ca), v);
}

static int set_pidfile(struct config *c, const char *v, int layer)
{
	return set_string(c->pidfile, sizeof(c->pidfile), v);
}

static int parse_ranged(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	int rc = parse_u64(v, out);

	if (rc)
		return rc;
	return *out < lo || *out > hi ? -ERANGE : 0;
}

static int set_max_conns(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 1, 1000000, &n);

	if (!rc)
		c->max_conns = (uint32_t)n;
	return rc;
}

static int set_u32_ranged(uint32_t *dst, const char *v, uint64_t lo, uint64_t hi)
{
	uint64_t n;
	int rc = parse_ranged(v, lo, hi, &n);

	if (!rc)
		*dst = (uint32_t)n;
	return rc;
}

static int set_handshake_timeout(struct config *c, const char *v, int layer)
{
	return set_u32_ranged(&c->handshake_timeout_ms, v, 100, 600000);
}

static int set_handshake_max(struct config *c, const char *v, int layer)
{
	return set_u32_ranged(&c->handshake_max, v, 1, 1000000);
}

static int set_handshake_per_source(struct config *c, const char *v, int layer)
{
	return set_u32_ranged(&c->handshake_per_source, v, 1, 1000000);
}

static int set_max_frame(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_size(v, &n);

	if (rc)
		return rc;
	/* Below 64 KiB a HELLO reply or a modest READDIR would not fit. */
	if (n < (64U << 10) || n > (1ULL << 30))
		return -ERANGE;
	c->max_frame = (uint32_t)n;
	return 0;
}

static int set_max_leases(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, UINT32_MAX, &n);

	if (!rc)
		c->max_leases = (uint32_t)n;
	return rc;
}

static int set_max_pending(struct config *c, const char *v, int layer)
{
	return parse_size(v, &c->max_pending);
}

/* TTL pins (daemon/dir/pinver.c): pinned bytes per pool, the longest pin. */
static int set_pin_max_bytes(struct config *c, const char *v, int layer)
{
	return parse_size(v, &c->pin_max_bytes);
}

static int set_pin_tenant_max_bytes(struct config *c, const char *v, int layer)
{
	return parse_size(v, &c->pin_tenant_max_bytes);
}

static int set_pin_max_seconds(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 1, 365ull * 86400, &n);

	if (!rc)
		c->pin_max_seconds = (uint32_t)n;
	return rc;
}

/* Milliseconds a change waits for other subscribers' acks (0: none). */
static int set_ack_publish_ms(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 60000, &n);

	if (!rc)
		c->ack_publish_ms = (uint32_t)n;
	return rc;
}

static int set_ack_ms(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 60000, &n);

	if (!rc)
		c->ack_ms = (uint32_t)n;
	return rc;
}

static int set_verbose(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 9, &n);

	if (!rc)
		c->verbose = (int)n;
	return rc;
}

static int parse_yesno(const char *v, int *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcmp(v, yes[i]) || !strcmp(v, no[i])) {
			*out = !strcmp(v, yes[i]);
			return 0;
		}
	}
	return -EINVAL;
}

static int set_fresh(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->fresh);
}

static int set_prealloc(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->prealloc);
}

static int set_journal(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->journal);
}

static int set_metrics_listen(struct config *c, const char *v, int layer)
{
	return set_string(c->metrics_listen, sizeof(c->metrics_listen), v);
}

static int set_metrics_remote(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->metrics_remote);
}

static int set_histograms(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->histograms);
}

static int set_meta_size(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_size(v, &n);

	if (rc)
		return rc;
	/* Room for two halves of a few records each, and no more than 1 TiB. */
	if (n < (64u << 10) || n > (1ULL << 40))
		return -ERANGE;
	c->meta_size = n;
	return 0;
}

static int set_region_ext(struct config *c, const char *v, int layer)
{
	return set_string(c->region_ext, sizeof(c->region_ext), v);
}

static int set_region_ext_config(struct config *c, const char *v, int layer)
{
	return set_string(c->region_ext_config, sizeof(c->region_ext_config), v);
}

static int set_memgen_poll(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 10, 60000, &n);

	if (!rc)
		c->memgen_poll_ms = (uint32_t)n;
	return rc;
}

static int set_memgen_grace(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 600000, &n);

	if (!rc)
		c->memgen_grace_ms = (uint32_t)n;
	return rc;
}

static const char *const rdma_rights_names[] = { "auto", "extent-mr", "trust-pool" };

const char *config_rdma_rights_name(int v)
{
	return v >= 0 && v < 3 ? rdma_rights_names[v] : "?";
}

/* rdma-rights: how rkey rights are enforced (daemon/rdma/rdma_mr.c). */
static int set_rdma_rights(struct config *c, const char *v, int layer)
{
	int i;

	(void)layer;
	for (i = 0; i < 3; i++) {
		if (!strcmp(v, rdma_rights_names[i])) {
			c->rdma_rights = i;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * cluster = etcd://HOST:PORT[,HOST:PORT...]/NAME: the etcd members and the
 * cluster's name (letters, digits, '.', '_', '-').
 */
static int set_cluster(struct config *c, const char *v, int layer)
{
	const char *hosts = v + strlen("etcd://"), *slash, *p;

	(void)layer;
	if (!*v) {
		c->cluster_etcd[0] = c->cluster_name[0] = '\0';
		return 0;
	}
	if (strncmp(v, "etcd://", 7) || !(slash = strchr(hosts, '/')) || slash == hosts ||
	    !slash[1] || strlen(slash + 1) >= sizeof(c->cluster_name) ||
	    (size_t)(slash - hosts) >= sizeof(c->cluster_etcd))
		return -EINVAL;
	for (p = slash + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
			return -EINVAL;
	for (p = hosts; p < slash; p++)
		if (!isalnum((unsigned char)*p) && !strchr(".-:,[]", *p))
			return -EINVAL;
	memcpy(c->cluster_etcd, hosts, (size_t)(slash - hosts));
	c->cluster_etcd[slash - hosts] = '\0';
	strcpy(c->cluster_name, slash + 1);
	return 0;
}

static int set_cluster_ttl(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 2, 3600, &n);

	(void)layer;
	if (!rc)
		c->cluster_ttl_s = (uint32_t)n;
	return rc;
}

static int set_cluster_weight(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 1, 1000000, &n);

	(void)layer;
	if (!rc)
		c->cluster_weight = (uint32_t)n;
	return rc;
}

static int set_cluster_zone(struct config *c, const char *v, int layer)
{
	(void)layer;
	return set_string(c->cluster_zone, sizeof(c->cluster_zone), v);
}

/* cluster-advertise = URI, once per URI (tcp:// or rdma://) */
static int set_cluster_advertise(struct config *c, const char *v, int layer)
{
	(void)layer;
	if (strncmp(v, "tcp://", 6) && strncmp(v, "rdma://", 7))
		return -EINVAL;
	if (c->ncluster_advertise == 8)
		return -E2BIG;
	return set_string(c->cluster_advertise[c->ncluster_advertise++],
			  sizeof(c->cluster_advertise[0]), v);
}

#define CLUSTER_PATH_KEY(fn, field)					\
	static int fn(struct config *c, const char *v, int layer)	\
	{								\
		(void)layer;						\
		return set_string(c->field, sizeof(c->field), v);	\
	}
CLUSTER_PATH_KEY(set_cluster_etcd_ca, cluster_etcd_ca)
CLUSTER_PATH_KEY(set_cluster_etcd_cert, cluster_etcd_cert)
CLUSTER_PATH_KEY(set_cluster_etcd_key, cluster_etcd_key)
CLUSTER_PATH_KEY(set_cluster_etcd_user, cluster_etcd_user)
CLUSTER_PATH_KEY(set_cluster_etcd_password_file, cluster_etcd_password_file)

static int set_drain(struct config *c, const char *v, int layer)
{
	(void)layer;
	return parse_yesno(v, &c->drain);
}

static const struct config_key config_keys[] = {
	{ "pool", set_pool },
	{ "size", set_size },
	{ "listen", set_listen },
	{ "eviction", set_eviction },
	{ "grace", set_grace },
	{ "key-file", set_key_file },
	{ "tls-cert", set_tls_cert },
	{ "tls-key", set_tls_key },
	{ "tls-client-ca", set_tls_client_ca },
	{ "max-conns", set_max_conns },
	{ "max-frame", set_max_frame },
	{ "handshake-timeout-ms", set_handshake_timeout },
	{ "handshake-max", set_handshake_max },
	{ "handshake-per-source", set_handshake_per_source },
	{ "max-leases", set_max_leases },
	{ "max-pending", set_max_pending },
	{ "pin-max-bytes", set_pin_max_bytes },
	{ "pin-max-seconds", set_pin_max_seconds },
	{ "pin-tenant-max-bytes", set_pin_tenant_max_bytes },
	{ "pidfile", set_pidfile },
	{ "verbose", set_verbose },
	{ "ack-timeout-publish-ms", set_ack_publish_ms },
	{ "ack-timeout-ms", set_ack_ms },
	{ "meta-size", set_meta_size },
	{ "fresh", set_fresh },
	{ "journal", set_journal },
	{ "prealloc", set_prealloc },
	{ "region-extension", set_region_ext },
	{ "region-extension-config", set_region_ext_config },
	{ "memory-generation-poll-ms", set_memgen_poll },
	{ "memory-generation-grace-ms", set_memgen_grace },
	{ "rdma-rights", set_rdma_rights },
	{ "cluster", set_cluster },
	{ "cluster-ttl", set_cluster_ttl },
	{ "cluster-weight", set_cluster_weight },
	{ "cluster-zone", set_cluster_zone },
	{ "cluster-advertise", set_cluster_advertise },
	{ "cluster-etcd-ca", set_cluster_etcd_ca },
	{ "cluster-etcd-cert", set_cluster_etcd_cert },
	{ "cluster-etcd-key", set_cluster_etcd_key },
	{ "cluster-etcd-user", set_cluster_etcd_user },
	{ "cluster-etcd-password-file", set_cluster_etcd_password_file },
	{ "drain", set_drain },
	{ "metrics-listen", set_metrics_listen },
	{ "metrics-remote", set_metrics_remote },
	{ "histograms", set_histograms },
};

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	set_string(c->pool, sizeof(c->pool), CONFIG_DEFAULT_POOL);
	set_string(c->listen[0], sizeof(c->listen[0]), CONFIG_DEFAULT_UNIX);
	set_string(c->listen[1], sizeof(c->listen[1]), CONFIG_DEFAULT_TCP);
	c->nlisten = 2;
	c->eviction = DIR_EVICT_LRU;
	c->grace_ms = 30 * 1000;
	c->journal = 1;
	c->max_conns = 1024;
	c->handshake_timeout_ms = 5000;
	c->handshake_max = 256;
	c->handshake_per_source = 64;
	c->max_frame = PROTO_MAX_FRAME;
	c->max_leases = 65536;
	c->max_pending = 0;
	c->pin_max_bytes = CONFIG_PIN_BYTES_HALF;
	c->pin_max_seconds = 86400;
	c->pin_tenant_max_bytes = CONFIG_PIN_BYTES_HALF;
	c->ack_publish_ms = 1000;
	c->ack_ms = 50;
	c->memgen_poll_ms = 100;
	c->memgen_grace_ms = 2000;
	c->cluster_ttl_s = 10;
	c->cluster_weight = 1;
	c->histograms = 1;
}

int config_set(struct config *c, const char *key, const char *value, int layer)
{
	char norm[32];
	size_t i, n = strlen(key);

	if (n == 0 || n >= sizeof(norm))
		return -ENOENT;
	for (i = 0; i <= n; i++)
		norm[i] = key[i] == '_' ? '-' : key[i];
	for (i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++)
		if (!strcmp(norm, config_keys[i].name))
			return config_keys[i].set(c, value, layer);
	return -ENOENT;
}
