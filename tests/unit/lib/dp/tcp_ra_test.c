/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/tcp_ra_test.c: lib/dp/tcp_ra.c, ra_read and friends
 * called on a bare stream (as dp/tcp.c calls them, st->lock held). A read
 * at 0 or where the last one ended starts a stream of 1 MiB READ frames,
 * several in flight, never more than TCP_STREAM_WINDOW bytes ahead of the
 * oldest frame nor more than the budget (opts.stream_bytes) holds; reads
 * within the window are served in any order; frames left far behind are
 * dropped; a read elsewhere, or with no budget, is the control path's
 * (-EAGAIN, nothing sent), as is one when no socket can be had; a big read lands straight in the caller's
 * buffer (no budget); a piece answered short inside the version stops the
 * stream, which starts again after it; a socket that breaks or a frame
 * refused is -EAGAIN with the stream dropped; a reply that never comes is
 * -ETIMEDOUT; at the version's end the buffers and the socket go back.
 * Two threads reading one stream get the right bytes. Real: the client,
 * Unix sockets, the wire protocol. Emulated: marud (stream_fixture.c).
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

#include "clock.h"
#include "stream_fixture.h"

/* The size of the version most tests read: 40 frames, the last short. */
#define VSIZE	(VF_MAX - 1000)

static ssize_t rd(struct sfx *x, struct tcp_stream *st, size_t len, uint64_t off)
{
	ssize_t rc;

	memset(x->back + off, 0, len);
	pthread_mutex_lock(&st->lock);
	rc = ra_read(x->h, st, x->back + off, len, off);
	pthread_mutex_unlock(&st->lock);
	if (rc > 0)
		assert_memory_equal(x->back + off, x->pat + off, (size_t)rc);
	return rc;
}

static struct ra_frame *front(struct tcp_stream *st)
{
	return &st->ra[st->ra_head];
}

/* The stream's bounds, after every read. */
static void bounded(struct sfx *x, struct tcp_stream *st)
{
	assert_true(st->ra_n <= TCP_STREAM_SLOTS);
	if (st->ra_n)
		assert_true(st->ra_next - front(st)->off <= TCP_STREAM_WINDOW);
	assert_true(held(x) <= (int64_t)pipe_budget_limit(x->c));
}

static void test_window(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct tcp_stream *st2;
	uint64_t off;

	(void)state;
	sfx_open_published(x, VSIZE);
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	/* a window of 1 MiB frames, sent before the first reply was read */
	assert_int_equal(x->st->ra_n, TCP_STREAM_WINDOW / MIB);
	assert_int_equal(x->st->ra_next, TCP_STREAM_WINDOW);
	assert_int_equal(x->st->p.out, TCP_STREAM_WINDOW / MIB - 1);
	assert_int_equal(held(x), TCP_STREAM_WINDOW);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_trips), 1);
	for (off = PIECE; off < VSIZE; off += PIECE) {
		size_t n = VSIZE - off < PIECE ? VSIZE - off : PIECE;

		assert_int_equal(rd(x, x->st, n, off), (ssize_t)n);
		bounded(x, x->st);
	}
	/* one frame per MiB, and never more queued than the slots */
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), VF_MAX / MIB);
	assert_true(x->v.most_queued <= TCP_STREAM_SLOTS);
	/* the end: frames, buffers and socket given back */
	assert_int_equal(x->st->ra_n, 0);
	assert_int_equal(x->st->ra_nspare, 0);
	assert_int_equal(x->st->p.fd, -1);
	assert_true(held(x) <= (int64_t)TCP_STREAM_DEFAULT / 4);
	/* the next stream takes the pooled socket */
	st2 = stream_new();
	assert_int_equal(rd(x, st2, PIECE, 0), PIECE);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 1);
	stream_free(x->c, st2);
	sfx_free(x);
}

