/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/server_harness.h: a real marud server for the server's
 * unit tests: server_new() over a fresh shm pool (2 MiB superblock area and
 * a few hundred data blocks), and client connections driven either on the
 * test's thread through server.h's fuzzing seam (one request per
 * th_step()) or over a real listener. Replies are read back as frames.
 */
#ifndef TESTS_SERVER_HARNESS_H
#define TESTS_SERVER_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "proto.h"
#include "server.h"

#define TH_GENERATION	0x5eedULL
#define TH_MAX_FRAME	(1U << 20)

struct th {
	struct server *srv;
	struct config cfg;
	char shm[64];		/* /dev/shm/<name> of the pool */
};

/* A client on a socketpair, served through the seam. */
struct tconn {
	struct th *t;
	struct conn *c;
	int fd;			/* the client's end (non-blocking) */
	int sfd;		/* marud's end */
};

struct treply {
	struct proto_hdr h;
	uint32_t len;
	uint8_t p[TH_MAX_FRAME];
};

/* A config for a fresh shm pool, no listener, no key. */
void th_config(struct th *t);
/* server_new over t->cfg (th_config first, then adjust); 0 or -errno. */
int th_new(struct th *t, const uint8_t *key);
/* server_stop (its dir_check result is returned), destroy, unlink the pool. */
int th_free(struct th *t);

void tc_open(struct th *t, struct tconn *tc);
void tc_close(struct tconn *tc);
/* Write one request frame to the client end. */
void tc_send(int fd, uint16_t op, uint64_t reqid, uint64_t generation, const void *p,
	     size_t n);
/* Let the server take one request; conn_fuzz_request()'s result. */
int tc_step(struct tconn *tc);
/*
 * Read one reply frame from fd, waiting at most ms; 0, -EAGAIN when none
 * came, -ECONNRESET on EOF.
 */
int tc_reply(int fd, struct treply *r, int ms);
/*
 * Send, step, read the one reply: its status (*step: the step's result,
 * may be NULL). Fails the test when there is no reply.
 */
int tc_call(struct tconn *tc, uint16_t op, uint64_t reqid, const void *p, size_t n,
	    struct treply *r, int *step);
/* HELLO (new session, or reclaim token); fills token if not NULL. */
int tc_hello(struct tconn *tc, const uint8_t *reclaim, uint8_t token[16]);
/* A blocking client socket connected to the Unix socket at path. */
int th_connect_unix(const char *path);
/*
 * One request over a real socket served by a connection thread: send, read
 * the reply (at most 5 s), check its op, reqid and generation; its status.
 */
int th_call(int fd, uint16_t op, uint64_t reqid, const void *p, size_t n,
	    struct treply *r);
/* A name request (MKDIR, RMDIR, LOOKUP, UNLINK) under parent. */
size_t name_req(uint8_t *buf, uint64_t parent, const char *name, uint32_t mode);

#endif
