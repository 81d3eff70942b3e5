/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/tcp_wb_test.c: lib/dp/tcp_wb.c, wb_write and wb_drain
 * called on a bare stream (as dp/tcp.c calls them, st->lock held). A small
 * write returns before marud answers, its bytes copied (the caller's
 * buffer is theirs again at once) and packed into 1 MiB chunks of the
 * budget; frames reach marud in the order written, never more than
 * TCP_STREAM_SLOTS frames nor TCP_STREAM_WINDOW bytes unanswered, nor
 * more copies than the budget (opts.stream_bytes) holds; with no budget
 * or no socket each frame goes in line; a big write goes out of the caller's buffer
 * and is answered before it returns (no budget). wb_drain answers all and
 * gives every chunk and the socket back. Failures: a socket that breaks
 * loses no byte (the frames are sent again in line, counted as resent); a
 * frame refused, answered short or answered for another frame poisons the
 * handle (its first error, returned by every later write and drain, one
 * warning); a resend that fails too poisons it. wb_reset drops what is
 * unanswered. Real: the client, Unix sockets, the wire protocol, the
 * control path's retries. Emulated: marud (stream_fixture.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cmocka.h>

#include "stream_fixture.h"

static ssize_t wr(struct sfx *x, const uint8_t *buf, size_t len, uint64_t off, uint32_t max)
{
	ssize_t rc;

	pthread_mutex_lock(&x->st->lock);
	rc = wb_write(x->h, x->st, buf, len, off, max);
	pthread_mutex_unlock(&x->st->lock);
	return rc;
}

static int drain(struct sfx *x)
{
	int rc;

	pthread_mutex_lock(&x->st->lock);
	rc = wb_drain(x->h, x->st);
	pthread_mutex_unlock(&x->st->lock);
	return rc;
}

/* Pieces of the pattern over [0, len), each returning its length. */
static void write_pieces(struct sfx *x, size_t len, size_t piece)
{
	size_t off;

	for (off = 0; off < len; off += piece) {
		assert_int_equal(wr(x, x->pat + off, piece, off, MIB), (ssize_t)piece);
		assert_true(x->st->wb_n <= TCP_STREAM_SLOTS);
		assert_true(x->st->wb_bytes <= TCP_STREAM_WINDOW);
		assert_true(held(x) <= (int64_t)pipe_budget_limit(x->c));
	}
}

/* Drained: all landed in order, nothing held but the kept buffers. */
static void landed(struct sfx *x, size_t len)
{
	assert_int_equal(drain(x), 0);
	assert_int_equal(x->st->wb_n, 0);
	assert_int_equal(x->st->wb_bytes, 0);
	assert_int_equal(x->st->wb_ch_n, 0);
	assert_int_equal(x->st->p.fd, -1);
	assert_memory_equal(x->v.data, x->pat, len);
	assert_true(held(x) <= (int64_t)pipe_budget_limit(x->c) / 4);
}

static void test_behind(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	uint8_t *mine = malloc(PIECE);

	(void)state;
	assert_non_null(mine);
	sfx_create(x);
	write_pieces(x, 7 * PIECE, PIECE);
	/* the caller's bytes are copied: theirs to change at once */
	memcpy(mine, x->pat + 7 * PIECE, PIECE);
	assert_int_equal(wr(x, mine, PIECE, 7 * PIECE, MIB), PIECE);
	memset(mine, 0xee, PIECE);
	/* none answered yet: all eight out, in one chunk of copies */
	assert_int_equal(x->st->wb_n, 8);
	assert_int_equal(x->st->p.out, 8);
	assert_int_equal(x->st->wb_bytes, MIB);
	assert_int_equal(x->st->wb_ch_n, 1);
	assert_int_equal(held(x), MIB);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), 8);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_trips), 1);
	landed(x, MIB);
	assert_false(x->v.wr_unordered);
	assert_int_equal(atomic_load(&x->h->poison), 0);
	/* a later write of the same bytes wins */
	memset(mine, 0x55, PIECE);
	assert_int_equal(wr(x, mine, PIECE, 0, MIB), PIECE);
	memset(mine, 0x66, PIECE);
	assert_int_equal(wr(x, mine, PIECE, 0, MIB), PIECE);
	assert_int_equal(drain(x), 0);
	assert_memory_equal(x->v.data, mine, PIECE);
	free(mine);
	sfx_free(x);
}

/* Small frames: at most TCP_STREAM_SLOTS unanswered. */
static void test_slots(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_create(x);
	write_pieces(x, 64 * 4096, 4096);
	assert_int_equal(x->st->wb_n, TCP_STREAM_SLOTS);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), 64);
	landed(x, 64 * 4096);
	assert_int_equal(x->v.writes, 64);
	assert_false(x->v.wr_unordered);
	sfx_free(x);
}

