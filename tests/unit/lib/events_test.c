/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/events_test.c: the event stream (lib/events.c) against
 * the fake marud, which records SUBSCRIBE and EVENT_ACK and pushes EVENT
 * frames on the subscribed socket: the subscription's HELLO names the
 * client's session as owner, events decode field by field, an ack reaches
 * marud, a dropped socket resubscribes after the last delivered sequence
 * number without a generation event, a restarted marud gives exactly one
 * MARU_EV_GENERATION and a subscription from "now", a malformed event costs
 * the socket (not an error to the caller), a new client token resubscribes
 * under the new owner, and an ack with no socket is -ENOTCONN. A quiet
 * stream is PINGed and, answered, stays; a stream that hears nothing at all
 * (a partition: marud's socket open and mute) for its stall bound is lost,
 * counted (maru_events_up) and redialled after the last delivered event;
 * EVENT_F_UNWAITED decodes as MARU_EV_F_UNWAITED.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "fake_marud.h"
#include "transport.h"

struct evs {
	pthread_mutex_t mu;
	int fd;			/* the subscribed socket */
	uint64_t after[16];
	int nsub;
	uint64_t acks[16];
	int nacks;
	int mute;		/* PINGs go unanswered (a partition) */
};

static int ev_handler(struct fake_req *q)
{
	struct evs *e = q->f->arg;
	struct proto_subscribe_req s;
	struct proto_ack_req a;

	if (q->h.op == OP_SUBSCRIBE) {
		memcpy(&s, q->body, sizeof(s));
		pthread_mutex_lock(&e->mu);
		if (e->nsub < 16)
			e->after[e->nsub] = s.after_seq;
		e->nsub++;
		e->fd = q->fd;
		pthread_mutex_unlock(&e->mu);
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	}
	if (q->h.op == OP_EVENT_ACK) {
		memcpy(&a, q->body, sizeof(a));
		pthread_mutex_lock(&e->mu);
		if (e->nacks < 16)
			e->acks[e->nacks] = a.seq;
		e->nacks++;
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	if (q->h.op == OP_STATFS) {
		struct proto_statfs st = { .capacity = FAKE_CAPACITY };

		return fake_reply(q, 0, &st, sizeof(st), NULL, 0) ? -1 : 0;
	}
	if (q->h.op == OP_PING) {
		pthread_mutex_lock(&e->mu);
		if (e->mute) {
			pthread_mutex_unlock(&e->mu);
			return 0;
		}
		pthread_mutex_unlock(&e->mu);
	}
	return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
}

/* Wait (up to 2 s) until *counter >= n under e->mu. */
static int wait_count(struct evs *e, const int *counter, int n)
{
	int i, got;

	for (i = 0; i < 200; i++) {
		pthread_mutex_lock(&e->mu);
		got = *counter;
		pthread_mutex_unlock(&e->mu);
		if (got >= n)
			return got;
		usleep(10000);
	}
	return got;
}

/* Push one event with the four strings (namelen etc. as given when lens). */
static void push_raw(struct fake_marud *f, struct evs *e, const struct proto_event *pe,
		     const char *tail, size_t tail_len)
{
	struct proto_hdr h;
	uint64_t gen;
	int fd;

	pthread_mutex_lock(&f->mu);
	gen = f->generation;
	pthread_mutex_unlock(&f->mu);
	pthread_mutex_lock(&e->mu);
	fd = e->fd;
	pthread_mutex_unlock(&e->mu);
	proto_hdr_init(&h, OP_EVENT, (uint32_t)(sizeof(*pe) + tail_len), 0, gen, 0);
	assert_int_equal(proto_send(fd, &h, pe, sizeof(*pe), tail, tail_len), 0);
}

static void push(struct fake_marud *f, struct evs *e, uint64_t seq, uint32_t type,
		 const char *n1, const char *n2, const char *p1, const char *p2)
{
	struct proto_event pe = { .seq = seq, .time_ns = 77, .type = type, .ino = 10 + seq,
				  .parent = 1, .parent2 = 2 };
	char tail[1024];
	size_t off = 0;

	pe.namelen = (uint16_t)strlen(n1);
	pe.name2len = (uint16_t)strlen(n2);
	pe.pathlen = (uint16_t)strlen(p1);
	pe.path2len = (uint16_t)strlen(p2);
	memcpy(tail + off, n1, pe.namelen);
	off += pe.namelen;
	memcpy(tail + off, n2, pe.name2len);
	off += pe.name2len;
	memcpy(tail + off, p1, pe.pathlen);
	off += pe.pathlen;
	memcpy(tail + off, p2, pe.path2len);
	off += pe.path2len;
	push_raw(f, e, &pe, tail, off);
}

struct fx {
	struct fake_marud f;
	struct evs e;
	struct logbook b;
	struct maru_client *c;
	struct maru_events *ev;
	struct maru_event out;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	pthread_mutex_init(&x->e.mu, NULL);
	x->e.fd = -1;
	logbook_init(&x->b);
	fake_start(&x->f, ev_handler, &x->e);
	x->c = fake_client(&x->f, 1000, 2, &x->b, LOG_INFO);
	assert_int_equal(maru_events_open(x->c, 0, &x->ev), 0);
	assert_int_equal(x->e.nsub, 1);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	maru_events_close(x->ev);
	maru_client_free(x->c);
	fake_stop(&x->f);
	free(x);
	return 0;
}

static void test_subscribe_and_decode(void **state)
{
	struct fx *x = *state;
	struct timespec t0, t1;
	long ms;

	/* the event socket's HELLO: its own session, owned by the client's */
	assert_int_equal(fake_nhellos(&x->f), 2);
	assert_int_equal(x->f.hellos[1].flags, HELLO_F_EVENTS);
	assert_memory_equal(x->f.hellos[1].token, x->c->s.token, 16);
	assert_int_equal(x->e.after[0], 0);
	push(&x->f, &x->e, 5, MARU_EV_RENAME, "a", "bb", "/d/a", "/e/bb");
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	assert_int_equal(x->out.seq, 5);
	assert_int_equal(x->out.type, MARU_EV_RENAME);
	assert_int_equal(x->out.time_ns, 77);
	assert_int_equal(x->out.ino, 15);
	assert_int_equal(x->out.parent, 1);
	assert_int_equal(x->out.parent2, 2);
	assert_string_equal(x->out.name, "a");
	assert_string_equal(x->out.name2, "bb");
	assert_string_equal(x->out.path, "/d/a");
	assert_string_equal(x->out.path2, "/e/bb");
	/* nothing more: a timeout, bounded */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(maru_events_next(x->ev, &x->out, 100), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 90 && ms < 1500);
	assert_int_equal(maru_events_next(NULL, &x->out, 0), -EINVAL);
}

static void test_ack_sent(void **state)
{
	struct fx *x = *state;

	assert_int_equal(maru_events_ack(x->ev, 5), 0);
	assert_int_equal(maru_events_ack(x->ev, 9), 0);
	assert_int_equal(wait_count(&x->e, &x->e.nacks, 2), 2);
	assert_int_equal(x->e.acks[0], 5);
	assert_int_equal(x->e.acks[1], 9);
	assert_int_equal(maru_events_ack(NULL, 1), -EINVAL);
}

static void test_reconnect_after_drop(void **state)
{
	struct fx *x = *state;

	push(&x->f, &x->e, 41, MARU_EV_PUBLISH, "n", "", "/n", "");
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	assert_int_equal(x->out.seq, 41);
	fake_drop(&x->f);
	/* the stream notices, reconnects and resubscribes by itself */
	assert_int_equal(maru_events_next(x->ev, &x->out, 500), 0);
	assert_int_equal(wait_count(&x->e, &x->e.nsub, 2), 2);
	assert_int_equal(x->e.after[1], 41);	/* after the last one delivered */
	assert_true(logged(&x->b, "event stream from marud", LOG_WARNING));
	assert_true(logged(&x->b, "resumed", LOG_INFO));
	push(&x->f, &x->e, 42, MARU_EV_UNLINK, "n", "", "/n", "");
	/* same generation: no MARU_EV_GENERATION in between */
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	assert_int_equal(x->out.seq, 42);
	assert_int_equal(x->out.type, MARU_EV_UNLINK);
}

static void test_generation_event(void **state)
{
	struct fx *x = *state;

	push(&x->f, &x->e, 30, MARU_EV_PUBLISH, "n", "", "/n", "");
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	fake_restart(&x->f);
	assert_int_equal(maru_events_next(x->ev, &x->out, 3000), 1);
	assert_int_equal(x->out.type, MARU_EV_GENERATION);
	assert_int_equal(x->out.seq, 0);
	assert_int_equal(wait_count(&x->e, &x->e.nsub, 2), 2);
	assert_int_equal(x->e.after[1], 0);	/* old numbers mean nothing now */
	push(&x->f, &x->e, 1, MARU_EV_MKDIR, "d", "", "/d", "");
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	assert_int_equal(x->out.seq, 1);
	assert_int_equal(x->out.type, MARU_EV_MKDIR);
	/* only one generation event */
	assert_int_equal(maru_events_next(x->ev, &x->out, 100), 0);
}

static void test_malformed_event(void **state)
{
	struct fx *x = *state;
	struct proto_event pe = { .seq = 8, .type = MARU_EV_PUBLISH, .namelen = 200 };

	push(&x->f, &x->e, 7, MARU_EV_PUBLISH, "n", "", "/n", "");
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	push_raw(&x->f, &x->e, &pe, "short", 5);	/* namelen past the frame */
	assert_int_equal(maru_events_next(x->ev, &x->out, 500), 0);
	assert_int_equal(wait_count(&x->e, &x->e.nsub, 2), 2);
	assert_int_equal(x->e.after[1], 7);
	push(&x->f, &x->e, 9, MARU_EV_PUBLISH, "m", "", "/m", "");
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	assert_int_equal(x->out.seq, 9);
}

static void test_new_owner_resubscribes(void **state)
{
	struct fx *x = *state;
	struct maru_statfs st;
	int hellos;

	uint8_t old[16];

	memcpy(old, x->c->s.token, sizeof(old));
	/* the client's sockets only: its session is gone, the stream's is not */
	fake_forget(&x->f);
	transport_close_conns(x->c);
	assert_int_equal(maru_statfs(x->c, &st), 0);	/* a new client session */
	assert_memory_not_equal(x->c->s.token, old, 16);
	hellos = fake_nhellos(&x->f);
	/* the ack notices the new token; the next call resubscribes under it */
	assert_int_equal(maru_events_ack(x->ev, 1), 0);
	assert_int_equal(maru_events_next(x->ev, &x->out, 300), 0);
	assert_int_equal(wait_count(&x->e, &x->e.nsub, 2), 2);
	assert_int_equal(x->e.after[1], 0);
	assert_int_equal(fake_nhellos(&x->f), hellos + 1);
	assert_int_equal(x->f.hellos[hellos].flags, HELLO_F_EVENTS);
	assert_memory_equal(x->f.hellos[hellos].token, x->c->s.token, 16);
}

struct waiter {
	struct maru_events *ev;
	struct maru_event out;
	int rc;
};

static void *wait_forever(void *arg)
{
	struct waiter *w = arg;

	w->rc = maru_events_next(w->ev, &w->out, -1);
	return NULL;
}

/* timeout -1 through an outage: reconnects with backoff, then delivers. */
static void test_infinite_wait_reconnects(void **state)
{
	struct fx *x = *state;
	struct waiter w = { .ev = x->ev };
	struct timespec ts;
	pthread_t t;

	pthread_mutex_lock(&x->f.mu);
	x->f.hello_status = -EAGAIN;	/* marud refuses sessions for a while */
	pthread_mutex_unlock(&x->f.mu);
	fake_drop(&x->f);
	assert_int_equal(pthread_create(&t, NULL, wait_forever, &w), 0);
	usleep(300000);
	assert_true(fake_nhellos(&x->f) >= 3);		/* it kept trying */
	pthread_mutex_lock(&x->f.mu);
	x->f.hello_status = 0;
	pthread_mutex_unlock(&x->f.mu);
	assert_int_equal(wait_count(&x->e, &x->e.nsub, 2), 2);
	push(&x->f, &x->e, 3, MARU_EV_EVICT, "v", "", "/v", "");
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	assert_int_equal(pthread_timedjoin_np(t, NULL, &ts), 0);
	assert_int_equal(w.rc, 1);
	assert_int_equal(w.out.seq, 3);
	assert_int_equal(w.out.type, MARU_EV_EVICT);
}

static void test_ack_without_socket(void **state)
{
	struct fx *x = *state;

	fake_stop(&x->f);
	assert_int_equal(maru_events_next(x->ev, &x->out, 200), 0);
	assert_int_equal(maru_events_ack(x->ev, 3), -ENOTCONN);
	/* teardown stops it again: harmless */
	fake_start(&x->f, ev_handler, &x->e);
}

static void test_quiet_stream_pinged(void **state)
{
	struct fx *x = *state;
	uint64_t losses = 9;
	unsigned int pings = fake_ops(&x->f, OP_PING);

	assert_int_equal(maru_events_up(x->ev, &losses), 1);
	assert_int_equal(losses, 0);
	/* 1.5 stall bounds (1000 ms with timeout_ms 1000) of quiet, answered */
	assert_int_equal(maru_events_next(x->ev, &x->out, 1500), 0);
	assert_true(fake_ops(&x->f, OP_PING) > pings);
	assert_int_equal(maru_events_up(x->ev, &losses), 1);
	assert_int_equal(losses, 0);
	assert_int_equal(x->e.nsub, 1);
	assert_int_equal(maru_events_up(NULL, NULL), -EINVAL);
}

static void test_silent_stream_lost(void **state)
{
	struct fx *x = *state;
	struct proto_event pe = { .seq = 5, .type = MARU_EV_PUBLISH, .flags = EVENT_F_UNWAITED,
				  .namelen = 1, .pathlen = 2 };
	uint64_t losses = 0;

	push_raw(&x->f, &x->e, &pe, "n/n", 3);
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	assert_int_equal(x->out.flags, MARU_EV_F_UNWAITED);
	pthread_mutex_lock(&x->e.mu);
	x->e.mute = 1;
	pthread_mutex_unlock(&x->e.mu);
	assert_int_equal(maru_events_next(x->ev, &x->out, 1600), 0);
	assert_int_equal(maru_events_up(x->ev, &losses), 1);	/* redialled */
	assert_int_equal(losses, 1);
	assert_int_equal(wait_count(&x->e, &x->e.nsub, 2), 2);
	assert_int_equal(x->e.after[1], 5);
	assert_true(logged(&x->b, "silent for", LOG_WARNING));
	pthread_mutex_lock(&x->e.mu);
	x->e.mute = 0;
	pthread_mutex_unlock(&x->e.mu);
	push(&x->f, &x->e, 6, MARU_EV_UNLINK, "n", "", "/n", "");
	assert_int_equal(maru_events_next(x->ev, &x->out, 2000), 1);
	assert_int_equal(x->out.seq, 6);
	assert_int_equal(x->out.flags, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_subscribe_and_decode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_after_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generation_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_owner_resubscribes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_infinite_wait_reconnects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_without_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quiet_stream_pinged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_stream_lost, setup, teardown),
	};

	return cmocka_run_group_tests_name("events", tests, NULL, NULL);
}
