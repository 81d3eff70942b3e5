/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/tcp_test.c: the tcp data path (lib/dp/tcp.c) against
 * the fake marud's store: large transfers split into READ/WRITE frames of
 * at most PROTO_MAX_IO, or of marud's smaller max-frame less the request
 * body, contiguous and complete; a socket lost in the middle of a READ
 * reply or a WRITE payload is resent on a fresh socket and the bytes are
 * right; a peer that keeps cutting transfers ends the call with
 * -ETIMEDOUT within timeout_ms instead of hanging; a WRITE answered with
 * fewer bytes done than sent is -EIO. These run the in-line path (streams
 * off: opts.stream_bytes below one frame), except where a test says it
 * runs the streams (dp/tcp_stream_test.c has theirs): a write stream
 * whose socket is cut resends its frames, a read stream whose socket is
 * cut reads in line, and a peer that keeps cutting still ends in time.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "client_priv.h"
#include "dp/tcp_pipe.h"
#include "../fake_store.h"

struct fx {
	struct fake_marud f;
	struct store s;
	struct maru_client *c;
	uint8_t *buf, *back;
};

#define BUF_MAX	(9u << 20)

/* stream_bytes: opts.stream_bytes (1: streams off, 0: the default). */
static struct fx *fx_new_streams(uint64_t max_frame, unsigned int timeout_ms,
				 size_t stream_bytes)
{
	struct fx *x = calloc(1, sizeof(*x));
	size_t i;

	assert_non_null(x);
	store_init(&x->s);
	fake_start(&x->f, store_handler, &x->s);
	x->f.max_frame = max_frame;
	x->c = fake_client(&x->f, timeout_ms, 2, NULL, 0);
	x->c->opts.stream_bytes = stream_bytes;
	/* stream whatever the round trip (this one is a Unix socket's) */
	assert_non_null(x->c->tcp);
	pipe_rtt_bar(x->c, 0);
	x->buf = malloc(BUF_MAX);
	x->back = malloc(BUF_MAX);
	assert_non_null(x->buf);
	assert_non_null(x->back);
	for (i = 0; i < BUF_MAX; i++)
		x->buf[i] = store_byte(i);
	return x;
}

