// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/config_check.c: what marud checks about a configuration before it
 * serves it, and how it shows one. It refuses an unsafe setup (a key file
 * with group/other access, a listen URI it cannot parse, non-loopback TCP
 * without a key), prints the -n summary and, on SIGHUP, logs what changed
 * and warns about what needs a restart.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "conf.h"
#include "config.h"
#include "config_priv.h"
#include "rdma.h"
#include "log.h"
#include "addr.h"
#include "keyfile.h"
#include "httpd.h"

#define KEY_FILE_MAX	(64U << 10)	/* same bound as libmaru */

static int ipv4_loopback(const char *host)
{
	struct in_addr a4;

	if (inet_pton(AF_INET, host, &a4) != 1)
		return -1;
	return (ntohl(a4.s_addr) >> 24) == 127;
}

static int ipv6_loopback(const char *host)
{
	struct in6_addr a6;

	if (inet_pton(AF_INET6, host, &a6) != 1)
		return -1;
	return IN6_IS_ADDR_LOOPBACK(&a6);
}

int config_host_is_loopback(const char *host)
{
	char h[256];
	size_t n = strlen(host);
	int r;

	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(h))
		return 0;
	memcpy(h, host, n);
	h[n] = '\0';
	r = ipv4_loopback(h);
	if (r >= 0)
		return r;
	r = ipv6_loopback(h);
	if (r >= 0)
		return r;
	/* Names: only "localhost" is trusted, never what a resolver says. */
	return !strcasecmp(h, "localhost");
}

/*
 * A key file in the keyfile.h format: the administrator key is its admin
 * line, or random bytes nobody holds when it has none (only named keys).
 */
static int keys_parse(const char *path, const uint8_t *buf, size_t len,
		      uint8_t key[CONFIG_KEY_BYTES], struct keyfile *kf, FILE *err)
{
	struct keyfile tmp, *k = kf ? kf : &tmp;
	char why[512];
	int rc;

	rc = keyfile_parse(path, (const char *)buf, len, k, why, sizeof(why));
	if (rc) {
		config_errf(err, "%s", why);
		return rc;
	}
	if (k->have_admin)
		crypto_generichash(key, CONFIG_KEY_BYTES, (const uint8_t *)k->admin.secret,
				   k->admin.secret_len, NULL, 0);
	else
		randombytes_buf(key, CONFIG_KEY_BYTES);
	if (!kf)
		keyfile_free(&tmp);
	return 0;
}

int config_load_keys(const char *path, uint8_t key[CONFIG_KEY_BYTES], struct keyfile *kf,
		     FILE *err)
{
	struct stat st;
	uint8_t *buf;
	int fd, rc;

	if (kf)
		memset(kf, 0, sizeof(*kf));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		config_errf(err, "key file %s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		config_errf(err, "key file %s: %s", path, strerror(-rc));
		goto out_close;
	}
	rc = -EPERM;
	if (!S_ISREG(st.st_mode)) {
		config_errf(err, "key file %s: not a regular file; refusing to start", path);
		goto out_close;
	}
	if (st.st_mode & 077) {
		config_errf(err, "key file %s: mode %04o gives group/other access; "
		     "it must be 0600: refusing to start", path,
		     (unsigned int)(st.st_mode & 07777));
		goto out_close;
	}
	rc = -EINVAL;
	if (st.st_size <= 0 || st.st_size > KEY_FILE_MAX) {
		config_errf(err, "key file %s: empty or larger than 64 KiB", path);
		goto out_close;
	}
	buf = malloc((size_t)st.st_size);
	rc = -ENOMEM;
	if (!buf)
		goto out_close;
	rc = (int)read(fd, buf, (size_t)st.st_size);
	if (rc != (int)st.st_size) {
		rc = rc < 0 ? -errno : -EIO;
		config_errf(err, "key file %s: short read", path);
		goto out_free;
	}
	rc = 0;
	if (keyfile_is_v1((const char *)buf, (size_t)st.st_size))
		rc = keys_parse(path, buf, (size_t)st.st_size, key, kf, err);
	else	/* a legacy file: its bytes are the administrator's secret */
		crypto_generichash(key, CONFIG_KEY_BYTES, buf, (unsigned long long)st.st_size,
				   NULL, 0);
out_free:
	sodium_memzero(buf, (size_t)st.st_size);
	free(buf);
out_close:
	close(fd);
	return rc;
}