/* Within the window, any order; elsewhere, the control path's. */
static void test_order(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	unsigned int n;

	(void)state;
	sfx_open_published(x, VSIZE);
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	assert_int_equal(rd(x, x->st, PIECE, 3 * MIB), PIECE);
	assert_int_equal(rd(x, x->st, PIECE, 2 * PIECE), PIECE);
	assert_int_equal(rd(x, x->st, PIECE, PIECE), PIECE);
	n = x->st->ra_n;
	assert_int_equal(rd(x, x->st, PIECE, 30 * MIB), -EAGAIN);
	/* the stream keeps its frames, nothing more was asked */
	assert_int_equal(x->st->ra_n, n);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), TCP_STREAM_WINDOW / MIB);
	/* where the last read ended: on */
	assert_int_equal(rd(x, x->st, PIECE, 2 * PIECE), PIECE);
	/* at 0 again, still in the window: no new stream */
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 1);
	sfx_free(x);
}

/* A read not at 0 nor where the last ended waits for the control path. */
static void test_elsewhere(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_open_published(x, VSIZE);
	assert_int_equal(rd(x, x->st, PIECE, 5 * MIB), -EAGAIN);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 0);
	/* tcp.c read it in line and says where it ended: the next follows */
	x->st->ra_seq = 5 * MIB;
	assert_int_equal(rd(x, x->st, PIECE, 5 * MIB), PIECE);
	assert_int_equal(front(x->st)->off, 5 * MIB);
	sfx_free(x);
}

/* Frames far behind the reader go even when not all read. */
static void test_far_behind_dropped(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_open_published(x, VSIZE);
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	assert_int_equal(rd(x, x->st, PIECE, 9 * MIB), PIECE);
	/* frame 0 ends half a window behind: dropped, the window moved */
	assert_int_equal(front(x->st)->off, MIB);
	assert_int_equal(x->st->ra_next, TCP_STREAM_WINDOW + MIB);
	bounded(x, x->st);
	/* at 0 again, behind the window: a new stream (the old socket owed
	 * replies: closed) */
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 2);
	assert_int_equal(front(x->st)->off, 0);
	sfx_free(x);
}

static void test_budget_bound(void **state)
{
	const size_t limit = 3 * MIB;
	struct sfx *x = sfx_new(2000, limit);
	uint64_t off;

	(void)state;
	sfx_open_published(x, VSIZE);
	for (off = 0; off < VSIZE; off += PIECE) {
		size_t n = VSIZE - off < PIECE ? VSIZE - off : PIECE;

		assert_int_equal(rd(x, x->st, n, off), (ssize_t)n);
		assert_true(held(x) <= (int64_t)limit);
		assert_true(x->st->ra_n <= limit / MIB);
	}
	assert_true(x->v.held_max <= (int64_t)limit);
	assert_true(atomic_load(&x->c->st.tcp.refused) > 0);
	/* a quarter of 3 MiB keeps no 1 MiB buffer */
	assert_int_equal(held(x), 0);
	sfx_free(x);
}

static void test_no_budget(void **state)
{
	struct sfx *x = sfx_new(2000, MIB - 1);

	(void)state;
	sfx_open_published(x, VSIZE);
	assert_int_equal(rd(x, x->st, PIECE, 0), -EAGAIN);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 0);
	sfx_free(x);
}

/* A big read: its frames land in the caller's buffer, none of the budget. */
static void test_direct(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_open_published(x, 8 * MIB);
	assert_int_equal(rd(x, x->st, 8 * MIB, 0), 8 * MIB);
	assert_int_equal(x->v.held_max, 0);
	assert_int_equal(held(x), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), 8);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_trips), 1);
	/* read to the end: nothing left pointing into the caller's buffer */
	assert_int_equal(x->st->ra_n, 0);
	assert_int_equal(x->st->p.fd, -1);
	sfx_free(x);
}

