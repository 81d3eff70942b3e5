/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/tcp_wb.c: writing a pending version behind the caller over tcp.
 * Each WRITE frame goes out on the handle's pipelined socket
 * (dp/tcp_pipe.c) with a copy of its bytes kept until marud answers it
 * (packed into 1 MiB chunks of the client's frame buffers),
 * and the write returns without waiting: replies are read when the window
 * (TCP_STREAM_WINDOW bytes, TCP_STREAM_SLOTS frames) or the client's
 * budget (opts.stream_bytes) is full, and all of them before the version
 * is synced, truncated, read or published (wb_drain). So a chunk written
 * in 128 KiB pieces keeps a window of bytes in flight instead of waiting a
 * round trip per piece.
 *
 * Failures: a socket that breaks (or a reply that never comes) loses no
 * byte, since the copies are kept: the unanswered frames are sent again,
 * in order, through the control path (c->env.call), which reconnects and
 * retries within timeout_ms. A frame marud refuses, or one the control
 * path cannot deliver either, poisons the handle (tcp_poison): f->poison
 * holds the first error, every later write returns it, and file.c abandons
 * the version at publish instead of publishing it, so nothing partial is
 * ever visible.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "failpoint.h"
#include "frame.h"
#include "tcp_stream.h"

void tcp_poison(struct maru_file *f, int err, const char *why)
{
	int none = 0;

	if (err >= 0)
		err = -EIO;
	if (!atomic_compare_exchange_strong(&f->poison, &none, err))
		return;
	clog_warn(f->c, -err, "%s: pending version %llu will not be published: %s",
		  f->c->uri, (unsigned long long)f->ino, why);
}

static struct wb_frame *wb_at(struct tcp_stream *st, unsigned int i)
{
	return &st->wb[(st->wb_head + i) % TCP_STREAM_SLOTS];
}

static unsigned int ch_at(const struct tcp_stream *st, unsigned int i)
{
	return (st->wb_ch_head + i) % TCP_WB_CHUNKS;
}

/*
 * Room for a copy of len bytes (at most a chunk) after the last one: the
 * newest chunk's rest, or a new chunk of the client's. NULL when there is
 * no chunk to be had (the ring or the budget is full).
 */
static uint8_t *copy_alloc(struct maru_client *c, struct tcp_stream *st, uint32_t len,
			   int *chunk)
{
	unsigned int k;
	uint8_t *b;

	if (st->wb_ch_n && st->wb_ch_off + len <= TCP_STREAM_FRAME) {
		k = ch_at(st, st->wb_ch_n - 1);
	} else {
		if (st->wb_ch_n == TCP_WB_CHUNKS || !(b = pipe_buf_get(c)))
			return NULL;
		k = ch_at(st, st->wb_ch_n++);
		st->wb_chunk[k] = b;
		st->wb_refs[k] = 0;
		st->wb_ch_off = 0;
	}
	st->wb_refs[k]++;
	*chunk = (int)k;
	b = st->wb_chunk[k] + st->wb_ch_off;
	st->wb_ch_off += len;
	return b;
}

/* A copy is done with: chunks before the newest, emptied, go back. */
static void copy_free(struct maru_client *c, struct tcp_stream *st, int chunk)
{
	unsigned int k;

	st->wb_refs[chunk]--;
	while (st->wb_ch_n > 1 && !st->wb_refs[k = ch_at(st, 0)]) {
		pipe_buf_put(c, st->wb_chunk[k]);
		st->wb_chunk[k] = NULL;
		st->wb_ch_head = ch_at(st, 1);
		st->wb_ch_n--;
	}
	/* the newest alone and empty: fill it again from its start */
	if (st->wb_ch_n == 1 && !st->wb_refs[ch_at(st, 0)])
		st->wb_ch_off = 0;
}

static void wb_pop(struct maru_client *c, struct tcp_stream *st)
{
	struct wb_frame *fr = wb_at(st, 0);

	if (fr->chunk >= 0)
		copy_free(c, st, fr->chunk);
	st->wb_bytes -= fr->len;
	memset(fr, 0, sizeof(*fr));
	st->wb_head = (st->wb_head + 1) % TCP_STREAM_SLOTS;
	st->wb_n--;
}

/* One WRITE through the control path (its retries): 0 or -errno. */
static int wb_call(struct maru_file *f, const void *buf, uint32_t len, uint64_t off)
{
	struct proto_io_req q = { .ino = f->ino, .off = off, .len = len };
	struct proto_io_rep rep;
	struct req r = { .op = OP_WRITE, .p1 = &q, .n1 = sizeof(q), .p2 = buf, .n2 = len,
			 .rbuf = &rep, .rcap = sizeof(rep) };
	int rc;

	atomic_fetch_add(&f->c->st.tcp.wr_frames, 1);
	atomic_fetch_add(&f->c->st.tcp.wr_trips, 1);
	rc = f->c->env.call(f->c, &r);
	if (!rc && (r.rlen != sizeof(rep) || rep.done != len))
		rc = -EIO;
	frame_req_done(&r);
	return rc;
}

/*
 * The socket broke: send every unanswered frame again, in order, through
 * the control path. A WRITE is idempotent within the session (same bytes,
 * same place), so one marud already ran costs only time.
 */
static void wb_recover(struct maru_file *f, struct tcp_stream *st, int why)
{
	struct wb_frame *fr;
	int rc = 0;

	atomic_fetch_add(&f->c->st.tcp.pipe_errors, 1);
	pipe_drop(&st->p);
	while (st->wb_n) {
		fr = wb_at(st, 0);
		if (!rc && !atomic_load(&f->poison))
			rc = wb_call(f, fr->src, fr->len, fr->off);
		wb_pop(f->c, st);
	}
	if (rc) {
		tcp_poison(f, rc, "a WRITE failed after its stream broke");
		return;
	}
	atomic_fetch_add(&f->c->st.tcp.recovered, 1);
	clog_debug(f->c, "%s: write stream of version %llu broke (%s): resent", f->c->uri,
		   (unsigned long long)f->ino, strerror(-why));
}

/* Read the reply to the oldest frame written behind. */
static void wb_reap(struct maru_file *f, struct tcp_stream *st)
{
	struct wb_frame *fr = wb_at(st, 0);
	struct proto_io_rep rep;
	struct req r = { .rbuf = &rep, .rcap = sizeof(rep) };
	int rc = pipe_reply(&st->p, OP_WRITE, fr->reqid, &r);

	/* tests: marud reports a transfer error on a frame written behind */
	if (!rc && !r.status)
		r.status = FAILPOINT("libmaru.write.reply");
	if (rc) {
		if (rc == -EPROTO) {
			pipe_drop(&st->p);
			while (st->wb_n)
				wb_pop(f->c, st);
			tcp_poison(f, -EIO, "protocol error on a WRITE reply");
			return;
		}
		wb_recover(f, st, rc);
		return;
	}
	if (r.status)
		tcp_poison(f, r.status, "marud refused a WRITE");
	else if (r.rlen != sizeof(rep) || rep.done != fr->len)
		tcp_poison(f, -EIO, "a WRITE was answered short");
	wb_pop(f->c, st);
}

/* Every copy chunk back to the client (nothing is written behind). */
static void wb_release(struct maru_client *c, struct tcp_stream *st)
{
	while (st->wb_ch_n) {
		pipe_buf_put(c, st->wb_chunk[ch_at(st, 0)]);
		st->wb_ch_head = ch_at(st, 1);
		st->wb_ch_n--;
	}
	st->wb_ch_off = 0;
}

void wb_reset(struct maru_client *c, struct tcp_stream *st)
{
	while (st->wb_n)
		wb_pop(c, st);
	wb_release(c, st);
	if (st->p.out)
		pipe_drop(&st->p);
}

int wb_drain(struct maru_file *f, struct tcp_stream *st)
{
	while (st->wb_n)
		wb_reap(f, st);
	wb_release(f->c, st);
	pipe_put(f->c, &st->p);
	return atomic_load(&f->poison);
}

/* Room for one more frame of len bytes in the window. */
static void wb_room(struct maru_file *f, struct tcp_stream *st, uint32_t len)
{
	while (st->wb_n && (st->wb_n == TCP_STREAM_SLOTS ||
			    st->wb_bytes + len > TCP_STREAM_WINDOW))
		wb_reap(f, st);
}

/*
 * Send one frame: its bytes at src (copy: a copy of the budget's, or
 * NULL: the caller's buffer). A socket that breaks resends in line.
 */
static void wb_push(struct maru_file *f, struct tcp_stream *st, const uint8_t *src,
		    int chunk, uint32_t len, uint64_t off)
{
	struct proto_io_req q = { .ino = f->ino, .off = off, .len = len };
	struct wb_frame *fr = wb_at(st, st->wb_n);
	int rc;

	fr->off = off;
	fr->len = len;
	fr->src = src;
	fr->chunk = chunk;
	st->wb_n++;
	st->wb_bytes += len;
	rc = pipe_send(f->c, &st->p, OP_WRITE, &q, sizeof(q), src, len, &fr->reqid);
	if (rc)
		wb_recover(f, st, rc);
}

/* Send one frame behind the caller: 0, or -EAGAIN to send it in line. */
static int wb_send(struct maru_file *f, struct tcp_stream *st, const uint8_t *buf,
		   uint32_t len, uint64_t off)
{
	uint8_t *copy;
	int chunk, rc;

	wb_room(f, st, len);
	while (!(copy = copy_alloc(f->c, st, len, &chunk))) {
		if (!st->wb_n)
			return -EAGAIN;
		wb_reap(f, st);
	}
	/* while frames are out the socket is there (a broken one took them) */
	rc = st->wb_n ? 0 : pipe_get(f->c, &st->p);
	if (rc) {
		copy_free(f->c, st, chunk);
		return -EAGAIN;
	}
	memcpy(copy, buf, len);
	wb_push(f, st, copy, chunk, len, off);
	return 0;
}

/*
 * A big write: frames out of the caller's buffer, several in flight, all
 * answered before it returns (no copy, no budget). -EAGAIN: no socket.
 */
static int wb_direct(struct maru_file *f, struct tcp_stream *st, const uint8_t *buf,
		     size_t len, uint64_t off, uint32_t max)
{
	size_t done = 0;
	uint32_t n;
	int rc;

	if (!st->wb_n && pipe_get(f->c, &st->p))
		return -EAGAIN;
	while (done < len && !atomic_load(&f->poison)) {
		n = len - done < max ? (uint32_t)(len - done) : max;
		wb_room(f, st, n);
		if (st->p.fd < 0 && pipe_get(f->c, &st->p)) {
			/* the stream broke and cannot come back: in line */
			while (done < len && !atomic_load(&f->poison)) {
				n = len - done < max ? (uint32_t)(len - done) : max;
				if (wb_call(f, buf + done, n, off + done))
					tcp_poison(f, -EIO, "a WRITE failed");
				done += n;
			}
			break;
		}
		wb_push(f, st, buf + done, -1, n, off + done);
		done += n;
		/* tests: stop the writer between two frames of one call */
		rc = done < len ? FAILPOINT("libmaru.write.mid") : 0;
		if (rc) {
			tcp_poison(f, rc, "stopped by a fail point");
			break;
		}
	}
	/* the caller's buffer is theirs again only once all are answered */
	while (st->wb_n)
		wb_reap(f, st);
	return 0;
}

ssize_t wb_write(struct maru_file *f, struct tcp_stream *st, const void *buf, size_t len,
		 uint64_t off, uint32_t max)
{
	const uint8_t *b = buf;
	size_t done = 0;
	uint32_t n;
	int rc;

	if (max > TCP_STREAM_FRAME)
		max = TCP_STREAM_FRAME;
	if (len >= TCP_WB_DIRECT && wb_direct(f, st, b, len, off, max) == 0) {
		rc = atomic_load(&f->poison);
		return rc ? rc : (ssize_t)len;
	}
	while (done < len) {
		rc = atomic_load(&f->poison);
		if (rc)
			return rc;
		n = len - done < max ? (uint32_t)(len - done) : max;
		rc = wb_send(f, st, b + done, n, off + done);
		/* no socket or no budget: this frame waits for its reply */
		if (rc == -EAGAIN) {
			/* after those behind it: the same bytes may be among them */
			while (st->wb_n)
				wb_reap(f, st);
			rc = atomic_load(&f->poison) ? 0 : wb_call(f, b + done, n, off + done);
			if (rc)
				tcp_poison(f, rc, "a WRITE failed");
		}
		rc = atomic_load(&f->poison);
		if (rc)
			return rc;
		done += n;
		/* tests: stop the writer between two frames of one call */
		if (done < len) {
			rc = FAILPOINT("libmaru.write.mid");
			if (rc)
				return rc;
		}
	}
	return (ssize_t)len;
}