int config_load_key(const char *path, uint8_t key[CONFIG_KEY_BYTES], FILE *err)
{
	return config_load_keys(path, key, NULL, err);
}

static int validate_listen(const char *uri, int have_key, FILE *err)
{
	struct maru_addr a;
	int rc = rdma_uri(uri, a.host, sizeof(a.host), &a.port);

	a.unix = 0;
	if (rc == 0)
		rc = addr_parse(uri, &a);
	else
		rc = rc < 0 ? rc : (HAVE_RDMA ? 0 : -EOPNOTSUPP);
	if (rc) {
		config_errf(err, "listen %s: not unix:PATH, tcp://ADDR:PORT or rdma://ADDR:PORT%s",
		     uri, rc == -EOPNOTSUPP ? " (marud built without RDMA)" : "");
		return rc;
	}
	if (a.unix || have_key)
		return 0;
	if (!config_host_is_loopback(a.host)) {
		config_errf(err, "listen %s: not a loopback address and no key-file is "
		     "configured; refusing to serve it", uri);
		return -EPERM;
	}
	return 0;
}

int config_validate(const struct config *c, uint8_t key[CONFIG_KEY_BYTES],
		    int *have_key, FILE *err)
{
	unsigned int i;
	int rc;

	*have_key = 0;
	if (c->key_file[0]) {
		rc = config_load_key(c->key_file, key, err);
		if (rc)
			return rc;
		*have_key = 1;
	}
	if (!c->tls_cert[0] != !c->tls_key[0] || (c->tls_client_ca[0] && !c->tls_cert[0])) {
		config_errf(err, "tls-cert and tls-key come together, and tls-client-ca needs them");
		return -EINVAL;
	}
	if (c->nlisten == 0) {
		config_errf(err, "no listen address");
		return -EINVAL;
	}
	for (i = 0; i < c->nlisten; i++) {
		rc = validate_listen(c->listen[i], *have_key, err);
		if (rc)
			return rc;
	}
	if (c->metrics_listen[0] && (rc = httpd_check_listen(c->metrics_listen,
							     c->metrics_remote))) {
		config_errf(err, "metrics-listen %s: %s", c->metrics_listen, rc == -EPERM ?
			    "not a loopback address; metrics-remote = yes (--metrics-remote) "
			    "serves it" : "expected ADDR:PORT with a numeric address");
		return rc;
	}
	return 0;
}

const char *config_eviction_name(enum dir_eviction e)
{
	return e == DIR_EVICT_NONE ? "none" : "lru";
}

