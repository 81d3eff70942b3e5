/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/transport_test.c: the one request path (lib/transport.c)
 * against the fake marud: a call while marud is gone ends in -ETIMEDOUT
 * within opts.timeout_ms; a lost reply is resent with the same request id
 * on a fresh socket that reclaims the session by token; max_conns calls run
 * in parallel on that many sockets and never more; a reply that breaks the
 * protocol is -EIO without a retry; errors no retry can fix (-EACCES,
 * -EUSERS for a first session) come back at once; a reply is polled for
 * (opts.spin_us) before the caller sleeps, but only by a request that is
 * the client's only one in flight; a poll that ran out of time makes the
 * next 8 requests sleep at once, and spin_us 0 never polls.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "fake_marud.h"
#include "transport.h"

static long now_ms_(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int statfs_reply(struct fake_req *q)
{
	struct proto_statfs st = { .capacity = FAKE_CAPACITY };

	return fake_reply(q, 0, &st, sizeof(st), NULL, 0) ? -1 : 0;
}

static void test_timeout_when_gone(void **state)
{
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	long t0, el;

	(void)state;
	fake_start(&f, NULL, NULL);
	c = fake_client(&f, 300, 2, NULL, 0);
	assert_int_equal(maru_statfs(c, &st), 0);
	fake_stop(&f);
	t0 = now_ms_();
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	el = now_ms_() - t0;
	assert_true(el >= 250);
	assert_true(el < 300 + 1500);
	assert_int_equal(atomic_load(&c->st.timeouts), 1);
	/* and again: each call is bounded on its own */
	t0 = now_ms_();
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	assert_true(now_ms_() - t0 < 300 + 1500);
	maru_client_free(c);
}

/*
 * marud refuses sessions (fast failures, retried with backoff) for most of
 * the budget, then accepts but hangs in HELLO: the call still ends near
 * timeout_ms, not a whole socket timeout later.
 */
static void *hang_later(void *arg)
{
	struct fake_marud *f = arg;

	usleep(700000);
	pthread_mutex_lock(&f->mu);
	f->hello_status = 0;
	f->hello_delay_ms = 5000;
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

static void test_timeout_hung_hello(void **state)
{
	struct maru_statfs st;
	pthread_t t;
	struct maru_client *c;
	struct fake_marud f;
	long t0, el;

	(void)state;
	fake_start(&f, NULL, NULL);
	c = fake_client(&f, 1000, 2, NULL, 0);
	pthread_mutex_lock(&f.mu);
	f.hello_status = -EAGAIN;
	pthread_mutex_unlock(&f.mu);
	fake_drop(&f);
	t0 = now_ms_();
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	el = now_ms_() - t0;
	assert_true(el >= 950 && el < 1450);
	/* again, and 700 ms into the call marud starts hanging in HELLO */
	fake_drop(&f);
	assert_int_equal(pthread_create(&t, NULL, hang_later, &f), 0);
	t0 = now_ms_();
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	el = now_ms_() - t0;
	assert_true(el < 1600);	/* a whole extra timeout_ms before the fix */
	pthread_join(t, NULL);
	assert_true(fake_nhellos(&f) > 2);
	maru_client_free(c);
	fake_stop(&f);
}

/* ---- a lost reply ---- */

struct resend {
	pthread_mutex_t mu;
	uint64_t reqids[4];
	int n;
};

static int lose_first(struct fake_req *q)
{
	struct resend *r = q->f->arg;
	int first;

	if (q->h.op != OP_STATFS)
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	pthread_mutex_lock(&r->mu);
	first = r->n == 0;
	if (r->n < 4)
		r->reqids[r->n] = q->h.reqid;
	r->n++;
	pthread_mutex_unlock(&r->mu);
	/* executed, but the reply is lost with the socket */
	return first ? -1 : statfs_reply(q);
}

static void test_resend_same_reqid(void **state)
{
	struct resend r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	uint8_t token[16];

	(void)state;
	fake_start(&f, lose_first, &r);
	c = fake_client(&f, 2000, 2, NULL, 0);
	assert_int_equal(f.hellos[0].flags, HELLO_F_DIRATTR);
	memcpy(token, c->s.token, sizeof(token));
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(st.capacity, FAKE_CAPACITY);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.reqids[0], r.reqids[1]);
	/* the fresh socket reclaimed the session by its token */
	assert_int_equal(fake_nhellos(&f), 2);
	assert_int_equal(f.hellos[1].flags, HELLO_F_RECLAIM | HELLO_F_DIRATTR);
	assert_memory_equal(f.hellos[1].token, token, 16);
	assert_int_equal(c->s.epoch, 1);
	assert_int_equal(atomic_load(&c->st.reconnects), 1);
	assert_int_equal(atomic_load(&c->st.new_sessions), 0);
	/* the next call gets the next request id */
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(r.reqids[2], r.reqids[1] + 1);
	maru_client_free(c);
	fake_stop(&f);
}

/* ---- max_conns ---- */

struct par {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int inflight, max_inflight, want;
};

/* Hold each STATFS until `want` are in flight at once (or 2 s pass). */
static int hold_statfs(struct fake_req *q)
{
	struct par *p = q->f->arg;
	struct timespec ts;

	if (q->h.op != OP_STATFS)
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	pthread_mutex_lock(&p->mu);
	p->inflight++;
	if (p->inflight > p->max_inflight)
		p->max_inflight = p->inflight;
	pthread_cond_broadcast(&p->cond);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	while (p->max_inflight < p->want &&
	       pthread_cond_timedwait(&p->cond, &p->mu, &ts) == 0)
		;
	p->inflight--;
	pthread_mutex_unlock(&p->mu);
	usleep(20000);
	return statfs_reply(q);
}

static void *statfs_thread(void *arg)
{
	struct maru_statfs st;

	return (void *)(intptr_t)maru_statfs(arg, &st);
}

static void run_parallel(unsigned int max_conns, int threads)
{
	struct par p = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
			 .want = (int)max_conns };
	pthread_t t[8];
	struct maru_client *c;
	struct fake_marud f;
	void *rv;
	int i;

	fake_start(&f, hold_statfs, &p);
	c = fake_client(&f, 5000, max_conns, NULL, 0);
	for (i = 0; i < threads; i++)
		assert_int_equal(pthread_create(&t[i], NULL, statfs_thread, c), 0);
	for (i = 0; i < threads; i++) {
		assert_int_equal(pthread_join(t[i], &rv), 0);
		assert_int_equal((intptr_t)rv, 0);
	}
	/* max_conns calls at once, on at most max_conns sockets */
	assert_int_equal(p.max_inflight, (int)max_conns);
	pthread_mutex_lock(&f.mu);
	assert_true(f.accepted <= (int)max_conns);
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(fake_ops(&f, OP_STATFS), (unsigned int)threads);
	maru_client_free(c);
	fake_stop(&f);
}

