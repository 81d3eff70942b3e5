/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/tcp_pipe.h: sockets of the tcp data path on which READ and WRITE
 * frames are pipelined (sent without waiting for the previous reply; marud
 * answers one connection's frames in order), the pool of idle ones, and the
 * memory budget (opts.stream_bytes) of what the streams hold.
 */
#ifndef MARU_TCP_PIPE_H
#define MARU_TCP_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "client_priv.h"

/* Default opts.stream_bytes, and the frame size of a stream. */
#define TCP_STREAM_DEFAULT	(64u << 20)
#define TCP_STREAM_FRAME	(1u << 20)

/* One pipelined socket; fd < 0: none. out: frames sent, replies not read. */
struct pipe {
	int fd;
	_Atomic unsigned int out;	/* a reader receives without the stream's lock */
	uint64_t epoch;		/* the session it reclaimed */
	uint64_t generation;
	uint32_t max_reply;
};

#define PIPE_NONE	{ .fd = -1 }

/* dp open/close: the pool of idle sockets (c->tcp), under dp_lock (write). */
int pipe_pool_open(struct maru_client *c);
void pipe_pool_close(struct maru_client *c);

/*
 * A socket of the current session for p: an idle one of the pool or a
 * new one (connect, AUTH, HELLO reclaiming the session). 0 or -errno
 * (-ESTALE: the session is not the one the handle knows; the caller
 * falls back to the control path, which learns why).
 */
int pipe_get(struct maru_client *c, struct pipe *p);
/* Back to the pool when nothing is outstanding on it, else closed. */
void pipe_put(struct maru_client *c, struct pipe *p);
/* Closed (a broken stream). */
void pipe_drop(struct pipe *p);

/* Send one frame on p (a fresh request id in *reqid); 0 or -errno. */
int pipe_send(struct maru_client *c, struct pipe *p, uint16_t op, const void *p1,
	      size_t n1, const void *p2, size_t n2, uint64_t *reqid);
/*
 * Read the reply to the oldest outstanding frame (op, reqid) into r (its
 * rbuf/rcap as for frame_reply): 0 with r->status set, or -errno (the
 * stream is broken: drop p).
 */
int pipe_reply(struct pipe *p, uint16_t op, uint64_t reqid, struct req *r);

/* opts.stream_bytes as used (0: the default). */
size_t pipe_budget_limit(const struct maru_client *c);
/* Take n bytes of the client's budget: 1, or 0 when they are not there. */
int pipe_budget_take(struct maru_client *c, size_t n);
void pipe_budget_give(struct maru_client *c, size_t n);

/*
 * A frame buffer of TCP_STREAM_FRAME bytes (of the budget): one the client
 * kept, or a new one; NULL when the budget has no room. Put: kept for the
 * next stream (still counted in the budget) or freed.
 */
uint8_t *pipe_buf_get(struct maru_client *c);
void pipe_buf_put(struct maru_client *c, uint8_t *b);

#endif
