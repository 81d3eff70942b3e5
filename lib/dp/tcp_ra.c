/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/tcp_ra.c: reading a published version ahead of the caller over
 * tcp. A version is immutable once published, so bytes read ahead never go
 * stale: a read that starts at 0 or where the handle's last read ended
 * starts (or moves) a stream of READ frames of TCP_STREAM_FRAME bytes on a
 * pipelined socket (dp/tcp_pipe.c), up to TCP_STREAM_WINDOW bytes and
 * TCP_STREAM_SLOTS frames ahead of the reader and within the client's
 * budget (opts.stream_bytes); each read takes its bytes from the frames
 * that arrived (reading replies in order as it needs them) and tops the
 * window up again. So a chunk read in 128 KiB pieces (FUSE) costs one
 * round trip per window rather than one per piece, and the bytes in
 * flight cover the bandwidth-delay product. A read elsewhere, or when the
 * stream cannot run (no socket, no budget, a broken stream), is the
 * control path's (-EAGAIN): tcp.c sends it as before. A frame is dropped
 * once all its bytes were taken (or it lags far behind the reader); its
 * buffer (1 MiB, of the budget) is kept for the next frame and handed back
 * to the client (dp/tcp_pipe.c keeps a few for the next stream, so that a
 * stream faults in no fresh memory) when the stream reaches the version's
 * end or the handle is closed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_stream.h"

static struct ra_frame *ra_at(struct tcp_stream *st, unsigned int i)
{
	return &st->ra[(st->ra_head + i) % TCP_STREAM_SLOTS];
}

static void ra_pop(struct maru_client *c, struct tcp_stream *st)
{
	struct ra_frame *fr = ra_at(st, 0);

	if (!fr->direct)
		st->ra_spare[st->ra_nspare++] = fr->buf;
	memset(fr, 0, sizeof(*fr));
	st->ra_head = (st->ra_head + 1) % TCP_STREAM_SLOTS;
	st->ra_n--;
}

void ra_reset(struct maru_client *c, struct tcp_stream *st)
{
	while (st->receiving)
		pthread_cond_wait(&st->cond, &st->lock);
	while (st->ra_n)
		ra_pop(c, st);
	/* replies still owed on the socket: nobody wants them */
	if (st->p.out)
		pipe_drop(&st->p);
	st->ra_on = 0;
}

void ra_release(struct maru_client *c, struct tcp_stream *st)
{
	while (st->ra_nspare)
		pipe_buf_put(c, st->ra_spare[--st->ra_nspare]);
}

/* A frame buffer: a spare one, or the client's; NULL: no budget. */
static uint8_t *ra_buf(struct maru_client *c, struct tcp_stream *st)
{
	if (st->ra_nspare)
		return st->ra_spare[--st->ra_nspare];
	return pipe_buf_get(c);
}

static uint64_t ra_ahead(struct tcp_stream *st)
{
	return st->ra_n ? st->ra_next - ra_at(st, 0)->off : 0;
}

/* Ask for more frames while the window, the slots and the budget allow. */
static int ra_fill(struct maru_file *f, struct tcp_stream *st, uint64_t size)
{
	struct maru_client *c = f->c;
	struct proto_io_req q = { .ino = f->ino };
	struct ra_frame *fr;
	int rc;

	while (st->ra_next < size && st->ra_n < TCP_STREAM_SLOTS &&
	       ra_ahead(st) < TCP_STREAM_WINDOW) {
		q.off = st->ra_next;
		q.len = size - q.off < TCP_STREAM_FRAME ? (uint32_t)(size - q.off) :
							 TCP_STREAM_FRAME;
		fr = ra_at(st, st->ra_n);
		fr->buf = ra_buf(c, st);
		if (!fr->buf)
			return 0;
		/* while frames are out the socket stays (a receiver may be in it) */
		rc = st->ra_n ? 0 : pipe_get(c, &st->p);
		if (!rc)
			rc = pipe_send(c, &st->p, OP_READ, &q, sizeof(q), NULL, 0, &fr->reqid);
		if (rc) {
			st->ra_spare[st->ra_nspare++] = fr->buf;
			fr->buf = NULL;
			return rc;
		}
		fr->off = q.off;
		fr->len = q.len;
		fr->got = 0;
		fr->used = 0;
		fr->arrived = 0;
		fr->direct = 0;
		st->ra_n++;
		st->ra_next += q.len;
	}
	return 0;
}