/* After a big read the stream reads ahead into its own buffers only. */
static void test_direct_then_ahead(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	unsigned int i;

	(void)state;
	sfx_open_published(x, VSIZE);
	assert_int_equal(rd(x, x->st, 4 * MIB, 0), 4 * MIB);
	assert_int_equal(x->st->ra_n, TCP_STREAM_WINDOW / MIB);
	assert_int_equal(front(x->st)->off, 4 * MIB);
	for (i = 0; i < x->st->ra_n; i++)
		assert_false(x->st->ra[(x->st->ra_head + i) % TCP_STREAM_SLOTS].direct);
	/* the caller's buffer is not written again: later bytes go to theirs */
	memset(x->back, 0xee, 4 * MIB);
	assert_int_equal(rd(x, x->st, PIECE, 4 * MIB), PIECE);
	assert_int_equal(rd(x, x->st, 4 * MIB, 4 * MIB + PIECE), 4 * MIB);
	for (i = 0; i < 4 * MIB; i++)
		assert_int_equal(x->back[i], 0xee);
	sfx_free(x);
}

/* A frame answered short inside the version: the rest in line, then on. */
static void test_short_inside(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	uint64_t off;

	(void)state;
	sfx_open_published(x, VSIZE);
	sfx_fault(x, OP_READ, VF_SHORT, 2, 0);
	for (off = 0; off < MIB + MIB / 2; off += PIECE)
		assert_int_equal(rd(x, x->st, PIECE, off), PIECE);
	assert_int_equal(rd(x, x->st, PIECE, off), -EAGAIN);
	assert_int_equal(x->st->ra_n, 0);
	assert_int_equal(x->st->ra_on, 0);
	/* tcp.c read [1.5 MiB, 2 MiB) in line: the stream starts after it */
	x->st->ra_seq = 2 * MIB;
	assert_int_equal(rd(x, x->st, PIECE, 2 * MIB), PIECE);
	assert_int_equal(front(x->st)->off, 2 * MIB);
	sfx_free(x);
}

/* A socket that breaks or a refused frame: -EAGAIN, the stream dropped. */
static void broken(enum vf_fault fault)
{
	struct sfx *x = sfx_new(2000, 0);
	uint64_t off;

	sfx_open_published(x, VSIZE);
	x->v.status = -EIO;
	sfx_fault(x, OP_READ, fault, 3, 0);
	for (off = 0; off < 2 * MIB; off += PIECE)
		assert_int_equal(rd(x, x->st, PIECE, off), PIECE);
	assert_int_equal(rd(x, x->st, PIECE, off), -EAGAIN);
	assert_int_equal(x->st->ra_n, 0);
	assert_int_equal(x->st->p.fd, -1);
	assert_int_equal(x->st->p.out, 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.pipe_errors), 1);
	assert_true(logged(&x->b, "read-ahead of version 100 stopped", LOG_DEBUG));
	/* the buffers are the stream's spares until it is released */
	pthread_mutex_lock(&x->st->lock);
	ra_release(x->c, x->st);
	pthread_mutex_unlock(&x->st->lock);
	assert_true(held(x) <= (int64_t)TCP_STREAM_DEFAULT / 4);
	/* tcp.c read it in line: a new stream starts after it */
	x->st->ra_seq = off + PIECE;
	assert_int_equal(rd(x, x->st, PIECE, off + PIECE), PIECE);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 2);
	sfx_free(x);
}

static void test_socket_breaks(void **state)
{
	(void)state;
	broken(VF_CLOSE);
}

static void test_frame_refused(void **state)
{
	(void)state;
	broken(VF_STATUS);
}

static void test_protocol_error(void **state)
{
	(void)state;
	broken(VF_REQID);
}

/* No socket to be had (marud refuses the stream's HELLO): in line. */
static void test_no_socket(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_open_published(x, VSIZE);
	pthread_mutex_lock(&x->f.mu);
	x->f.hello_status = -EMFILE;
	pthread_mutex_unlock(&x->f.mu);
	assert_int_equal(rd(x, x->st, PIECE, 0), -EAGAIN);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), 0);
	assert_int_equal(x->st->ra_n, 0);
	assert_int_equal(x->st->p.fd, -1);
	assert_int_equal(atomic_load(&x->c->st.tcp.pipe_errors), 2);	/* dial, stream */
	pthread_mutex_lock(&x->f.mu);
	x->f.hello_status = 0;
	pthread_mutex_unlock(&x->f.mu);
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	sfx_free(x);
}

