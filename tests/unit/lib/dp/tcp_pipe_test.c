/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/tcp_pipe_test.c: lib/dp/tcp_pipe.c on its own calls.
 * The budget: opts.stream_bytes (64 MiB when 0) is never exceeded, a take
 * beyond it is refused and counted; frame buffers come out of it, a few
 * (at most a quarter of it, at most 16) are kept for the next stream and
 * given back when the path closes. The sockets: one dialled per stream
 * (AUTH-less HELLO reclaiming the client's session), pooled when idle and
 * taken again without a dial, closed instead when replies are owed or
 * the session moved on; a HELLO that does not reclaim the handle's session
 * is -ESTALE; with a key it authenticates first (a key marud does not
 * know: -EACCES). Frames pipelined on one socket are answered in order, a
 * reply read for the wrong frame is -EPROTO, one that never comes is
 * -ETIMEDOUT within timeout_ms. The round-trip estimate falls at once,
 * rises an eighth of the way, takes a stall whole, goes stale unsampled.
 * Real: the client, Unix sockets, the wire protocol. Emulated: marud
 * (tests/unit/lib/fake_marud.c with stream_fixture.c's handler).
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

#include "clock.h"
#include "stream_fixture.h"

static void test_budget(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	assert_int_equal(pipe_budget_limit(x->c), TCP_STREAM_DEFAULT);
	x->c->opts.stream_bytes = 3 * MIB;
	assert_int_equal(pipe_budget_limit(x->c), 3 * MIB);
	assert_int_equal(pipe_budget_take(x->c, 2 * MIB), 1);
	assert_int_equal(pipe_budget_take(x->c, MIB), 1);
	assert_int_equal(held(x), 3 * MIB);
	/* one byte more is refused, and counted */
	assert_int_equal(pipe_budget_take(x->c, 1), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.refused), 1);
	assert_int_equal(held(x), 3 * MIB);
	pipe_budget_give(x->c, 2 * MIB);
	assert_int_equal(pipe_budget_take(x->c, MIB), 1);
	pipe_budget_give(x->c, 2 * MIB);
	assert_int_equal(held(x), 0);
	sfx_free(x);
}

/* Buffers of the budget; a quarter of it kept at put, the rest freed. */
static void test_buffers_kept(void **state)
{
	struct sfx *x = sfx_new(2000, 8 * MIB);
	uint8_t *b[9];
	int i;

	(void)state;
	for (i = 0; i < 8; i++) {
		b[i] = pipe_buf_get(x->c);
		assert_non_null(b[i]);
		memset(b[i], i, TCP_STREAM_FRAME);	/* all of it is ours (ASan) */
	}
	assert_int_equal(held(x), 8 * MIB);
	assert_null(pipe_buf_get(x->c));
	assert_int_equal(atomic_load(&x->c->st.tcp.refused), 1);
	for (i = 0; i < 8; i++)
		pipe_buf_put(x->c, b[i]);
	/* two kept (a quarter of 8 MiB): still counted */
	assert_int_equal(held(x), 2 * MIB);
	/* taken again without a new take from the budget */
	b[0] = pipe_buf_get(x->c);
	b[1] = pipe_buf_get(x->c);
	assert_int_equal(held(x), 2 * MIB);
	b[2] = pipe_buf_get(x->c);
	assert_int_equal(held(x), 3 * MIB);
	for (i = 0; i < 3; i++)
		pipe_buf_put(x->c, b[i]);
	assert_int_equal(held(x), 2 * MIB);
	/* the path closes: the kept ones go back too */
	pthread_rwlock_wrlock(&x->c->dp_lock);
	pipe_pool_close(x->c);
	assert_null(x->c->tcp);
	assert_int_equal(pipe_pool_open(x->c), 0);
	pthread_rwlock_unlock(&x->c->dp_lock);
	assert_int_equal(held(x), 0);
	sfx_free(x);
}

/* The default budget keeps at most 16 buffers (16 MiB, its quarter). */
static void test_buffers_kept_at_most_16(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	uint8_t *b[20];
	int i;

	(void)state;
	for (i = 0; i < 20; i++)
		assert_non_null(b[i] = pipe_buf_get(x->c));
	for (i = 0; i < 20; i++)
		pipe_buf_put(x->c, b[i]);
	assert_int_equal(held(x), 16 * MIB);
	sfx_free(x);
	/* (maru_client_free gave them back: ASan/valgrind see no leak) */
}

static void test_socket_pooled(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct pipe p = PIPE_NONE, p2 = PIPE_NONE;
	int n0 = fake_nhellos(&x->f), fd;

	(void)state;
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_true(p.fd >= 0);
	assert_int_equal(p.out, 0);
	assert_int_equal(p.epoch, x->c->s.epoch);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 1);
	/* a HELLO that reclaims the client's session, not a new one */
	assert_int_equal(fake_nhellos(&x->f), n0 + 1);
	assert_true(x->f.hellos[n0].flags & HELLO_F_RECLAIM);
	assert_memory_equal(x->f.hellos[n0].token, x->c->s.token, 16);
	/* again for a socket it has: nothing happens */
	fd = p.fd;
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(p.fd, fd);
	/* idle: pooled, and the next stream takes it without dialling */
	pipe_put(x->c, &p);
	assert_int_equal(p.fd, -1);
	assert_int_equal(pipe_get(x->c, &p2), 0);
	assert_int_equal(p2.fd, fd);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 1);
	/* two streams at once: two sockets */
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_not_equal(p.fd, p2.fd);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 2);
	pipe_put(x->c, &p);
	pipe_put(x->c, &p2);
	pipe_drop(&p);	/* already given: nothing to close */
	assert_int_equal(p.fd, -1);
	sfx_free(x);
}

