/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/tcp.c: the tcp data path: chunk bytes travel in READ and WRITE
 * frames of at most PROTO_MAX_IO on the client's control sockets, and marud
 * copies them to and from its own mapping. marud reserves, zero-fills holes
 * and tracks the size of the pending version; the handle follows its
 * replies. Always available; the isolated mode (marufs-design(7) §8).
 *
 * Streams: a published version read in order is read ahead of the caller
 * (dp/tcp_ra.c) and a pending version is written behind it (dp/tcp_wb.c),
 * both with several frames in flight on a pipelined socket of the handle's
 * own (dp/tcp_pipe.c), so a transfer costs a round trip per window and not
 * per frame; what they hold is bounded per client (opts.stream_bytes).
 * A read streams only where round trips cost more than the stream's copy
 * (pipe_rtt_worth, dp/tcp_pipe.h: in-line READs of a FUSE piece taking
 * 500 us or more; each in-line READ is timed for it).
 * Everything else, and a stream that cannot run, goes in line: one frame
 * per round trip on the control sockets, reads straight into the caller's
 * buffer and writes out of it. Frames go out through the client's control
 * call and the frame size comes from the session's facts, both callbacks
 * of c->env: nothing here names transport.c or session.c. file.c counts
 * the bytes; a pending version's frames are all answered before it is
 * synced, truncated, read or published, and the first failure poisons the
 * handle (f->poison: it is never published).
 */
#include <errno.h>
#include <string.h>

#include <stdlib.h>

#include "clock.h"
#include "datapath.h"
#include "failpoint.h"
#include "frame.h"
#include "prom.h"
#include "tcp_stream.h"

/*
 * Data bytes one READ or WRITE frame may carry: PROTO_MAX_IO, or less when
 * marud was started with a smaller max-frame (it closes the connection on a
 * bigger frame, and refuses a READ it could not answer in one).
 */
static uint32_t io_max(struct maru_client *c)
{
	struct dp_facts s;
	uint32_t m;

	c->env.facts(c, &s);
	m = s.send_max;
	m = m > 2 * sizeof(struct proto_io_req) ? m - (uint32_t)sizeof(struct proto_io_req) :
						 sizeof(struct proto_io_req);
	return m < PROTO_MAX_IO ? m : PROTO_MAX_IO;
}

static ssize_t line_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	struct proto_io_req q = { .ino = f->ino };
	struct req r = { .op = OP_READ, .p1 = &q, .n1 = sizeof(q) };
	uint32_t max = io_max(f->c);
	size_t done = 0;
	uint64_t t0;
	int rc;

	while (done < len) {
		q.off = off + done;
		q.len = len - done < max ? (uint32_t)(len - done) : max;
		r.rbuf = (uint8_t *)buf + done;
		r.rcap = q.len;
		atomic_fetch_add(&f->c->st.tcp.rd_frames, 1);
		atomic_fetch_add(&f->c->st.tcp.rd_trips, 1);
		t0 = mono_ns();
		rc = f->c->env.call(f->c, &r);
		if (rc)
			return rc;
		/* what streaming would save (a bigger frame's time is its bytes') */
		if (q.len <= TCP_RTT_PROBE)
			pipe_rtt_sample(f->c, mono_ns() - t0);
		/* marud clamps at the version's end: stop there */
		if (r.rlen == 0)
			break;
		done += r.rlen;
		frame_req_done(&r);
	}
	return (ssize_t)done;
}

/* The handle's stream, made on its first transfer (readers race: CAS). */
static struct tcp_stream *stream_of(struct maru_file *f)
{
	struct tcp_stream *st = atomic_load(&f->ts), *none = NULL;

	if (st)
		return st;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cond, NULL);
	st->p.fd = -1;
	if (!atomic_compare_exchange_strong(&f->ts, &none, st)) {
		pthread_mutex_destroy(&st->lock);
		pthread_cond_destroy(&st->cond);
		free(st);
		return none;
	}
	/* only the thread that made it: forget drops it at publish and close */
	if (!f->held)
		f->held = &dp_tcp_ops;
	return st;
}

/*
 * Every frame written behind answered: 0 or f->poison. marud copied the
 * bytes into pool memory when it answered each WRITE.
 */