static void test_max_conns_parallel(void **state)
{
	(void)state;
	run_parallel(3, 3);
	run_parallel(2, 6);	/* more callers than sockets: they queue */
	run_parallel(1, 4);
}

/* ---- errors no retry fixes ---- */

static int bad_reqid(struct fake_req *q)
{
	struct proto_statfs st = { 0 };

	q->h.reqid += 1000;
	return fake_reply(q, 0, &st, sizeof(st), NULL, 0) ? -1 : 0;
}

static void test_protocol_error(void **state)
{
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	struct logbook b;

	(void)state;
	logbook_init(&b);
	fake_start(&f, bad_reqid, NULL);
	c = fake_client(&f, 2000, 2, &b, LOG_INFO);
	assert_int_equal(maru_statfs(c, &st), -EIO);
	assert_int_equal(fake_ops(&f, OP_STATFS), 1);	/* not resent */
	assert_true(logged(&b, "protocol error from marud", LOG_WARNING));
	assert_true(logged(&b, "on STATFS", LOG_WARNING));
	maru_client_free(c);
	fake_stop(&f);
}

static void test_fatal_hello(void **state)
{
	struct maru_client_opts o;
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	char uri[160];
	long t0;

	(void)state;
	fake_start(&f, NULL, NULL);
	fake_uri(&f, uri, sizeof(uri));
	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.data_path = MARU_DATA_TCP;
	o.timeout_ms = 3000;
	/* marud at max-conns: a first session says so at once */
	f.hello_status = -EUSERS;
	t0 = now_ms_();
	assert_int_equal(maru_client_new(&o, &c), -EUSERS);
	assert_true(now_ms_() - t0 < 1000);
	assert_int_equal(fake_nhellos(&f), 1);
	f.hello_status = -EACCES;
	assert_int_equal(maru_client_new(&o, &c), -EACCES);
	/* a later reconnect refused for good: no retry until the timeout */
	f.hello_status = 0;
	assert_int_equal(maru_client_new(&o, &c), 0);
	pthread_mutex_lock(&f.mu);
	f.hello_status = -EACCES;
	pthread_mutex_unlock(&f.mu);
	fake_drop(&f);
	t0 = now_ms_();
	assert_int_equal(maru_statfs(c, &st), -EACCES);
	assert_true(now_ms_() - t0 < 1000);
	maru_client_free(c);
	fake_stop(&f);
}