/* Replies owed, or another session: closed, not pooled. */
static void test_socket_not_pooled(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct proto_io_req q = { .ino = STORE_INO, .off = 0, .len = 10 };
	struct pipe p = PIPE_NONE;
	uint64_t id;

	(void)state;
	sfx_open_published(x, MIB);
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(pipe_send(x->c, &p, OP_READ, &q, sizeof(q), NULL, 0, &id), 0);
	pipe_put(x->c, &p);
	assert_int_equal(p.fd, -1);
	assert_int_equal(p.out, 0);
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 2);
	pipe_put(x->c, &p);
	/* the session moved on: the pooled socket is not taken, a new one is */
	pthread_mutex_lock(&x->c->lock);
	__atomic_add_fetch(&x->c->s.epoch, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&x->c->lock);
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 3);
	assert_int_equal(p.epoch, x->c->s.epoch);
	/* and one of an older session is closed at put */
	p.epoch--;
	pipe_put(x->c, &p);
	p.epoch = x->c->s.epoch;
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 4);
	pipe_put(x->c, &p);
	sfx_free(x);
}

/* marud forgot the session: the HELLO does not reclaim it, -ESTALE. */
static void test_stale_session(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct pipe p = PIPE_NONE;

	(void)state;
	fake_forget(&x->f);
	assert_int_equal(pipe_get(x->c, &p), -ESTALE);
	assert_int_equal(p.fd, -1);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.pipe_errors), 1);
	sfx_free(x);
}

/* With a key, a stream's socket authenticates before its HELLO. */
static void test_socket_authenticates(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct pipe p = PIPE_NONE;
	uint8_t k[32], other[32];

	(void)state;
	memset(k, 0x3c, sizeof(k));
	memset(other, 0x5a, sizeof(other));
	memcpy(x->c->key, k, sizeof(k));
	x->c->has_key = 1;
	fake_set_key(&x->f, k, k);
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 1);
	pipe_drop(&p);
	/* marud does not know our key: no socket */
	fake_set_key(&x->f, other, other);
	assert_int_equal(pipe_get(x->c, &p), -EACCES);
	assert_int_equal(p.fd, -1);
	assert_int_equal(atomic_load(&x->c->st.tcp.dials), 1);
	assert_int_equal(atomic_load(&x->c->st.tcp.pipe_errors), 1);
	sfx_free(x);
}

