/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/conf.h: marud's configuration: defaults and keys (config.c), the
 * `key = value` file, -D overrides and long options (config_parse.c),
 * validation (key file mode, loopback rule), the -n summary and the SIGHUP
 * diff (config_check.c). config.c owns struct config; the server reads a
 * copy and run.c rebuilds one on SIGHUP.
 *
 * (Named conf.h rather than config.h: the build's generated config.h, which
 * lib/common/failpoint.h includes as "config.h", would otherwise be shadowed by a
 * daemon/config.h for every file compiled in daemon/.)
 */
#ifndef MARUD_CONF_H
#define MARUD_CONF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dir.h"

#define CONFIG_MAX_LISTEN	16
#define CONFIG_MAX_DEFINES	64
#define CONFIG_KEY_BYTES	32

#define CONFIG_DEFAULT_POOL	"shm:marud-pool"
#define CONFIG_DEFAULT_UNIX	"unix:/run/marud/marud.sock"
#define CONFIG_DEFAULT_TCP	"tcp://127.0.0.1:7450"
#define CONFIG_PIN_BYTES_HALF	UINT64_MAX	/* pin-max-bytes unset */

struct config {
	/* Process-level flags (command line only). */
	int foreground;
	int check_only;
	int verbose;
	char file[PATH_MAX];

	char pool[PATH_MAX];
	uint64_t size;			/* 0: backend default */
	char listen[CONFIG_MAX_LISTEN][PATH_MAX];
	unsigned int nlisten;
	int listen_layer;		/* which layer set listen (internal) */
	enum dir_eviction eviction;
	uint64_t grace_ms;
	char key_file[PATH_MAX];
	/* TLS on tcp listeners (daemon/srvtls.c): certificate, key, client CA. */
	char tls_cert[PATH_MAX];
	char tls_key[PATH_MAX];
	char tls_client_ca[PATH_MAX];
	uint32_t max_conns;
	/* Handshake limits (daemon/admit.c): unauthenticated connections. */
	uint32_t handshake_timeout_ms;	/* AUTH (or HELLO without a key) by then */
	uint32_t handshake_max;		/* at once, at most 3/4 of max_conns */
	uint32_t handshake_per_source;	/* at once from one source address */
	uint32_t max_frame;
	uint32_t max_leases;
	uint64_t max_pending;
	/* TTL pins: pinned bytes per pool (CONFIG_PIN_BYTES_HALF: half the
	 * pool's data bytes; 0: pins refused) and the longest pin (clamped). */
	uint64_t pin_max_bytes;
	uint32_t pin_max_seconds;
	/* each tenant's pinned bytes (CONFIG_PIN_BYTES_HALF: half its quota,
	 * no cap of its own without one), never more than its quota */
	uint64_t pin_tenant_max_bytes;
	char pidfile[PATH_MAX];
	uint32_t ack_publish_ms;	/* PUBLISH waits for other mounts' acks */
	uint32_t ack_ms;		/* RENAME, UNLINK, MKDIR, RMDIR, SETATTR */
	/* Warm restart (daemon/persist/): the directory journal in the pool. */
	uint64_t meta_size;		/* 0: as recorded, else 1/32 of the pool */
	int fresh;			/* start empty, forgetting the pool's names */
	int journal;			/* 0: keep no journal (--no-journal) */
	int prealloc;			/* reserve every pool page at start */
	/* Region extension (daemon/ext/): NAME or PATH, and its config. */
	char region_ext[PATH_MAX];
	char region_ext_config[1024];
	uint32_t memgen_poll_ms;	/* memory_generation() asked this often */
	uint32_t memgen_grace_ms;	/* unknown this long: pool out of use */
	int rdma_rights;		/* 0 auto, 1 extent-mr, 2 trust-pool (rdma/) */
	/* Cluster membership in etcd (daemon/cluster/): "" none. */
	char cluster_etcd[PATH_MAX];	/* "host:port[,host:port...]" */
	char cluster_name[64];
	uint32_t cluster_ttl_s;
	uint32_t cluster_weight;
	char cluster_zone[64];
	char cluster_advertise[8][256];	/* URIs clients reach; none: the tcp listens */
	unsigned int ncluster_advertise;
	char cluster_etcd_ca[PATH_MAX], cluster_etcd_cert[PATH_MAX], cluster_etcd_key[PATH_MAX];
	char cluster_etcd_user[64];
	char cluster_etcd_password_file[PATH_MAX];
	int drain;			/* take no new names (--drain) */
	/* The HTTP /metrics endpoint (daemon/metrics.c, lib/common/httpd.c). */
	char metrics_listen[256];	/* ADDR:PORT, "" none */
	int metrics_remote;		/* a non-loopback metrics address allowed */
	int histograms;			/* latency histograms observed (default yes) */
};

/* One command-line override; value points into argv. */
struct config_def {
	char key[32];
	const char *value;
};

/* Command-line state kept for SIGHUP: the overrides replayed over the file. */
struct config_args {
	int foreground, check_only, verbose;
	const char *file;
	struct config_def defs[CONFIG_MAX_DEFINES];	/* in order */
	unsigned int ndefs;
};

/*
 * Parse argv (getopt_long). Returns 0, 1 when usage was printed because of
 * --help, or -EINVAL after printing usage to stderr.
 */
int config_parse_args(int argc, char **argv, struct config_args *a);
/*
 * Build a config: defaults, then the file (if any), then the overrides.
 * Errors are written to `err` (may be NULL) with the file and line.
 */
int config_load(const struct config_args *a, struct config *c, FILE *err);
/* Apply one "key" and "value" at a layer (1 file, 2 command line). */
int config_set(struct config *c, const char *key, const char *value, int layer);
/*
 * Checks that need the system: key file mode, listen URIs, loopback rule
 * without a key. Fills key (when a key file is set) and *have_key.
 */
int config_validate(const struct config *c, uint8_t key[CONFIG_KEY_BYTES],
		    int *have_key, FILE *err);
/*
 * Read and hash the key file: regular, mode 0600 (no group/other bits).
 * key: the administrator (unscoped) key. A file in the keyfile.h format
 * is parsed strictly ("FILE:LINE: what" to err); config_load_keys() also
 * hands its named keys to kf (may be NULL; keyfile_free() it), which a
 * legacy file leaves empty.
 */
struct keyfile;
int config_load_key(const char *path, uint8_t key[CONFIG_KEY_BYTES], FILE *err);
int config_load_keys(const char *path, uint8_t key[CONFIG_KEY_BYTES], struct keyfile *kf,
		     FILE *err);
/* 1 if a tcp listen host is a loopback address (127/8, ::1, localhost). */
int config_host_is_loopback(const char *host);
void config_print(const struct config *c, FILE *out);
/*
 * Compare for SIGHUP: log what changed, and as warnings what needs a
 * restart. Returns the number of changes that need a restart.
 */
int config_diff_log(const struct config *old, const struct config *nc);
const char *config_eviction_name(enum dir_eviction e);
const char *config_rdma_rights_name(int v);
void config_usage(FILE *out);

#endif
