// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/server_harness.c: the real-server fixture of the
 * server's unit tests (server_harness.h): a pool per server, socketpair
 * clients through the fuzzing seam, and reading reply frames back.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_harness.h"

#define SOCK_BUF	(4 << 20)

void th_config(struct th *t)
{
	static unsigned int seq;
	struct config *cfg = &t->cfg;

	memset(t, 0, sizeof(*t));
	snprintf(t->shm, sizeof(t->shm), "marud-ut-%ld-%u", (long)getpid(), seq++);
	snprintf(cfg->pool, sizeof(cfg->pool), "shm:%s", t->shm);
	cfg->size = (2ULL << 20) + 256 * 4096;
	cfg->eviction = DIR_EVICT_LRU;
	cfg->grace_ms = 30000;
	cfg->max_conns = 16;
	cfg->max_frame = TH_MAX_FRAME;
	cfg->handshake_timeout_ms = 5000;
	cfg->handshake_max = 256;
	cfg->handshake_per_source = 64;
}

int th_new(struct th *t, const uint8_t *key)
{
	return server_new(&t->cfg, key, TH_GENERATION, &t->srv);
}

int th_free(struct th *t)
{
	char path[96];
	int rc;

	rc = server_stop(t->srv);
	server_destroy(t->srv);
	t->srv = NULL;
	snprintf(path, sizeof(path), "/dev/shm/%s", t->shm);
	unlink(path);
	return rc;
}

void tc_open(struct th *t, struct tconn *tc)
{
	int sv[2], sz = SOCK_BUF;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	tc->t = t;
	tc->fd = sv[0];
	tc->sfd = sv[1];
	assert_int_equal(conn_fuzz_new(t->srv, tc->sfd, &tc->c), 0);
}

void tc_close(struct tconn *tc)
{
	if (!tc->c)
		return;
	conn_fuzz_free(tc->c);
	close(tc->fd);
	close(tc->sfd);
	tc->c = NULL;
}

void tc_send(int fd, uint16_t op, uint64_t reqid, uint64_t generation, const void *p,
	     size_t n)
{
	struct proto_hdr h;

	proto_hdr_init(&h, op, (uint32_t)n, reqid, generation, 0);
	assert_int_equal(proto_send(fd, &h, p, n, NULL, 0), 0);
}

int tc_step(struct tconn *tc)
{
	return conn_fuzz_request(tc->c);
}

/* Exactly n bytes, each wait bounded by ms. */
static int read_n(int fd, void *buf, size_t n, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t *b = buf;

	while (n) {
		ssize_t r = recv(fd, b, n, MSG_DONTWAIT);

		if (r == 0)
			return -ECONNRESET;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN)
			return -errno;
		if (r < 0) {
			if (poll(&pfd, 1, ms) != 1)
				return -EAGAIN;
			continue;
		}
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

int tc_reply(int fd, struct treply *r, int ms)
{
	int rc = read_n(fd, &r->h, sizeof(r->h), ms);

	if (rc)
		return rc;
	assert_int_equal(proto_hdr_check(&r->h, TH_MAX_FRAME), 0);
	r->len = r->h.len;
	return read_n(fd, r->p, r->len, ms);
}

int tc_call(struct tconn *tc, uint16_t op, uint64_t reqid, const void *p, size_t n,
	    struct treply *r, int *step)
{
	int rc;

	tc_send(tc->fd, op, reqid, TH_GENERATION, p, n);
	rc = tc_step(tc);
	if (step)
		*step = rc;
	assert_int_equal(tc_reply(tc->fd, r, 0), 0);
	assert_int_equal(r->h.op, op);
	assert_int_equal(r->h.reqid, reqid);
	assert_int_equal(r->h.generation, TH_GENERATION);
	return r->h.status;
}

int tc_hello(struct tconn *tc, const uint8_t *reclaim, uint8_t token[16])
{
	struct proto_hello_req req = { .proto_version = PROTO_VERSION, .pid = 1 };
	struct treply *r = malloc(sizeof(*r));
	int rc;

	assert_non_null(r);
	snprintf(req.client_name, sizeof(req.client_name), "unit");
	if (reclaim) {
		req.flags |= HELLO_F_RECLAIM;
		memcpy(req.token, reclaim, sizeof(req.token));
	}
	rc = tc_call(tc, OP_HELLO, 0, &req, sizeof(req), r, NULL);
	if (!rc && token)
		memcpy(token, r->p + offsetof(struct proto_hello_rep, token), 16);
	free(r);
	return rc;
}

size_t name_req(uint8_t *buf, uint64_t parent, const char *name, uint32_t mode)
{
	struct proto_name_req r = { .parent = parent, .mode = mode };

	r.namelen = (uint16_t)strlen(name);
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, r.namelen);
	return sizeof(r) + r.namelen;
}

int th_connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

int th_call(int fd, uint16_t op, uint64_t reqid, const void *p, size_t n,
	    struct treply *r)
{
	tc_send(fd, op, reqid, TH_GENERATION, p, n);
	assert_int_equal(tc_reply(fd, r, 5000), 0);
	assert_int_equal(r->h.op, op);
	assert_int_equal(r->h.reqid, reqid);
	assert_int_equal(r->h.generation, TH_GENERATION);
	return r->h.status;
}