/* Four READs out before any reply, answered in order. */
static void test_pipelined_in_order(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct proto_io_req q = { .ino = STORE_INO, .len = 4096 };
	struct pipe p = PIPE_NONE;
	static uint8_t buf[4096];
	uint64_t id[4];
	struct req r;
	int i;

	(void)state;
	sfx_open_published(x, MIB);
	assert_int_equal(pipe_get(x->c, &p), 0);
	for (i = 0; i < 4; i++) {
		q.off = (uint64_t)i * 8192;
		assert_int_equal(pipe_send(x->c, &p, OP_READ, &q, sizeof(q), NULL, 0, &id[i]), 0);
		assert_int_equal(p.out, (unsigned int)i + 1);
	}
	assert_true(id[1] > id[0] && id[2] > id[1] && id[3] > id[2]);
	/* one round trip, four frames */
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_trips), 1);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_frames), 4);
	for (i = 0; i < 4; i++) {
		memset(&r, 0, sizeof(r));
		r.rbuf = buf;
		r.rcap = sizeof(buf);
		assert_int_equal(pipe_reply(&p, OP_READ, id[i], &r), 0);
		assert_int_equal(r.status, 0);
		assert_int_equal(r.rlen, 4096);
		assert_memory_equal(buf, x->pat + (size_t)i * 8192, 4096);
		assert_int_equal(p.out, 3u - (unsigned int)i);
	}
	/* a reply read for another frame than the oldest: broken */
	q.off = 0;
	assert_int_equal(pipe_send(x->c, &p, OP_READ, &q, sizeof(q), NULL, 0, &id[0]), 0);
	assert_int_equal(atomic_load(&x->c->st.tcp.rd_trips), 2);
	memset(&r, 0, sizeof(r));
	r.rbuf = buf;
	r.rcap = sizeof(buf);
	assert_int_equal(pipe_reply(&p, OP_READ, id[0] + 1, &r), -EPROTO);
	assert_int_equal(p.out, 1);
	pipe_drop(&p);
	assert_int_equal(p.fd, -1);
	assert_int_equal(p.out, 0);
	sfx_free(x);
}

/* A refused frame is a status, not a broken socket. */
static void test_reply_status(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct proto_io_req q = { .ino = STORE_INO, .len = 4096 };
	struct pipe p = PIPE_NONE;
	uint8_t buf[64];
	struct req r = { .rbuf = buf, .rcap = sizeof(buf) };
	uint64_t id;

	(void)state;
	sfx_open_published(x, MIB);
	x->v.status = -EREMOTEIO;
	sfx_fault(x, OP_READ, VF_STATUS, 1, 0);
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(pipe_send(x->c, &p, OP_READ, &q, sizeof(q), NULL, 0, &id), 0);
	assert_int_equal(pipe_reply(&p, OP_READ, id, &r), 0);
	assert_int_equal(r.status, -EREMOTEIO);
	assert_int_equal(p.out, 0);
	pipe_put(x->c, &p);
	sfx_free(x);
}

/* A reply that never comes: -ETIMEDOUT after timeout_ms, not a hang. */
static void test_reply_timeout(void **state)
{
	struct sfx *x = sfx_new(300, 0);
	struct proto_io_req q = { .ino = STORE_INO, .len = 4096 };
	struct pipe p = PIPE_NONE;
	uint8_t buf[4096];
	struct req r = { .rbuf = buf, .rcap = sizeof(buf) };
	uint64_t id, t0, ms;

	(void)state;
	sfx_open_published(x, MIB);
	x->v.delay_ms = 1500;
	sfx_fault(x, OP_READ, VF_DELAY, 1, 0);
	assert_int_equal(pipe_get(x->c, &p), 0);
	assert_int_equal(pipe_send(x->c, &p, OP_READ, &q, sizeof(q), NULL, 0, &id), 0);
	t0 = mono_ms();
	assert_int_equal(pipe_reply(&p, OP_READ, id, &r), -ETIMEDOUT);
	ms = mono_ms() - t0;
	assert_true(ms >= 250 && ms < 1400);
	pipe_drop(&p);
	sfx_free(x);
}

