/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/fake_marud.h: a small marud for libmaru's unit tests: a
 * listener thread on a real Unix socket and one thread per accepted socket,
 * speaking the wire protocol (lib/common/proto/proto.h). It answers AUTH
 * (when given a key), HELLO (token, generation, `reclaimed`), refuses a
 * request of another generation with -ESTALE as marud does, and hands every
 * other request to the test's handler (default: PING and STATFS). A test
 * can drop every socket (marud's sockets lost, sessions kept), forget the
 * sessions, restart it (new generation) or stop it (marud gone).
 */
#ifndef FAKE_MARUD_H
#define FAKE_MARUD_H

#include <pthread.h>
#include <stdint.h>

#include "proto.h"

#define FAKE_MAX_CONNS	32
#define FAKE_GEN	99
#define FAKE_CAPACITY	12345

struct fake_marud;

/* One request as the handler sees it. */
struct fake_req {
	struct fake_marud *f;
	int fd;
	struct proto_hdr h;
	uint8_t *body;		/* h.len bytes */
};

/*
 * Answer q (fake_reply) and return 0, or return -1 to close the socket
 * without an answer. q->body is valid during the call only.
 */
typedef int (*fake_handler)(struct fake_req *q);

struct fake_hello {
	uint32_t flags;
	uint8_t token[16];
};

struct fake_marud {
	char path[108];
	int lfd;
	pthread_t accept_thread;

	pthread_mutex_t mu;		/* everything below */
	pthread_cond_t cond;		/* a request was counted */
	pthread_t threads[FAKE_MAX_CONNS];
	int fds[FAKE_MAX_CONNS];	/* -1 when closed */
	int nthreads;
	int accepted;			/* sockets accepted so far */
	int live;			/* sockets open now */

	uint64_t generation;
	uint8_t token[16];		/* the one session's token */
	uint64_t max_frame;		/* HELLO's max_frame; 0: PROTO_MAX_FRAME */
	uint64_t pool_size;
	int32_t hello_status;		/* != 0: refuse HELLO with it */
	int hello_delay_ms;		/* answer HELLO this late (or when the peer goes) */
	uint32_t hint_actions;		/* HELLO's hint_actions (lib/hint_test.c) */
	int cut_bodies;			/* close this many sockets mid-request ... */
	uint32_t cut_at;		/* ... after this many body bytes of a bigger one */

	int has_key;
	uint8_t prove_key[32];		/* the key marud proves with */
	uint8_t check_key[32];		/* the key it checks the client's mac with */

	struct fake_hello hellos[64];	/* HELLOs seen, in order */
	int nhellos;
	unsigned int ops[OP_MAX];	/* requests seen per op */

	fake_handler handler;
	void *arg;			/* for the handler */
};

/* Listen at a fresh path; handler NULL: PING and STATFS only. */
void fake_start(struct fake_marud *f, fake_handler handler, void *arg);
/* Stop listening, close every socket, join every thread: marud is gone. */
void fake_stop(struct fake_marud *f);
/* Close every socket; sessions are kept (a HELLO may reclaim them). */
void fake_drop(struct fake_marud *f);
/* Forget the session: the next HELLO gets a new token, reclaimed 0. */
void fake_forget(struct fake_marud *f);
/* A restarted marud: new generation, sessions forgotten, sockets closed. */
void fake_restart(struct fake_marud *f);
/* Both keys of marud (a 32-byte derived key, as the client hashes it). */
void fake_set_key(struct fake_marud *f, const uint8_t prove[32], const uint8_t check[32]);

/* Send the reply to q: status, then p1 and p2 as its payload. */
int fake_reply(struct fake_req *q, int32_t status, const void *p1, size_t n1,
	       const void *p2, size_t n2);
/* A copy of the counter of op / the HELLO count, under the lock. */
unsigned int fake_ops(struct fake_marud *f, uint16_t op);
int fake_nhellos(struct fake_marud *f);
/* Wait until fake_ops(f, op) >= n or ms pass; the count. */
unsigned int fake_wait_ops(struct fake_marud *f, uint16_t op, unsigned int n, int ms);
/* A maru+unix:// URI for f. */
void fake_uri(const struct fake_marud *f, char *buf, size_t cap);

/*
 * A client of f over tcp with timeout_ms and max_conns; log lines go to
 * the logbook below when b is given.
 */
struct logbook;
struct maru_client *fake_client(struct fake_marud *f, unsigned int timeout_ms,
				unsigned int max_conns, struct logbook *b, int prio);

/* A log callback target. */
struct logbook {
	pthread_mutex_t mu;
	char lines[64][256];
	int prio[64];
	int n;
};
void logbook_init(struct logbook *b);
void log_cb(void *arg, int priority, const char *msg);
/* 1 if a line containing needle was logged at prio (-1: any priority). */
int logged(struct logbook *b, const char *needle, int prio);

#endif