/* 1 MiB frames: at most TCP_STREAM_WINDOW bytes unanswered. */
static void test_window(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_create(x);
	write_pieces(x, VF_MAX, MIB);
	assert_int_equal(x->st->wb_bytes, TCP_STREAM_WINDOW);
	/* copies only of what is unanswered (a chunk more being filled) */
	assert_true(x->v.held_max <= (int64_t)TCP_STREAM_WINDOW + MIB);
	landed(x, VF_MAX);
	assert_false(x->v.wr_unordered);
	sfx_free(x);
}

static void test_budget_bound(void **state)
{
	const size_t limit = 3 * MIB;
	struct sfx *x = sfx_new(2000, limit);

	(void)state;
	sfx_create(x);
	write_pieces(x, 10 * MIB, PIECE);
	assert_true(x->v.held_max <= (int64_t)limit);
	assert_true(atomic_load(&x->c->st.tcp.refused) > 0);
	landed(x, 10 * MIB);
	assert_int_equal(held(x), 0);
	sfx_free(x);
}

/* No room for one copy: each frame in line, answered before it returns. */
static void test_no_budget(void **state)
{
	struct sfx *x = sfx_new(2000, MIB - 1);
	size_t off;

	(void)state;
	sfx_create(x);
	for (off = 0; off < 4 * PIECE; off += PIECE) {
		assert_int_equal(wr(x, x->pat + off, PIECE, off, MIB), PIECE);
		assert_int_equal(x->st->wb_n, 0);
		assert_memory_equal(x->v.data + off, x->pat + off, PIECE);
	}
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_trips), 4);
	assert_int_equal(x->v.held_max, 0);
	landed(x, 4 * PIECE);
	sfx_free(x);
}

/* No socket to be had (marud refuses the stream's HELLO): in line. */
static void test_no_socket(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	size_t off;

	(void)state;
	sfx_create(x);
	pthread_mutex_lock(&x->f.mu);
	x->f.hello_status = -EMFILE;
	pthread_mutex_unlock(&x->f.mu);
	for (off = 0; off < 4 * PIECE; off += PIECE) {
		assert_int_equal(wr(x, x->pat + off, PIECE, off, MIB), PIECE);
		assert_int_equal(x->st->wb_n, 0);
		assert_memory_equal(x->v.data + off, x->pat + off, PIECE);
	}
	/* and a big one */
	assert_int_equal(wr(x, x->pat + 4 * PIECE, 4 * MIB, 4 * PIECE, MIB), 4 * MIB);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 0);
	assert_int_equal(atomic_load(&x->h->poison), 0);
	/* at most the chunk the stream fills next, given back when drained */
	assert_true(held(x) <= MIB);
	pthread_mutex_lock(&x->f.mu);
	x->f.hello_status = 0;
	pthread_mutex_unlock(&x->f.mu);
	landed(x, 4 * PIECE + 4 * MIB);
	sfx_free(x);
}

/* A big write: out of the caller's buffer, answered before it returns. */
static void test_direct(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_create(x);
	assert_int_equal(wr(x, x->pat, 8 * MIB, 0, MIB), 8 * MIB);
	assert_int_equal(x->st->wb_n, 0);
	assert_memory_equal(x->v.data, x->pat, 8 * MIB);
	assert_int_equal(x->v.held_max, 0);
	assert_int_equal(held(x), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), 8);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_trips), 1);
	/* frames as big as the caller says (marud's max-frame), 1 MiB at most */
	assert_int_equal(wr(x, x->pat + 8 * MIB, 4 * MIB, 8 * MIB, 512u << 10), 4 * MIB);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), 16);
	assert_int_equal(wr(x, x->pat + 12 * MIB, 4 * MIB, 12 * MIB, 4 * MIB), 4 * MIB);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), 20);
	landed(x, 16 * MIB);
	assert_false(x->v.wr_unordered);
	sfx_free(x);
}

/* One frame goes wrong: the handle's first error, every later call's. */
static void poisoned(enum vf_fault fault, int err, const char *why)
{
	struct sfx *x = sfx_new(2000, 0);
	unsigned int writes;

	sfx_create(x);
	x->v.status = -EREMOTEIO;
	sfx_fault(x, OP_WRITE, fault, 3, 0);
	write_pieces(x, 8 * PIECE, PIECE);
	assert_int_equal(drain(x), err);
	assert_int_equal(atomic_load(&x->h->poison), err);
	assert_int_equal(x->st->wb_n, 0);
	assert_int_equal(x->st->wb_ch_n, 0);
	assert_true(logged(&x->b, "pending version 100 will not be published", LOG_WARNING));
	assert_true(logged(&x->b, why, LOG_WARNING));
	/* nothing more is sent for this version */
	writes = atomic_load(&x->c->st.tcp.wr_frames);
	assert_int_equal(wr(x, x->pat, PIECE, 0, MIB), err);
	assert_int_equal(wr(x, x->pat, 8 * MIB, 0, MIB), err);
	assert_int_equal(drain(x), err);
	assert_int_equal(atomic_load(&x->c->st.tcp.wr_frames), writes);
	assert_true(held(x) <= (int64_t)TCP_STREAM_DEFAULT / 4);
	sfx_free(x);
}