void config_print(const struct config *c, FILE *out)
{
	unsigned int i;

	fprintf(out, "config file: %s\n", c->file[0] ? c->file : "(none)");
	fprintf(out, "pool: %s\n", c->pool);
	if (c->size)
		fprintf(out, "size: %llu bytes\n", (unsigned long long)c->size);
	else
		fprintf(out, "size: backend default\n");
	for (i = 0; i < c->nlisten; i++)
		fprintf(out, "listen: %s\n", c->listen[i]);
	fprintf(out, "eviction: %s\n", config_eviction_name(c->eviction));
	fprintf(out, "grace: %llu.%03llu s\n", (unsigned long long)(c->grace_ms / 1000),
		(unsigned long long)(c->grace_ms % 1000));
	fprintf(out, "key-file: %s\n", c->key_file[0] ? c->key_file :
		"(none: serving only loopback and unix sockets)");
	fprintf(out, "tls: %s%s%s%s%s\n", c->tls_cert[0] ? "TLS 1.3 on tcp listeners, certificate " :
		"off (tcp in clear)", c->tls_cert, c->tls_cert[0] ? ", key " : "", c->tls_key,
		c->tls_client_ca[0] ? ", client certificates required" : "");
	fprintf(out, "max-conns: %u\n", c->max_conns);
	fprintf(out, "max-frame: %u bytes\n", c->max_frame);
	fprintf(out, "handshake-timeout-ms: %u\n", c->handshake_timeout_ms);
	fprintf(out, "handshake-max: %u (at most 3/4 of max-conns: %u)\n", c->handshake_max,
		c->handshake_max < c->max_conns - c->max_conns / 4 ? c->handshake_max :
		c->max_conns - c->max_conns / 4);
	fprintf(out, "handshake-per-source: %u\n", c->handshake_per_source);
	fprintf(out, "max-leases: %u per session%s\n", c->max_leases,
		c->max_leases ? "" : " (unlimited)");
	fprintf(out, "max-pending: %llu bytes per session%s\n",
		(unsigned long long)c->max_pending, c->max_pending ? "" : " (unlimited)");
	if (c->pin_max_bytes == CONFIG_PIN_BYTES_HALF)
		fprintf(out, "pin-max-bytes: half the pool\n");
	else
		fprintf(out, "pin-max-bytes: %llu bytes%s\n", (unsigned long long)c->pin_max_bytes,
			c->pin_max_bytes ? "" : " (pins refused)");
	fprintf(out, "pin-max-seconds: %u\n", c->pin_max_seconds);
	if (c->pin_tenant_max_bytes == CONFIG_PIN_BYTES_HALF)
		fprintf(out, "pin-tenant-max-bytes: half each tenant's quota\n");
	else
		fprintf(out, "pin-tenant-max-bytes: %llu bytes (at most its quota)\n",
			(unsigned long long)c->pin_tenant_max_bytes);
	fprintf(out, "pidfile: %s\n", c->pidfile[0] ? c->pidfile : "(none)");
	fprintf(out, "ack-timeout-publish-ms: %u\n", c->ack_publish_ms);
	fprintf(out, "ack-timeout-ms: %u\n", c->ack_ms);
	if (c->meta_size)
		fprintf(out, "meta-size: %llu bytes\n", (unsigned long long)c->meta_size);
	else
		fprintf(out, "meta-size: as the pool records (new pool: 1/32 of it, at most 2 GiB)\n");
	fprintf(out, "journal: %s%s\n", c->journal ? "yes" : "no",
		c->fresh ? " (fresh: start empty)" : "");
	fprintf(out, "prealloc: %s\n", c->prealloc ? "yes" : "no");
	fprintf(out, "region-extension: %s\n", c->region_ext[0] ? c->region_ext : "(none)");
	if (c->region_ext[0])
		fprintf(out, "region-extension-config: %s\n"
			"memory-generation-poll-ms: %u\nmemory-generation-grace-ms: %u\n",
			c->region_ext_config, c->memgen_poll_ms, c->memgen_grace_ms);
	fprintf(out, "rdma-rights: %s\n", config_rdma_rights_name(c->rdma_rights));
	if (c->cluster_etcd[0]) {
		fprintf(out, "cluster: %s through etcd %s, ttl %u s, weight %u, zone '%s'%s\n",
			c->cluster_name, c->cluster_etcd, c->cluster_ttl_s, c->cluster_weight,
			c->cluster_zone, c->drain ? ", draining" : "");
		for (i = 0; i < c->ncluster_advertise; i++)
			fprintf(out, "cluster-advertise: %s\n", c->cluster_advertise[i]);
	} else {
		fprintf(out, "cluster: (none)\n");
	}
	fprintf(out, "metrics-listen: %s%s\n", c->metrics_listen[0] ? c->metrics_listen : "(none)",
		c->metrics_remote ? " (remote allowed)" : "");
	fprintf(out, "histograms: %s\n", c->histograms ? "yes" : "no");
	fprintf(out, "verbose: %d\n", c->verbose);
}

static int listen_differs(const struct config *a, const struct config *b)
{
	unsigned int i;

	if (a->nlisten != b->nlisten)
		return 1;
	for (i = 0; i < a->nlisten; i++)
		if (strcmp(a->listen[i], b->listen[i]))
			return 1;
	return 0;
}

