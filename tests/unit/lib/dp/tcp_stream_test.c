/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/tcp_stream_test.c: the tcp data path's streams
 * (lib/dp/tcp_ra.c, tcp_wb.c, tcp_pipe.c) against the fake marud's store,
 * on real Unix sockets: a chunk read in 128 KiB pieces has several READ
 * frames in flight at once (the fake marud, holding the first, finds more
 * requests already queued behind it on its socket) and costs one frame per
 * MiB, not one per piece; a read or write of a whole chunk in one call has
 * its frames in flight too, straight in and out of the caller's buffer
 * (no budget used); what is read ahead never exceeds
 * opts.stream_bytes and at close all is given back but the few frame
 * buffers the client keeps for the next stream (a quarter of the budget); writes have several
 * WRITE frames in flight and publish only after all landed; a WRITE marud
 * answers short poisons the handle: the next write and publish fail with
 * -EIO, the version is abandoned (never published) and a line says why.
 * Emulated: marud (the fake answers from memory, one socket at a time).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "dp/tcp_pipe.h"
#include "../fake_store.h"

#define CHUNK	(8u << 20)
#define PIECE	(128u * 1024)

/* What the handler saw (one test at a time). */
static struct {
	struct maru_client *c;
	uint16_t op;		/* the op whose first request waits */
	size_t frame;		/* bytes of one such request on the wire */
	int waited;
	int most;		/* requests seen in flight at once */
	int64_t held_max;	/* peak of c->st.tcp.held seen by the handler */
	int read_delay_ms;	/* every READ answered this late */
} seen;

static void sleep_ms_(int ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Before answering the first request of seen.op, wait (up to 2 s) until 3
 * more such requests are queued behind it on the socket: proof that the
 * client sent them without waiting for this reply.
 */
static int probe_handler(struct fake_req *q)
{
	int64_t held;
	int i, queued = 0;

	held = atomic_load(&seen.c->st.tcp.held);
	if (held > seen.held_max)
		seen.held_max = held;
	if (q->h.op == seen.op && !seen.waited) {
		seen.waited = 1;
		for (i = 0; i < 200; i++) {
			if (ioctl(q->fd, FIONREAD, &queued) == 0 &&
			    (size_t)queued >= 3 * seen.frame)
				break;
			sleep_ms_(10);
		}
		seen.most = 1 + (int)((size_t)queued / seen.frame);
	}
	if (q->h.op == OP_READ && seen.read_delay_ms)
		sleep_ms_(seen.read_delay_ms);
	return store_handler(q);
}

struct fx {
	struct fake_marud f;
	struct store s;
	struct logbook b;
	struct maru_client *c;
	uint8_t *buf, *back;
};

static struct fx *fx_new(size_t stream_bytes)
{
	struct fx *x = calloc(1, sizeof(*x));
	size_t i;

	assert_non_null(x);
	store_init(&x->s);
	logbook_init(&x->b);
	fake_start(&x->f, probe_handler, &x->s);
	x->c = fake_client(&x->f, 2000, 2, &x->b, LOG_INFO);
	x->c->opts.stream_bytes = stream_bytes;
	/* stream whatever the round trip (this one is a Unix socket's) */
	assert_non_null(x->c->tcp);
	pipe_rtt_bar(x->c, 0);
	memset(&seen, 0, sizeof(seen));
	seen.c = x->c;
	x->buf = malloc(CHUNK);
	x->back = malloc(CHUNK);
	assert_non_null(x->buf);
	assert_non_null(x->back);
	for (i = 0; i < CHUNK; i++)
		x->buf[i] = store_byte(i);
	return x;
}

static void fx_free(struct fx *x)
{
	maru_client_free(x->c);
	fake_stop(&x->f);
	store_free(&x->s);
	free(x->buf);
	free(x->back);
	free(x);
}

/*
 * Every handle closed: what the client still holds are the frame buffers
 * it keeps for the next stream, at most a quarter of the budget.
 */
static void held_after_close(struct fx *x)
{
	size_t limit = x->c->opts.stream_bytes ? x->c->opts.stream_bytes : 64u << 20;

	assert_true(atomic_load(&x->c->st.tcp.held) >= 0);
	assert_true((size_t)atomic_load(&x->c->st.tcp.held) <= limit / 4);
}

static void publish_pattern(struct fx *x, uint64_t len)
{
	pthread_mutex_lock(&x->s.mu);
	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = len;
	memcpy(x->s.data, x->buf, len);
	pthread_mutex_unlock(&x->s.mu);
}

static void read_in_pieces(struct fx *x, struct maru_file *h)
{
	size_t off;

	memset(x->back, 0, CHUNK);
	for (off = 0; off < CHUNK; off += PIECE)
		assert_int_equal(maru_file_pread(h, x->back + off, PIECE, off), PIECE);
	assert_memory_equal(x->back, x->buf, CHUNK);
}

static void test_reads_in_flight(void **state)
{
	struct fx *x = fx_new(0);
	struct maru_file *h;

	(void)state;
	seen.op = OP_READ;
	seen.frame = sizeof(struct proto_hdr) + sizeof(struct proto_io_req);
	publish_pattern(x, CHUNK);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	read_in_pieces(x, h);
	assert_true(seen.most >= 4);
	/* one 1 MiB frame per MiB, not one per 128 KiB piece, and one of
	 * them waited a whole round trip: the rest were in flight behind it */
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), CHUNK / (1u << 20));
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_trips), 1);
	assert_int_equal(atomic_load(&x->c->st.dp[MARU_DATA_TCP].rd_bytes), CHUNK);
	/* past the end: nothing, and nothing more asked */
	assert_int_equal(maru_file_pread(h, x->back, PIECE, CHUNK), 0);
	maru_file_close(h);
	held_after_close(x);
	fx_free(x);
}