static struct fx *fx_new(uint64_t max_frame, unsigned int timeout_ms)
{
	return fx_new_streams(max_frame, timeout_ms, 1);
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

static long now_ms_(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The frames of op recorded from index from on: contiguous from off, each
 * at most max, summing to len. Returns how many. */
static int check_frames(struct fx *x, int from, uint16_t op, uint64_t off, uint64_t len,
			uint32_t max)
{
	uint64_t at = off;
	int i, n = 0;

	for (i = from; i < x->s.nio; i++) {
		if (x->s.io[i].op != op)
			continue;
		assert_int_equal(x->s.io[i].off, at);
		assert_true(x->s.io[i].len <= max);
		if (op == OP_WRITE)
			assert_int_equal(x->s.io[i].frame,
					 sizeof(struct proto_io_req) + x->s.io[i].len);
		at += x->s.io[i].len;
		n++;
	}
	assert_int_equal(at, off + len);
	return n;
}

static struct maru_file *create(struct fx *x)
{
	struct maru_file *h;

	assert_int_equal(maru_file_create(x->c, 1, "big", 0644, 0, 0, 0, 0, &h), 0);
	return h;
}

static void test_split_small_max_frame(void **state)
{
	const uint64_t len = (1u << 20) + 123;
	const uint32_t max = 64 * 1024 - sizeof(struct proto_io_req);
	struct fx *x = fx_new(64 * 1024, 2000);
	struct maru_file *h = create(x);
	int from;

	(void)state;
	assert_int_equal(maru_file_pwrite(h, x->buf, len, 0), (ssize_t)len);
	/* every frame within marud's max-frame, body included */
	assert_int_equal(check_frames(x, 0, OP_WRITE, 0, len, max), (int)((len + max - 1) / max));
	assert_memory_equal(x->s.data, x->buf, len);
	assert_int_equal(maru_file_size(h), len);
	from = x->s.nio;
	assert_int_equal(maru_file_pread(h, x->back, len, 0), (ssize_t)len);
	assert_int_equal(check_frames(x, from, OP_READ, 0, len, max), (int)((len + max - 1) / max));
	assert_memory_equal(x->back, x->buf, len);
	/* an unaligned piece in the middle */
	from = x->s.nio;
	assert_int_equal(maru_file_pread(h, x->back, 200000, 77777), 200000);
	check_frames(x, from, OP_READ, 77777, 200000, max);
	assert_memory_equal(x->back, x->buf + 77777, 200000);
	maru_file_close(h);
	fx_free(x);
}

static void test_split_at_max_io(void **state)
{
	const uint64_t len = BUF_MAX;	/* 9 MiB: 4 + 4 + 1 */
	struct fx *x = fx_new(0, 5000);
	struct maru_file *h = create(x);
	int from;

	(void)state;
	assert_int_equal(maru_file_pwrite(h, x->buf, len, 0), (ssize_t)len);
	assert_int_equal(check_frames(x, 0, OP_WRITE, 0, len, PROTO_MAX_IO), 3);
	assert_int_equal(x->s.io[0].len, PROTO_MAX_IO);
	assert_memory_equal(x->s.data, x->buf, len);
	from = x->s.nio;
	memset(x->back, 0, len);
	assert_int_equal(maru_file_pread(h, x->back, len, 0), (ssize_t)len);
	assert_int_equal(check_frames(x, from, OP_READ, 0, len, PROTO_MAX_IO), 3);
	assert_memory_equal(x->back, x->buf, len);
	assert_int_equal(atomic_load(&x->c->st.dp[MARU_DATA_TCP].rd_bytes), len);
	assert_int_equal(atomic_load(&x->c->st.dp[MARU_DATA_TCP].wr_bytes), len);
	maru_file_close(h);
	fx_free(x);
}

static void publish_pattern(struct fx *x, uint64_t len)
{
	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = len;
	memcpy(x->s.data, x->buf, len);
}

static void test_read_cut_once(void **state)
{
	struct fx *x = fx_new(0, 2000);
	struct maru_file *h;

	(void)state;
	publish_pattern(x, 300000);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	x->s.cut_reads = 1;	/* half a reply, then the socket is gone */
	assert_int_equal(maru_file_pread(h, x->back, 300000, 0), 300000);
	assert_memory_equal(x->back, x->buf, 300000);
	/* the same READ again, on a fresh socket */
	assert_int_equal(x->s.nio, 2);
	assert_int_equal(x->s.io[1].off, 0);
	assert_int_equal(x->s.io[1].len, 300000);
	assert_int_equal(atomic_load(&x->c->st.reconnects), 1);
	maru_file_close(h);
	fx_free(x);
}

static void test_write_cut_once(void **state)
{
	struct fx *x = fx_new(0, 2000);
	struct maru_file *h = create(x);

	(void)state;
	pthread_mutex_lock(&x->f.mu);
	x->f.cut_bodies = 1;	/* marud reads 1000 bytes of the WRITE, then dies */
	x->f.cut_at = 1000;
	pthread_mutex_unlock(&x->f.mu);
	/* reserve first: its 16-byte body is not cut */
	assert_int_equal(maru_file_pwrite(h, x->buf, 2 << 20, 0), 2 << 20);
	assert_memory_equal(x->s.data, x->buf, 2 << 20);
	assert_int_equal(x->f.cut_bodies, 0);
	assert_int_equal(x->s.nio, 1);	/* only the resent WRITE was executed */
	maru_file_close(h);
	fx_free(x);
}

/* Streams: the socket of a write stream cut mid-frame; the frames are resent. */
static void test_write_stream_cut_once(void **state)
{
	struct fx *x = fx_new_streams(0, 2000, 0);
	struct maru_file *h = create(x);
	size_t off;

	(void)state;
	pthread_mutex_lock(&x->f.mu);
	x->f.cut_bodies = 1;
	x->f.cut_at = 1000;
	pthread_mutex_unlock(&x->f.mu);
	for (off = 0; off < (2u << 20); off += 128 * 1024)
		assert_int_equal(maru_file_pwrite(h, x->buf + off, 128 * 1024, off), 128 * 1024);
	assert_int_equal(maru_file_sync(h), 0);
	assert_memory_equal(x->s.data, x->buf, 2 << 20);
	assert_int_equal(x->f.cut_bodies, 0);
	assert_true(atomic_load(&x->c->st.tcp.recovered) >= 1);
	assert_int_equal(maru_file_publish(h), 0);
	assert_int_equal(x->s.state, MARU_STATE_PUBLISHED);
	maru_file_close(h);
	fx_free(x);
}

/* Streams: the socket of a read stream cut mid-reply; the read goes in line. */
static void test_read_stream_cut_once(void **state)
{
	struct fx *x = fx_new_streams(0, 2000, 0);
	struct maru_file *h;

	(void)state;
	publish_pattern(x, 3u << 20);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	x->s.cut_reads = 1;
	assert_int_equal(maru_file_pread(h, x->back, 3u << 20, 0), 3u << 20);
	assert_memory_equal(x->back, x->buf, 3u << 20);
	assert_true(atomic_load(&x->c->st.tcp.pipe_errors) >= 1);
	maru_file_close(h);
	fx_free(x);
}

static void test_peer_keeps_cutting(void **state)
{
	struct fx *x = fx_new(0, 400);
	struct maru_file *h = create(x);
	long t0;

	(void)state;
	pthread_mutex_lock(&x->f.mu);
	x->f.cut_bodies = 1000000;
	x->f.cut_at = 1000;
	pthread_mutex_unlock(&x->f.mu);
	assert_int_equal(maru_file_reserve(h, 2 << 20), 0);
	t0 = now_ms_();
	assert_int_equal(maru_file_pwrite(h, x->buf, 2 << 20, 0), -ETIMEDOUT);
	assert_true(now_ms_() - t0 < 400 + 2000);
	maru_file_close(h);
	fx_free(x);

	x = fx_new(0, 400);
	publish_pattern(x, 300000);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	x->s.cut_reads = 1000000;
	t0 = now_ms_();
	assert_int_equal(maru_file_pread(h, x->back, 300000, 0), -ETIMEDOUT);
	assert_true(now_ms_() - t0 < 400 + 2000);
	assert_true(x->s.nio >= 2);		/* it did retry */
	maru_file_close(h);
	fx_free(x);
}

static void test_short_done_is_eio(void **state)
{
	struct fx *x = fx_new(0, 2000);
	struct maru_file *h = create(x);

	(void)state;
	x->s.short_done = 1;
	assert_int_equal(maru_file_pwrite(h, x->buf, 5000, 0), -EIO);
	maru_file_close(h);
	fx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_small_max_frame),
		cmocka_unit_test(test_split_at_max_io),
		cmocka_unit_test(test_read_cut_once),
		cmocka_unit_test(test_write_cut_once),
		cmocka_unit_test(test_write_stream_cut_once),
		cmocka_unit_test(test_read_stream_cut_once),
		cmocka_unit_test(test_peer_keeps_cutting),
		cmocka_unit_test(test_short_done_is_eio),
	};

	return cmocka_run_group_tests_name("dp/tcp", tests, NULL, NULL);
}