/*
 * The read in hand starts where nothing is read ahead: its own frames go
 * out first, each landing straight in the caller's buffer (no budget, no
 * copy), and the stream reads ahead after them.
 */
static int ra_direct(struct maru_file *f, struct tcp_stream *st, uint8_t *buf, size_t len,
		     uint64_t size)
{
	struct proto_io_req q = { .ino = f->ino };
	struct ra_frame *fr;
	size_t done = 0;
	int rc;

	if (len > size - st->ra_next)
		len = size - st->ra_next;
	rc = pipe_get(f->c, &st->p);
	while (!rc && done < len && st->ra_n < TCP_STREAM_SLOTS) {
		q.off = st->ra_next;
		q.len = len - done < TCP_STREAM_FRAME ? (uint32_t)(len - done) : TCP_STREAM_FRAME;
		fr = ra_at(st, st->ra_n);
		rc = pipe_send(f->c, &st->p, OP_READ, &q, sizeof(q), NULL, 0, &fr->reqid);
		if (rc)
			break;
		fr->off = q.off;
		fr->len = q.len;
		fr->got = 0;
		fr->used = 0;
		fr->arrived = 0;
		fr->direct = 1;
		fr->buf = buf + done;
		st->ra_n++;
		st->ra_next += q.len;
		done += q.len;
	}
	return rc;
}

/* The reply to the oldest frame (replies come in request order). */
/*
 * Receive the reply to fr, the oldest frame not arrived, without the lock:
 * readers whose bytes are here meanwhile take them. One receiver at a
 * time (st->receiving); nothing pops fr or closes the socket meanwhile
 * (ra_trim takes arrived frames only, ra_reset waits for the receiver).
 */
static int ra_recv(struct maru_file *f, struct tcp_stream *st, struct ra_frame *fr)
{
	struct req r = { .rbuf = fr->buf, .rcap = fr->len };
	int rc;

	st->receiving = 1;
	pthread_mutex_unlock(&st->lock);
	rc = pipe_reply(&st->p, OP_READ, fr->reqid, &r);
	pthread_mutex_lock(&st->lock);
	st->receiving = 0;
	pthread_cond_broadcast(&st->cond);
	if (rc)
		return rc;
	if (r.status)
		return r.status;
	fr->got = r.rlen;
	fr->arrived = 1;
	return 0;
}

/* Start (or move) the stream at off, when the read follows the last one. */
static int ra_start(struct maru_file *f, struct tcp_stream *st, uint64_t off)
{
	if (st->ra_on && st->ra_n && off >= ra_at(st, 0)->off && off < st->ra_next)
		return 0;
	/* a window read to its end moves on from where it stopped */
	if (st->ra_on && !st->ra_n && off == st->ra_next)
		return 0;
	if (off != 0 && off != st->ra_seq)
		return -EAGAIN;
	ra_reset(f->c, st);
	st->ra_next = off;
	st->ra_on = 1;
	return 0;
}

/*
 * Drop the frames at the front that are used up: every byte read (the
 * kernel may ask for pieces out of order, so a read past a frame does not
 * end it), or left far behind the reader (bytes skipped).
 */
static void ra_trim(struct maru_client *c, struct tcp_stream *st, uint64_t at)
{
	struct ra_frame *fr;

	while (st->ra_n) {
		fr = ra_at(st, 0);
		if (fr->off + fr->len > at || !fr->arrived ||
		    (fr->used < fr->got && fr->off + fr->len + TCP_STREAM_WINDOW / 2 > at))
			return;
		ra_pop(c, st);
	}
}

/*
 * The frame holding at, its reply and those of the frames before it read
 * (replies come in request order); NULL when no frame holds it (*rc: 0,
 * or the error that broke the stream).
 */
static struct ra_frame *ra_find(struct maru_file *f, struct tcp_stream *st, uint64_t at,
				int *rc)
{
	struct ra_frame *fr;
	unsigned int i, k;

again:
	*rc = 0;
	for (i = 0; i < st->ra_n; i++) {
		fr = ra_at(st, i);
		if (at < fr->off)
			return NULL;
		if (at < fr->off + fr->len)
			break;
	}
	if (i == st->ra_n)
		return NULL;
	if (ra_at(st, i)->arrived)
		return ra_at(st, i);
	/* another reader receives: wait for it, then look again (the
	 * window may have moved) */
	if (st->receiving) {
		pthread_cond_wait(&st->cond, &st->lock);
		goto again;
	}
	for (k = 0; k <= i; k++) {
		fr = ra_at(st, k);
		if (!fr->arrived) {
			*rc = ra_recv(f, st, fr);
			if (*rc)
				return NULL;
			goto again;
		}
	}
	return ra_at(st, i);
}