/*
 * Whether to stream is the round trip's. The bar here is 20 ms (the
 * default, 500 us, is too close to what a loaded 2-core machine makes of
 * a Unix socket's round trip), far above this one (a READ of a piece
 * answered in microseconds): a chunk read in pieces goes in line, one
 * frame per piece straight into the caller's buffer, no stream socket,
 * nothing held (the stream's copy would cost more than the round trips
 * it saves). Then marud answers every READ 40 ms late (a real delay,
 * above the bar): the next handle's first pieces, still in line, measure
 * it and the rest of the chunk streams (frames of 1 MiB on a socket of
 * its own).
 */
static void test_stream_only_when_round_trips_cost(void **state)
{
	struct fx *x = fx_new(0);
	struct maru_file *h;
	uint64_t frames;

	(void)state;
	pipe_rtt_bar(x->c, 20u * 1000 * 1000);
	publish_pattern(x, CHUNK);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	read_in_pieces(x, h);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), CHUNK / PIECE);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_trips), CHUNK / PIECE);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 0);
	assert_int_equal(seen.held_max, 0);
	maru_file_close(h);

	/* a stall as long as a retransmission timer is taken whole: stream */
	pipe_rtt_sample(x->c, 100u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	pipe_rtt_sample(x->c, 40u * 1000 * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 0);	/* load: an eighth of it */
	pipe_rtt_sample(x->c, 100u * 1000);
	pipe_rtt_sample(x->c, TCP_RTT_STALL_NS);
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	pipe_rtt_sample(x->c, 100u * 1000);

	seen.read_delay_ms = 40;
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	read_in_pieces(x, h);
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	frames = atomic_load(&x->c->st.tcp.rd_frames) - CHUNK / PIECE;
	assert_true(frames < CHUNK / PIECE / 2);
	assert_true(atomic_load(&x->c->st.tcp.dials) >= 1);
	assert_true(seen.held_max > 0);
	maru_file_close(h);
	held_after_close(x);
	fx_free(x);
}

static void test_readahead_bounded(void **state)
{
	const size_t limit = 3u << 20;
	struct fx *x = fx_new(limit);
	struct maru_file *h, *h2;
	size_t off;

	(void)state;
	publish_pattern(x, CHUNK);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h2), 0);
	/* two readers share the budget; neither ever holds more than it */
	memset(x->back, 0, CHUNK);
	for (off = 0; off < CHUNK; off += PIECE) {
		assert_int_equal(maru_file_pread(h, x->back + off, PIECE, off), PIECE);
		assert_true(atomic_load(&x->c->st.tcp.held) <= (int64_t)limit);
		assert_int_equal(maru_file_pread(h2, x->back + off, PIECE, off), PIECE);
		assert_true(atomic_load(&x->c->st.tcp.held) <= (int64_t)limit);
	}
	assert_memory_equal(x->back, x->buf, CHUNK);
	assert_true(seen.held_max <= (int64_t)limit);
	assert_true(seen.held_max >= (int64_t)(1u << 20));
	assert_true(atomic_load(&x->c->st.tcp.refused) > 0);
	maru_file_close(h);
	maru_file_close(h2);
	/* a quarter of 3 MiB holds no 1 MiB buffer: all given back */
	assert_int_equal(atomic_load(&x->c->st.tcp.held), 0);
	fx_free(x);
}