static int tcp_sync(struct maru_file *f)
{
	struct tcp_stream *st = atomic_load(&f->ts);
	int rc;

	if (!st)
		return atomic_load(&f->poison);
	pthread_mutex_lock(&st->lock);
	rc = wb_drain(f, st);
	pthread_mutex_unlock(&st->lock);
	return rc;
}

static ssize_t tcp_read(struct maru_file *f, void *buf, size_t len, uint64_t off);

/*
 * In line while round trips are cheap (pipe_rtt_worth): the first piece
 * of a read with no fresh estimate is the probe. 1: go on streaming,
 * 0: the read is done in line (*got: its bytes or -errno).
 */
static int tcp_inline(struct maru_file *f, struct tcp_stream *st, void *buf, size_t len,
		      uint64_t off, ssize_t *got)
{
	int worth = pipe_rtt_worth(f->c);
	size_t n = len;
	unsigned int out;
	ssize_t rc;

	/* a stream already running on this handle keeps its frames */
	pthread_mutex_lock(&st->lock);
	out = st->ra_n;
	pthread_mutex_unlock(&st->lock);
	if ((worth > 0 || out) && pipe_budget_limit(f->c) >= TCP_STREAM_FRAME)
		return 1;
	/* streams off (no budget): nothing to probe for */
	if (worth < 0 && n > TCP_RTT_PROBE && pipe_budget_limit(f->c) >= TCP_STREAM_FRAME)
		n = TCP_RTT_PROBE;
	*got = rc = line_read(f, buf, n, off);
	if (rc <= 0)
		return 0;
	pthread_mutex_lock(&st->lock);
	st->ra_seq = off + (uint64_t)rc;
	pthread_mutex_unlock(&st->lock);
	if ((size_t)rc == len || (size_t)rc < n)
		return 0;
	/* probed: the rest as the estimate now says */
	rc = tcp_read(f, (uint8_t *)buf + n, len - n, off + n);
	*got = rc < 0 ? (ssize_t)n : (ssize_t)n + rc;
	return 0;
}

static ssize_t tcp_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	struct tcp_stream *st = stream_of(f);
	ssize_t rc, got;

	if (!st)
		return line_read(f, buf, len, off);
	/* a pending version: what was written behind lands first */
	if (atomic_load(&f->pending)) {
		rc = tcp_sync(f);
		return rc ? rc : line_read(f, buf, len, off);
	}
	if (!tcp_inline(f, st, buf, len, off, &got))
		return got;
	pthread_mutex_lock(&st->lock);
	got = ra_read(f, st, buf, len, off);
	pthread_mutex_unlock(&st->lock);
	if (got == -EAGAIN)
		got = 0;
	if (got < 0 || (size_t)got == len)
		return got;
	/* what the stream did not give (out of order, short): in line */
	rc = line_read(f, (uint8_t *)buf + got, len - (size_t)got, off + (uint64_t)got);
	if (rc < 0)
		return got ? got : rc;
	pthread_mutex_lock(&st->lock);
	st->ra_seq = off + (uint64_t)(got + rc);
	pthread_mutex_unlock(&st->lock);
	return got + rc;
}

static ssize_t line_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	struct proto_io_req q = { .ino = f->ino };
	struct proto_io_rep rep;
	struct req r = { .op = OP_WRITE, .p1 = &q, .n1 = sizeof(q),
			 .rbuf = &rep, .rcap = sizeof(rep) };
	uint32_t max = io_max(f->c);
	size_t done = 0;
	int rc = 0;

	while (!rc && done < len) {
		q.off = off + done;
		q.len = len - done < max ? (uint32_t)(len - done) : max;
		r.p2 = (const uint8_t *)buf + done;
		r.n2 = q.len;
		atomic_fetch_add(&f->c->st.tcp.wr_frames, 1);
		atomic_fetch_add(&f->c->st.tcp.wr_trips, 1);
		rc = f->c->env.call(f->c, &r);
		if (!rc && (r.rlen != sizeof(rep) || rep.done != q.len))
			rc = -EIO;
		if (!rc)
			done += q.len;
		if (!rc && done < len)
			rc = FAILPOINT("libmaru.write.mid");
	}
	return rc ? rc : (ssize_t)done;
}