/* STATFS answered after *arg microseconds (0: at once). */
static int statfs_late(struct fake_req *q)
{
	unsigned int us = *(const unsigned int *)q->f->arg;

	if (us && q->h.op == OP_STATFS)
		usleep(us);
	return statfs_reply(q);
}

static void statfs_times(struct maru_client *c, int n)
{
	struct maru_statfs st;

	while (n-- > 0)
		assert_int_equal(maru_statfs(c, &st), 0);
}

static uint64_t spins(struct maru_client *c, uint64_t *misses)
{
	*misses = atomic_load(&c->st.spin_misses);
	return atomic_load(&c->st.spin_replies);
}

/* Replies at once, a 10 ms poll: they come while the caller polls. */
static void test_spin_reply(void **state)
{
	unsigned int late = 0;
	struct maru_client *c;
	struct fake_marud f;
	uint64_t hits, misses;

	(void)state;
	fake_start(&f, statfs_late, &late);
	c = fake_client(&f, 2000, 1, NULL, 0);
	assert_int_equal(c->opts.spin_us, 50);	/* the default */
	c->opts.spin_us = 10000;
	statfs_times(c, 20);
	hits = spins(c, &misses);
	assert_true(hits >= 1);
	assert_true(hits + misses <= 20);
	maru_client_free(c);
	fake_stop(&f);
}

/* Replies 30 ms late, a 1 ms poll: one miss, then 8 requests that sleep. */
static void test_spin_backoff(void **state)
{
	unsigned int late = 30000;
	struct maru_client *c;
	struct fake_marud f;
	uint64_t hits, misses;

	(void)state;
	fake_start(&f, statfs_late, &late);
	c = fake_client(&f, 2000, 1, NULL, 0);
	c->opts.spin_us = 1000;
	statfs_times(c, 1);
	hits = spins(c, &misses);
	assert_int_equal(hits, 0);
	assert_int_equal(misses, 1);
	statfs_times(c, 8);
	spins(c, &misses);
	assert_int_equal(misses, 1);	/* none of the 8 polled */
	statfs_times(c, 1);
	hits = spins(c, &misses);
	assert_int_equal(hits, 0);
	assert_int_equal(misses, 2);	/* the ninth polls again */
	maru_client_free(c);
	fake_stop(&f);
}

/* A request sent while another is in flight sleeps at once. */
static void test_spin_not_beside_another(void **state)
{
	unsigned int late = 300000;
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	uint64_t hits, misses;
	pthread_t t;
	void *rv;
	int i;

	(void)state;
	fake_start(&f, statfs_late, &late);
	c = fake_client(&f, 2000, 2, NULL, 0);
	c->opts.spin_us = 10000;
	assert_int_equal(pthread_create(&t, NULL, statfs_thread, c), 0);
	/* alone in flight, the first request polls for 10 ms and runs out */
	for (i = 0; i < 2000 && atomic_load(&c->st.spin_misses) == 0; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&c->st.spin_misses), 1);
	atomic_store(&c->spin_skip, 0);
	assert_int_equal(maru_statfs(c, &st), 0);	/* beside it: no poll */
	assert_int_equal(pthread_join(t, &rv), 0);
	assert_int_equal((intptr_t)rv, 0);
	hits = spins(c, &misses);
	assert_int_equal(hits, 0);
	assert_int_equal(misses, 1);
	maru_client_free(c);
	fake_stop(&f);
}

static void test_spin_off(void **state)
{
	unsigned int late = 0;
	struct maru_client *c;
	struct fake_marud f;
	uint64_t hits, misses;

	(void)state;
	fake_start(&f, statfs_late, &late);
	c = fake_client(&f, 2000, 1, NULL, 0);
	c->opts.spin_us = 0;
	statfs_times(c, 10);
	hits = spins(c, &misses);
	assert_int_equal(hits, 0);
	assert_int_equal(misses, 0);
	maru_client_free(c);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeout_when_gone),
		cmocka_unit_test(test_timeout_hung_hello),
		cmocka_unit_test(test_resend_same_reqid),
		cmocka_unit_test(test_max_conns_parallel),
		cmocka_unit_test(test_protocol_error),
		cmocka_unit_test(test_fatal_hello),
		cmocka_unit_test(test_spin_reply),
		cmocka_unit_test(test_spin_backoff),
		cmocka_unit_test(test_spin_not_beside_another),
		cmocka_unit_test(test_spin_off),
	};

	return cmocka_run_group_tests_name("transport", tests, NULL, NULL);
}