/* A reply that never comes: the caller's answer is -ETIMEDOUT, in time. */
static void test_timeout(void **state)
{
	struct sfx *x = sfx_new(300, 0);
	uint64_t t0, ms;

	(void)state;
	sfx_open_published(x, VSIZE);
	x->v.delay_ms = 1500;
	sfx_fault(x, OP_READ, VF_DELAY, 2, 0);
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	t0 = mono_ms();
	assert_int_equal(rd(x, x->st, PIECE, MIB), -ETIMEDOUT);
	ms = mono_ms() - t0;
	assert_true(ms >= 250 && ms < 1400);
	assert_int_equal(x->st->ra_n, 0);
	assert_int_equal(x->st->p.fd, -1);
	sfx_free(x);
}

/* ra_reset with replies owed closes the socket; release gives buffers back. */
static void test_reset(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	sfx_open_published(x, VSIZE);
	assert_int_equal(rd(x, x->st, PIECE, 0), PIECE);
	assert_true(x->st->p.out > 0);
	pthread_mutex_lock(&x->st->lock);
	ra_reset(x->c, x->st);
	assert_int_equal(x->st->ra_n, 0);
	assert_int_equal(x->st->p.fd, -1);
	assert_int_equal(x->st->ra_nspare, TCP_STREAM_WINDOW / MIB);
	ra_release(x->c, x->st);
	pthread_mutex_unlock(&x->st->lock);
	assert_int_equal(x->st->ra_nspare, 0);
	assert_true(held(x) <= (int64_t)TCP_STREAM_DEFAULT / 4);
	sfx_free(x);
}

struct reader {
	struct sfx *x;
	unsigned int first;	/* piece it starts at; it reads every other one */
	size_t streamed;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct sfx *x = r->x;
	uint64_t off;
	size_t n;
	ssize_t rc;

	for (off = (uint64_t)r->first * PIECE; off < VSIZE; off += 2 * PIECE) {
		n = VSIZE - off < PIECE ? VSIZE - off : PIECE;
		pthread_mutex_lock(&x->st->lock);
		rc = ra_read(x->h, x->st, x->back + off, n, off);
		/* what the stream did not give tcp.c reads in line, and
		 * notes where that read ended */
		if (rc == -EAGAIN || (rc >= 0 && (size_t)rc < n))
			x->st->ra_seq = off + n;
		pthread_mutex_unlock(&x->st->lock);
		if (rc == -EAGAIN)
			continue;
		if (rc < 0 || memcmp(x->back + off, x->pat + off, (size_t)rc))
			return arg;
		r->streamed += (size_t)rc;
	}
	return NULL;
}

static void test_two_readers(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct reader r[2] = { { .x = x, .first = 0 }, { .x = x, .first = 1 } };
	pthread_t t[2];
	void *ret;
	int i;

	(void)state;
	sfx_open_published(x, VSIZE);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader_main, &r[i]), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	/* much of it came from the stream (one reader far ahead of the
	 * other leaves the other's pieces to the control path) */
	assert_true(r[0].streamed + r[1].streamed >= VSIZE / 4);
	sfx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_elsewhere),
		cmocka_unit_test(test_far_behind_dropped),
		cmocka_unit_test(test_budget_bound),
		cmocka_unit_test(test_no_budget),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_direct_then_ahead),
		cmocka_unit_test(test_short_inside),
		cmocka_unit_test(test_socket_breaks),
		cmocka_unit_test(test_frame_refused),
		cmocka_unit_test(test_protocol_error),
		cmocka_unit_test(test_no_socket),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_two_readers),
	};

	return cmocka_run_group_tests_name("dp/tcp_ra", tests, NULL, NULL);
}
