// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/cluster/join.c: the membership record's contents from marud's
 * configuration (join.h). The URIs advertised are cluster-advertise's, or
 * else every tcp:// and rdma:// listen URI with a concrete address: a
 * wildcard (0.0.0.0, [::]) tells a client nothing, so it needs
 * cluster-advertise.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "join.h"
#include "log.h"

static int wildcard(const char *uri)
{
	const char *h = strstr(uri, "://");

	h = h ? h + 3 : uri;
	return !strncmp(h, "0.0.0.0", 7) || !strncmp(h, "[::]", 4) || !strncmp(h, "*:", 2);
}

static int add_uri(struct member_info *mi, const char *uri)
{
	int rdma = !strncmp(uri, "rdma://", 7);
	char (*list)[256] = rdma ? mi->rdma : mi->tcp;
	unsigned int *n = rdma ? &mi->nrdma : &mi->ntcp;

	if (strncmp(uri, "tcp://", 6) && !rdma)
		return 0;	/* unix sockets are this host's only */
	if (wildcard(uri)) {
		log_warnx("cluster: listen %s is a wildcard address clients cannot be "
			  "sent to: give the address to advertise with cluster-advertise", uri);
		return -EINVAL;
	}
	if (*n == MEMBER_MAX_URIS || strlen(uri) >= sizeof(mi->tcp[0]))
		return -E2BIG;
	strcpy(list[(*n)++], uri);
	return 0;
}

static int read_password(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

int cluster_join(const struct config *cfg, const uint8_t uuid[16], uint64_t capacity,
		 uint64_t generation, struct member **out)
{
	struct member_info mi;
	struct etcd_opts eo;
	char password[256] = "";
	unsigned int i;
	int rc;

	memset(&mi, 0, sizeof(mi));
	snprintf(mi.cluster, sizeof(mi.cluster), "%s", cfg->cluster_name);
	snprintf(mi.uuid, sizeof(mi.uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7],
		 uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
	for (i = 0; i < cfg->ncluster_advertise; i++)
		if ((rc = add_uri(&mi, cfg->cluster_advertise[i])))
			return rc;
	for (i = 0; !cfg->ncluster_advertise && i < cfg->nlisten; i++)
		if ((rc = add_uri(&mi, cfg->listen[i])))
			return rc;
	if (!mi.ntcp && !mi.nrdma) {
		log_warnx("cluster %s: no tcp:// or rdma:// address to advertise: listen on one "
			  "or set cluster-advertise", mi.cluster);
		return -EINVAL;
	}
	mi.capacity = capacity;
	mi.weight = cfg->cluster_weight;
	snprintf(mi.zone, sizeof(mi.zone), "%s", cfg->cluster_zone);
	mi.generation = generation;
	mi.draining = cfg->drain;
	mi.ttl_s = cfg->cluster_ttl_s;
	memset(&eo, 0, sizeof(eo));
	eo.endpoints = cfg->cluster_etcd;
	eo.ca = cfg->cluster_etcd_ca;
	eo.cert = cfg->cluster_etcd_cert;
	eo.key = cfg->cluster_etcd_key;
	if (cfg->cluster_etcd_user[0]) {
		eo.user = cfg->cluster_etcd_user;
		if (cfg->cluster_etcd_password_file[0] &&
		    (rc = read_password(cfg->cluster_etcd_password_file, password,
					sizeof(password)))) {
			log_warn(rc, "cluster %s: etcd password file %s", mi.cluster,
				 cfg->cluster_etcd_password_file);
			return rc;
		}
		eo.password = password;
	}
	eo.timeout_ms = 2000;
	rc = member_start(&eo, &mi, out);
	memset(password, 0, sizeof(password));
	if (rc)
		log_warn(rc, "cluster %s: starting the membership", mi.cluster);
	else
		log_info("cluster %s: joining through etcd %s as pool %s (%s)", mi.cluster,
			 cfg->cluster_etcd, mi.uuid, mi.draining ? "draining" : "active");
	return rc;
}