static void test_writes_in_flight(void **state)
{
	const size_t piece = 4096;
	struct fx *x = fx_new(0);
	struct maru_file *h;
	size_t off;

	(void)state;
	seen.op = OP_WRITE;
	seen.frame = sizeof(struct proto_hdr) + sizeof(struct proto_io_req) + piece;
	assert_int_equal(maru_file_create(x->c, 1, "w", 0644, 0, 0, 0, 0, &h), 0);
	for (off = 0; off < 64 * piece; off += piece)
		assert_int_equal(maru_file_pwrite(h, x->buf + off, piece, off), (ssize_t)piece);
	assert_int_equal(maru_file_publish(h), 0);
	assert_true(seen.most >= 4);
	/* published only after every frame landed */
	assert_int_equal(x->s.state, MARU_STATE_PUBLISHED);
	assert_int_equal(x->s.size, 64 * piece);
	assert_memory_equal(x->s.data, x->buf, 64 * piece);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), 64);
	maru_file_close(h);
	held_after_close(x);
	fx_free(x);
}

/* Big calls: their own frames in flight, straight into / out of the caller's buffer. */
static void test_big_calls(void **state)
{
	struct fx *x = fx_new(0);
	struct maru_file *h;

	(void)state;
	seen.op = OP_READ;
	seen.frame = sizeof(struct proto_hdr) + sizeof(struct proto_io_req);
	assert_int_equal(maru_file_create(x->c, 1, "w", 0644, 0, 0, 0, 0, &h), 0);
	assert_int_equal(maru_file_pwrite(h, x->buf, CHUNK, 0), (ssize_t)CHUNK);
	/* answered before it returned: the bytes are there already */
	assert_memory_equal(x->s.data, x->buf, CHUNK);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), CHUNK / (1u << 20));
	assert_int_equal(maru_file_publish(h), 0);
	maru_file_close(h);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	memset(x->back, 0, CHUNK);
	assert_int_equal(maru_file_pread(h, x->back, CHUNK, 0), (ssize_t)CHUNK);
	assert_memory_equal(x->back, x->buf, CHUNK);
	assert_true(seen.most >= 4);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), CHUNK / (1u << 20));
	/* nothing of the budget's: the frames landed in the caller's buffer */
	assert_int_equal(seen.held_max, 0);
	/* read again from the start: right bytes, not what the first buffer held */
	memset(x->back, 0, CHUNK);
	assert_int_equal(maru_file_pread(h, x->back, PIECE, 0), PIECE);
	assert_memory_equal(x->back, x->buf, PIECE);
	maru_file_close(h);
	held_after_close(x);
	fx_free(x);
}

static int has_call(struct fx *x, char c)
{
	char calls[512];

	store_calls(&x->s, calls, sizeof(calls));
	return strchr(calls, c) != NULL;
}

static void test_short_write_poisons(void **state)
{
	struct fx *x = fx_new(0);
	struct maru_file *h;
	size_t off;
	ssize_t rc = 0;

	(void)state;
	assert_int_equal(maru_file_create(x->c, 1, "w", 0644, 0, 0, 0, 0, &h), 0);
	for (off = 0; off < (1u << 20); off += PIECE)
		assert_int_equal(maru_file_pwrite(h, x->buf + off, PIECE, off), PIECE);
	pthread_mutex_lock(&x->s.mu);
	x->s.short_done = 1;	/* marud wrote less than it was sent */
	pthread_mutex_unlock(&x->s.mu);
	/* the failure shows at a later write or at the latest at publish */
	for (off = 1u << 20; off < (4u << 20) && rc >= 0; off += PIECE)
		rc = maru_file_pwrite(h, x->buf + off, PIECE, off);
	assert_true(rc == PIECE || rc == -EIO);
	assert_int_equal(maru_file_sync(h), -EIO);
	assert_int_equal(maru_file_pwrite(h, x->buf, PIECE, 0), -EIO);
	assert_int_equal(maru_file_publish(h), -EIO);
	assert_int_equal(maru_file_publish(h), -EIO);
	/* abandoned, never published: nothing partial visible */
	assert_int_equal(x->s.state, MARU_STATE_PENDING);
	assert_true(has_call(x, 'A'));
	assert_false(has_call(x, 'P'));
	assert_true(logged(&x->b, "will not be published", LOG_WARNING));
	assert_true(logged(&x->b, "abandoned, not published", LOG_WARNING));
	assert_int_equal(atomic_load(&x->c->st.poisoned), 1);
	maru_file_close(h);
	held_after_close(x);
	fx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_in_flight),
		cmocka_unit_test(test_stream_only_when_round_trips_cost),
		cmocka_unit_test(test_readahead_bounded),
		cmocka_unit_test(test_writes_in_flight),
		cmocka_unit_test(test_big_calls),
		cmocka_unit_test(test_short_write_poisons),
	};

	return cmocka_run_group_tests_name("dp/tcp_stream", tests, NULL, NULL);
}