static ssize_t tcp_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	struct tcp_stream *st;
	ssize_t rc;

	/* streams off: each frame waits for its reply, as big as marud takes */
	if (pipe_budget_limit(f->c) < TCP_STREAM_FRAME && !atomic_load(&f->ts))
		return line_write(f, buf, len, off);
	st = stream_of(f);
	if (!st)
		return line_write(f, buf, len, off);
	pthread_mutex_lock(&st->lock);
	rc = wb_write(f, st, buf, len, off, io_max(f->c));
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/* The handle is closed or published: frames still out are not wanted. */
static void tcp_forget(struct maru_file *f)
{
	struct tcp_stream *st = atomic_exchange(&f->ts, NULL);

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	ra_reset(f->c, st);
	ra_release(f->c, st);
	wb_reset(f->c, st);
	pipe_put(f->c, &st->p);
	pthread_mutex_unlock(&st->lock);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->cond);
	free(st);
}

static int tcp_open(struct maru_client *c, const struct session *s, const char **why)
{
	int rc = pipe_pool_open(c);

	if (rc)
		*why = "out of memory";
	return rc;
}

static void tcp_close(struct maru_client *c)
{
	pipe_pool_close(c);
}

static void tcp_stats(const struct maru_client *c, struct prom *t)
{
	const struct tcp_counters *k = &c->st.tcp;

	prom_head(t, "maru_client_tcp_frames_total", "counter",
		  "READ and WRITE frames sent by the tcp data path (its round trips).");
	prom_label(t, "maru_client_tcp_frames_total", "dir", "read", k->rd_frames);
	prom_label(t, "maru_client_tcp_frames_total", "dir", "write", k->wr_frames);
	prom_head(t, "maru_client_tcp_round_trips_total", "counter",
		  "READ and WRITE frames sent with none outstanding before them: each "
		  "waited a whole round trip.");
	prom_label(t, "maru_client_tcp_round_trips_total", "dir", "read", k->rd_trips);
	prom_label(t, "maru_client_tcp_round_trips_total", "dir", "write", k->wr_trips);
	prom_gauge_signed(t, "maru_client_tcp_stream_bytes",
			  "Bytes read ahead or written behind and not yet used or answered.",
			  k->held);
	prom_gauge(t, "maru_client_tcp_stream_limit_bytes",
		   "What the streams may hold at once (opts.stream_bytes).",
		   pipe_budget_limit(c));
	prom_counter(t, "maru_client_tcp_stream_refused_total",
		     "Frames not streamed because the budget was full.", k->refused);
	prom_counter(t, "maru_client_tcp_stream_dials_total",
		     "Pipelined sockets opened by the tcp data path.", k->dials);
	prom_counter(t, "maru_client_tcp_stream_errors_total",
		     "Streams that broke (socket, reply or refusal) or could not start.",
		     k->pipe_errors);
	prom_counter(t, "maru_client_tcp_stream_resent_total",
		     "Write streams that broke and were sent again in line.", k->recovered);
}
static int tcp_truncate(struct maru_file *f, uint64_t size)
{
	struct proto_size_req q = { .ino = f->ino, .size = size };
	struct req r = { .op = OP_TRUNCATE, .p1 = &q, .n1 = sizeof(q) };
	const struct proto_attr *a;
	int rc;

	/* after the bytes written behind, as the caller wrote them */
	rc = tcp_sync(f);
	if (!rc)
		rc = f->c->env.call(f->c, &r);
	if (rc)
		return rc;
	a = r.rep;
	if (r.rlen < sizeof(*a)) {
		frame_req_done(&r);
		return -EIO;
	}
	f->size = a->size;
	f->reserved = a->reserved;
	frame_req_done(&r);
	return 0;
}

const struct dp_ops dp_tcp_ops = {
	.kind = MARU_DATA_TCP,
	.name = "tcp",
	.open = tcp_open,
	.close = tcp_close,
	.forget = tcp_forget,
	.stats = tcp_stats,
	.read = tcp_read,
	.write = tcp_write,
	.truncate = tcp_truncate,
	.sync = tcp_sync,
};