/* Copy what the frames hold of [off, off+len): bytes copied, or -errno. */
static ssize_t ra_copy(struct maru_file *f, struct tcp_stream *st, uint8_t *buf, size_t len,
		       uint64_t off)
{
	struct ra_frame *fr;
	size_t done = 0, n;
	uint64_t at;
	int rc;

	while (done < len) {
		at = off + done;
		ra_trim(f->c, st, at);
		rc = 0;
		if (!st->ra_n && st->ra_next == at && len - done >= TCP_STREAM_FRAME)
			rc = ra_direct(f, st, buf + done, len - done, f->size);
		if (!rc)
			rc = ra_fill(f, st, f->size);
		fr = rc ? NULL : ra_find(f, st, at, &rc);
		if (!fr)
			return done ? (ssize_t)done : rc ? rc : -EAGAIN;
		if (at >= fr->off + fr->got) {
			/* marud clamps at the version's end: stop there; a
			 * piece answered short inside it is the control
			 * path's, and the stream starts again after it */
			if (fr->got < fr->len && fr->off + fr->got < f->size)
				st->ra_on = 0;
			break;
		}
		n = fr->off + fr->got - at;
		n = n < len - done ? n : len - done;
		/* a direct frame's bytes are in place already */
		if (!fr->direct)
			memcpy(buf + done, fr->buf + (at - fr->off), n);
		fr->used += (uint32_t)n;
		done += n;
	}
	return (ssize_t)done;
}

/*
 * The caller's buffer is theirs again: no direct frame may stay behind
 * (one still owed closes the socket, so nothing lands there later).
 */
static void ra_undirect(struct maru_client *c, struct tcp_stream *st)
{
	while (st->ra_n && ra_at(st, 0)->direct) {
		if (!ra_at(st, 0)->arrived) {
			ra_reset(c, st);
			pipe_drop(&st->p);
			return;
		}
		ra_pop(c, st);
	}
}

/* Every byte of every frame taken by a reader. */
static int ra_used_up(struct tcp_stream *st)
{
	unsigned int i;

	for (i = 0; i < st->ra_n; i++)
		if (ra_at(st, i)->used < ra_at(st, i)->got || !ra_at(st, i)->arrived)
			return 0;
	return 1;
}

ssize_t ra_read(struct maru_file *f, struct tcp_stream *st, void *buf, size_t len,
		uint64_t off)
{
	ssize_t rc;

	if (pipe_budget_limit(f->c) < TCP_STREAM_FRAME)
		return -EAGAIN;
	rc = ra_start(f, st, off);
	if (rc)
		return rc;
	rc = ra_copy(f, st, buf, len, off);
	ra_undirect(f->c, st);
	if (rc >= 0 && !st->ra_on) {
		ra_reset(f->c, st);
		return rc ? rc : -EAGAIN;
	}
	if (rc < 0) {
		/* a broken stream: the control path sends this read (and
		 * reconnects); a reply that never came within timeout_ms is
		 * the caller's answer, not worth a second wait */
		if (rc != -EAGAIN) {
			atomic_fetch_add(&f->c->st.tcp.pipe_errors, 1);
			clog_debug(f->c, "%s: read-ahead of version %llu stopped: %s",
				   f->c->uri, (unsigned long long)f->ino, strerror((int)-rc));
		}
		ra_reset(f->c, st);
		pipe_drop(&st->p);
		return rc == -ETIMEDOUT ? rc : -EAGAIN;
	}
	st->ra_seq = off + (uint64_t)rc;
	/* read to the end: the buffers go back to the budget, the socket to the pool */
	if (st->ra_next >= f->size && ra_used_up(st)) {
		ra_reset(f->c, st);
		ra_release(f->c, st);
		pipe_put(f->c, &st->p);
		st->ra_on = 1;
		return rc;
	}
	/* keep the window full while the caller uses what it got */
	if (ra_fill(f, st, f->size)) {
		ra_reset(f->c, st);
		pipe_drop(&st->p);
	}
	return rc;
}