static void test_rtt_estimate(void **state)
{
	struct sfx *x = sfx_new(2000, 0);

	(void)state;
	/* no sample yet: probe first */
	assert_int_equal(pipe_rtt_worth(x->c), -1);
	pipe_rtt_sample(x->c, 1000u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	/* a faster sample is taken at once */
	pipe_rtt_sample(x->c, 100u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	/* a slower one moves it an eighth of the way: 100 us -> 212 us */
	pipe_rtt_sample(x->c, 1000u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	/* 2 ms twice: 212 -> 436 us, below the bar (500 us), -> 631 us */
	pipe_rtt_sample(x->c, 2000u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	pipe_rtt_sample(x->c, 2000u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	/* a stall is taken whole */
	pipe_rtt_sample(x->c, 10u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	pipe_rtt_sample(x->c, TCP_RTT_STALL_NS);
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	/* the bar moves: above it streams, 0 always streams */
	pipe_rtt_bar(x->c, 2 * TCP_RTT_STALL_NS);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	pipe_rtt_bar(x->c, 0);
	pipe_rtt_sample(x->c, 1);
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	sfx_free(x);
}

/* An estimate not sampled for TCP_RTT_STALE_NS is stale: probe again. */
static void test_rtt_stale(void **state)
{
	struct sfx *x = sfx_new(2000, 0);
	struct timespec ts = { .tv_sec = TCP_RTT_STALE_NS / 1000000000ull,
			       .tv_nsec = TCP_RTT_STALE_NS % 1000000000ull + 50000000 };

	(void)state;
	pipe_rtt_sample(x->c, 1000u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	nanosleep(&ts, NULL);
	assert_int_equal(pipe_rtt_worth(x->c), -1);
	/* a fresh sample, fresh again */
	pipe_rtt_sample(x->c, 100u * 1000);
	assert_int_equal(pipe_rtt_worth(x->c), 0);
	sfx_free(x);
}

/* Without the path's pool (closed): buffers still come from the budget. */
static void test_no_pool(void **state)
{
	struct sfx *x = sfx_new(2000, 4 * MIB);
	uint8_t *b;

	(void)state;
	pthread_rwlock_wrlock(&x->c->dp_lock);
	pipe_pool_close(x->c);
	pthread_rwlock_unlock(&x->c->dp_lock);
	b = pipe_buf_get(x->c);
	assert_non_null(b);
	assert_int_equal(held(x), MIB);
	pipe_buf_put(x->c, b);
	assert_int_equal(held(x), 0);
	/* nothing to measure with: stream */
	assert_int_equal(pipe_rtt_worth(x->c), 1);
	pthread_rwlock_wrlock(&x->c->dp_lock);
	assert_int_equal(pipe_pool_open(x->c), 0);
	assert_int_equal(pipe_pool_open(x->c), 0);	/* once is enough */
	pthread_rwlock_unlock(&x->c->dp_lock);
	sfx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_buffers_kept),
		cmocka_unit_test(test_buffers_kept_at_most_16),
		cmocka_unit_test(test_socket_pooled),
		cmocka_unit_test(test_socket_not_pooled),
		cmocka_unit_test(test_stale_session),
		cmocka_unit_test(test_socket_authenticates),
		cmocka_unit_test(test_pipelined_in_order),
		cmocka_unit_test(test_reply_status),
		cmocka_unit_test(test_reply_timeout),
		cmocka_unit_test(test_rtt_estimate),
		cmocka_unit_test(test_rtt_stale),
		cmocka_unit_test(test_no_pool),
	};

	return cmocka_run_group_tests_name("dp/tcp_pipe", tests, NULL, NULL);
}
