/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/tcp_stream.h: what the tcp data path keeps on one handle
 * (f->ts): its pipelined socket, the frames read ahead of the caller
 * (dp/tcp_ra.c, a published version read in order) and the frames
 * written behind it (dp/tcp_wb.c, a pending version). tcp.c makes it on
 * the first transfer and drops it through forget.
 */
#ifndef MARU_TCP_STREAM_H
#define MARU_TCP_STREAM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "tcp_pipe.h"

/* Frames a handle may have outstanding; bytes ahead of / behind it. */
#define TCP_STREAM_SLOTS	32
#define TCP_STREAM_WINDOW	(16u << 20)

/*
 * One frame read ahead: asked for [off, off+len), got bytes arrived into
 * buf: a buffer of the budget's, or (direct) the caller's own, for a frame
 * of the read in hand, received before that read returns.
 */
struct ra_frame {
	uint64_t off, reqid;
	uint32_t len, got, used;	/* used: bytes the caller took */
	int arrived, direct;
	uint8_t *buf;
};

/*
 * One WRITE frame in flight: its bytes at src until marud answers, a copy
 * in one of the stream's copy chunks (chunk >= 0, when written behind) or
 * the caller's own buffer (chunk -1: a big write, answered before it
 * returns).
 */
struct wb_frame {
	uint64_t off, reqid;
	uint32_t len;
	int chunk;
	const uint8_t *src;
};

/* Copy chunks of a write stream (TCP_STREAM_FRAME bytes each). */
#define TCP_WB_CHUNKS	(TCP_STREAM_WINDOW / TCP_STREAM_FRAME + 2)

struct tcp_stream {
	/* readers hold f->lock for reading only: this orders them */
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a receiver is done */
	int receiving;		/* a reader reads a reply without the lock */
	struct pipe p;
	/* read ahead: a ring in request (= reply) order */
	struct ra_frame ra[TCP_STREAM_SLOTS];
	unsigned int ra_head, ra_n;
	uint64_t ra_next;	/* offset the next frame asks for */
	uint64_t ra_seq;	/* where the last read ended */
	int ra_on;
	/* frame buffers (TCP_STREAM_FRAME bytes each, of the budget) not in
	 * use, kept so that a stream does not map and fault fresh memory
	 * per frame; given back when the stream ends */
	uint8_t *ra_spare[TCP_STREAM_SLOTS];
	unsigned int ra_nspare;
	/* write behind: a ring in send (= reply) order */
	struct wb_frame wb[TCP_STREAM_SLOTS];
	unsigned int wb_head, wb_n;
	uint64_t wb_bytes;
	/*
	 * The copies, packed in order into chunks of the client's frame
	 * buffers (dp/tcp_pipe.c): frames are answered in order, so a ring of
	 * chunks, each given back when its last frame was answered and
	 * another one is being filled; all of them when the version is
	 * drained. A stream so maps and faults no fresh memory per frame.
	 */
	uint8_t *wb_chunk[TCP_WB_CHUNKS];
	unsigned int wb_refs[TCP_WB_CHUNKS];
	unsigned int wb_ch_head, wb_ch_n;
	uint32_t wb_ch_off;		/* bytes used of the newest chunk */
};

/*
 * Read [off, off+len) of f's published version, at most size, from the
 * frames read ahead, starting or moving the stream when the read follows
 * the last one (or starts at 0) and topping it up. The bytes, or
 * -EAGAIN when this read is the control path's (out of order, no socket,
 * no budget, a broken stream), or -errno. st->lock held.
 */
ssize_t ra_read(struct maru_file *f, struct tcp_stream *st, void *buf, size_t len,
		uint64_t off);
/* Drop every frame read ahead (the socket too if replies are owed). */
void ra_reset(struct maru_client *c, struct tcp_stream *st);
/* Free the spare frame buffers, giving their budget back. */
void ra_release(struct maru_client *c, struct tcp_stream *st);

/*
 * Send [off, off+len) to f's pending version in frames of at most max
 * bytes. A small write is copied and written behind, waiting for replies
 * only when the window or the budget is full; a big one (TCP_WB_DIRECT
 * and more) goes out of the caller's buffer, pipelined, and returns when
 * all its frames are answered. len or -errno (f->poison once set).
 * st->lock held.
 */
#define TCP_WB_DIRECT		(2u << 20)
ssize_t wb_write(struct maru_file *f, struct tcp_stream *st, const void *buf, size_t len,
		 uint64_t off, uint32_t max);
/* Wait for every frame written behind: 0 or f->poison. st->lock held. */
int wb_drain(struct maru_file *f, struct tcp_stream *st);
/* Drop every frame written behind unanswered (the handle is closed). */
void wb_reset(struct maru_client *c, struct tcp_stream *st);
/*
 * The first failure of a transfer to f's pending version: f->poison
 * is set to it and a line says which version and why.
 */
void tcp_poison(struct maru_file *f, int err, const char *why);

#endif
