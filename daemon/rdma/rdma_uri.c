// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/rdma/rdma_uri.c: the one piece of the rdma data path every marud
 * build has: telling an rdma://ADDR:PORT listen address apart (config_check.c
 * checks it, listen.c leaves it to rdma_listen.c). Built without RDMA,
 * marud also gets the no-op stand-ins of rdma.h here, and refuses an
 * rdma:// listener when the configuration is checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "rdma.h"

int rdma_uri(const char *uri, char *host, size_t hostsz, uint16_t *port)
{
	const char *h, *colon;
	char *end;
	unsigned long p;

	if (strncmp(uri, "rdma://", 7))
		return 0;
	h = uri + 7;
	colon = strrchr(h, ':');
	if (!colon || colon == h || (size_t)(colon - h) >= hostsz)
		return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || !colon[1] || p == 0 || p > 65535)
		return -EINVAL;
	memcpy(host, h, (size_t)(colon - h));
	host[colon - h] = '\0';
	*port = (uint16_t)p;
	return 1;
}

#if !HAVE_RDMA
int rdma_srv_open(struct server *srv, struct rdma_srv **out)
{
	*out = NULL;
	return 0;
}

int rdma_srv_start(struct rdma_srv *r)
{
	return 0;
}

void rdma_srv_close(struct rdma_srv *r)
{
}

void rdma_hello(struct rdma_srv *r, struct session *s, const char *ctl_host,
		struct proto_hello_rep *rep)
{
}

int rdma_rkey(struct rdma_srv *r, struct server *srv, struct session *s,
	      const struct proto_rkey_req *q, struct pbuf *out)
{
	return -EOPNOTSUPP;
}

void rdma_end_begin(struct rdma_srv *r, struct session *s, uint64_t ino, int rw)
{
}

void rdma_end_done(struct rdma_srv *r)
{
}

void rdma_end_lock(struct rdma_srv *r)
{
}

void rdma_end_revoke(struct rdma_srv *r, struct session *s, uint64_t ino, int rw)
{
}

void rdma_session_end(void *r, struct session *s)
{
}

int rdma_stats(struct rdma_srv *r, struct pbuf *out)
{
	return 0;
}
#endif
