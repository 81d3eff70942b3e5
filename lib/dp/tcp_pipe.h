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

/*
 * Whether streaming pays. A stream saves round trips but receives into its
 * own frame buffers and copies to the caller (a memmove of every byte);
 * in line, each frame lands straight in the caller's buffer but waits a
 * whole round trip. So a read streams only when the client's in-line
 * READs of at most TCP_RTT_PROBE bytes (FUSE's piece) take
 * TCP_STREAM_RTT_NS or more (per client: the fastest recent time, rising
 * an eighth of the way per slower one, as load slows a sample but no
 * sample beats the network's delay): then in line
 * moves less than TCP_RTT_PROBE / TCP_STREAM_RTT_NS = 250 MiB/s, below
 * what the stream moves with its copy (measured on a 2-core veth host:
 * 360-550 MiB/s at no delay), and the round trip, not the copy, bounds
 * it. Below the bar (a LAN, loopback: a 128 KiB READ took ~250 us on
 * that host, where in line moved 470-720 MiB/s) each frame
 * goes in line. The estimate goes stale after TCP_RTT_STALE_NS without an
 * in-line READ (a streaming client makes none): the next read (the first
 * of a handle) then probes with one in-line frame of TCP_RTT_PROBE, whose
 * time moves the estimate as any sample does.
 */
#define TCP_STREAM_RTT_NS	(500u * 1000)
#define TCP_RTT_PROBE		(128u << 10)
#define TCP_RTT_STALE_NS	(2000ull * 1000 * 1000)
/*
 * A sample this slow is taken at once: a READ that waited for TCP's
 * retransmission timer (200 ms at the least) lost a segment, and a lossy
 * link is where frames in flight pay most (fast retransmit instead of the
 * timer). Load alone seldom stalls a round trip this long.
 */
#define TCP_RTT_STALL_NS	(50ull * 1000 * 1000)
/* An in-line READ of at most TCP_RTT_PROBE bytes took ns. */
void pipe_rtt_sample(struct maru_client *c, uint64_t ns);
/* 1: stream, 0: in line, -1: no fresh estimate (probe in line first). */
int pipe_rtt_worth(struct maru_client *c);
/* The bar (TCP_STREAM_RTT_NS unless set; 0: always stream). For tests. */
void pipe_rtt_bar(struct maru_client *c, uint64_t ns);

#endif