static int restart_needed(const char *what, int differs)
{
	if (differs)
		log_warnx("reload: %s changed; it takes effect only after a restart", what);
	return differs;
}

int config_diff_log(const struct config *o, const struct config *n)
{
	int restart = 0;

	if (o->verbose != n->verbose)
		log_info("reload: verbose %d -> %d", o->verbose, n->verbose);
	if (o->grace_ms != n->grace_ms)
		log_info("reload: grace %llu ms -> %llu ms",
			 (unsigned long long)o->grace_ms, (unsigned long long)n->grace_ms);
	if (o->max_conns != n->max_conns)
		log_info("reload: max-conns %u -> %u", o->max_conns, n->max_conns);
	if (o->max_frame != n->max_frame)
		log_info("reload: max-frame %u -> %u", o->max_frame, n->max_frame);
	if (o->handshake_timeout_ms != n->handshake_timeout_ms)
		log_info("reload: handshake-timeout-ms %u -> %u", o->handshake_timeout_ms,
			 n->handshake_timeout_ms);
	if (o->handshake_max != n->handshake_max)
		log_info("reload: handshake-max %u -> %u", o->handshake_max, n->handshake_max);
	if (o->handshake_per_source != n->handshake_per_source)
		log_info("reload: handshake-per-source %u -> %u", o->handshake_per_source,
			 n->handshake_per_source);
	if (o->ack_publish_ms != n->ack_publish_ms)
		log_info("reload: ack-timeout-publish-ms %u -> %u", o->ack_publish_ms,
			 n->ack_publish_ms);
	if (o->ack_ms != n->ack_ms)
		log_info("reload: ack-timeout-ms %u -> %u", o->ack_ms, n->ack_ms);
	if (o->drain != n->drain)
		log_info("reload: drain %s -> %s", o->drain ? "yes" : "no", n->drain ? "yes" : "no");
	restart += restart_needed("cluster",
				  strcmp(o->cluster_etcd, n->cluster_etcd) != 0 ||
				  strcmp(o->cluster_name, n->cluster_name) != 0 ||
				  o->cluster_ttl_s != n->cluster_ttl_s ||
				  o->cluster_weight != n->cluster_weight ||
				  strcmp(o->cluster_zone, n->cluster_zone) != 0);
	restart += restart_needed("eviction", o->eviction != n->eviction);
	restart += restart_needed("max-leases", o->max_leases != n->max_leases);
	restart += restart_needed("max-pending", o->max_pending != n->max_pending);
	restart += restart_needed("pin-max-bytes", o->pin_max_bytes != n->pin_max_bytes);
	restart += restart_needed("pin-max-seconds", o->pin_max_seconds != n->pin_max_seconds);
	restart += restart_needed("pin-tenant-max-bytes",
				  o->pin_tenant_max_bytes != n->pin_tenant_max_bytes);
	restart += restart_needed("pool", strcmp(o->pool, n->pool) != 0);
	restart += restart_needed("size", o->size != n->size);
	restart += restart_needed("meta-size", o->meta_size != n->meta_size);
	restart += restart_needed("journal", o->journal != n->journal);
	restart += restart_needed("prealloc", o->prealloc != n->prealloc);
	restart += restart_needed("rdma-rights", o->rdma_rights != n->rdma_rights);
	restart += restart_needed("region-extension",
				  strcmp(o->region_ext, n->region_ext) != 0 ||
				  strcmp(o->region_ext_config, n->region_ext_config) != 0);
	restart += restart_needed("listen", listen_differs(o, n));
	restart += restart_needed("key-file", strcmp(o->key_file, n->key_file) != 0);
	restart += restart_needed("tls (on or off)", !o->tls_cert[0] != !n->tls_cert[0] ||
				  !o->tls_client_ca[0] != !n->tls_client_ca[0]);
	restart += restart_needed("pidfile", strcmp(o->pidfile, n->pidfile) != 0);
	restart += restart_needed("metrics-listen",
				  strcmp(o->metrics_listen, n->metrics_listen) != 0 ||
				  o->metrics_remote != n->metrics_remote);
	restart += restart_needed("histograms", o->histograms != n->histograms);
	return restart;
}