static void test_refused(void **state)
{
	(void)state;
	poisoned(VF_STATUS, -EREMOTEIO, "marud refused a WRITE");
}

static void test_answered_short(void **state)
{
	(void)state;
	poisoned(VF_SHORT, -EIO, "a WRITE was answered short");
}

static void test_protocol_error(void **state)
{
	(void)state;
	poisoned(VF_REQID, -EIO, "protocol error on a WRITE reply");
}

/* The socket breaks: no byte lost, the frames sent again in line. */
static void test_socket_breaks(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_create(x);
	sfx_fault(x, OP_WRITE, VF_CLOSE, 3, 0);
	write_pieces(x, 16 * PIECE, PIECE);
	landed(x, 16 * PIECE);
	assert_int_equal(atomic_load(&x->h->poison), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.recovered), 1);
	assert_int_equal(atomic_load(&x->c->st.tcp.pipe_errors), 1);
	assert_true(logged(&x->b, "write stream of version 100 broke", LOG_DEBUG));
	/* the next writes take a new socket */
	write_pieces(x, 2 * PIECE, PIECE);
	landed(x, 2 * PIECE);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 2);
	sfx_free(x);
}

/* A big write whose socket breaks: all of it lands all the same. */
static void test_direct_socket_breaks(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_create(x);
	sfx_fault(x, OP_WRITE, VF_CLOSE, 3, 0);
	assert_int_equal(wr(x, x->pat, 8 * MIB, 0, MIB), 8 * MIB);
	assert_int_equal(x->st->wb_n, 0);
	assert_memory_equal(x->v.data, x->pat, 8 * MIB);
	assert_int_equal(atomic_load(&x->h->poison), 0);
	assert_true(atomic_load(&x->c->st.tcp.recovered) >= 1);
	sfx_free(x);
}

/* The resend fails too (marud closes every WRITE): poisoned, in time. */
static void test_resend_fails(void **state)
{
	struct sfx *x = sfx_new(400, 0);
	ssize_t rc = 0;
	size_t off;

	(void)state;
	sfx_create(x);
	sfx_fault(x, OP_WRITE, VF_CLOSE, 3, 1000);
	/* a write that finds the socket gone resends at once: it may fail */
	for (off = 0; off < 8 * PIECE && rc >= 0; off += PIECE)
		rc = wr(x, x->pat + off, PIECE, off, MIB);
	assert_true(rc == PIECE || rc < 0);
	rc = drain(x);
	assert_true(rc < 0);
	assert_int_equal(atomic_load(&x->h->poison), rc);
	assert_int_equal(atomic_load(&x->c->st.tcp.recovered), 0);
	assert_true(logged(&x->b, "a WRITE failed after its stream broke", LOG_WARNING));
	assert_int_equal(x->st->wb_n, 0);
	sfx_free(x);
}

/* The handle closes with frames out: dropped, their copies given back. */
static void test_reset(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_create(x);
	write_pieces(x, 12 * PIECE, PIECE);
	assert_true(x->st->p.out > 0);
	pthread_mutex_lock(&x->st->lock);
	wb_reset(x->c, x->st);
	pthread_mutex_unlock(&x->st->lock);
	assert_int_equal(x->st->wb_n, 0);
	assert_int_equal(x->st->wb_bytes, 0);
	assert_int_equal(x->st->wb_ch_n, 0);
	assert_int_equal(x->st->p.fd, -1);
	assert_true(held(x) <= (int64_t)TCP_STREAM_DEFAULT / 4);
	assert_int_equal(atomic_load(&x->h->poison), 0);
	sfx_free(x);
}

/* The first error stays; a positive one is -EIO; one line only. */
static void test_poison_first(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	int i, lines = 0;

	(void)state;
	sfx_create(x);
	tcp_poison(x->h, -ENOSPC, "first");
	tcp_poison(x->h, -EIO, "second");
	assert_int_equal(atomic_load(&x->h->poison), -ENOSPC);
	assert_true(logged(&x->b, "will not be published: first", LOG_WARNING));
	assert_false(logged(&x->b, "second", -1));
	for (i = 0; i < x->b.n && i < 64; i++)
		lines += strstr(x->b.lines[i], "will not be published") != NULL;
	assert_int_equal(lines, 1);
	atomic_store(&x->h->poison, 0);
	tcp_poison(x->h, 5, "odd");
	assert_int_equal(atomic_load(&x->h->poison), -EIO);
	atomic_store(&x->h->poison, 0);	/* the handle closes clean */
	sfx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_behind),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_budget_bound),
		cmocka_unit_test(test_no_budget),
		cmocka_unit_test(test_no_socket),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_answered_short),
		cmocka_unit_test(test_protocol_error),
		cmocka_unit_test(test_socket_breaks),
		cmocka_unit_test(test_direct_socket_breaks),
		cmocka_unit_test(test_resend_fails),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_poison_first),
	};

	return cmocka_run_group_tests_name("dp/tcp_wb", tests, NULL, NULL);
}
