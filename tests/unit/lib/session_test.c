/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/session_test.c: what a HELLO does to a client's session
 * (lib/session.c), against the fake marud: lost sockets reconnect with the
 * token and a `reclaimed` session keeps its epoch and handles; a session
 * marud forgot (same generation) makes a new epoch whose old handles fail
 * with -EIO; a restarted marud (new generation) gives -ESTALE once, -ESTALE
 * on old handles and one generation callback, on libmaru's own thread;
 * HELLO's max_frame sets what our frames may carry. The data path is
 * chosen through the tables (a forced path that cannot open says why), and
 * the client hands the paths transport_call and session_facts, which
 * answers the current session's facts; session_held_check says what a
 * handle held from an older session is worth.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "fake_marud.h"
#include "session.h"
#include "transport.h"

#define INO	7

/* OPEN/GETATTR of one published, empty version; RELEASE; PING; STATFS. */
static int one_file(struct fake_req *q)
{
	struct proto_attr a = { .ino = INO, .parent = 1, .mode = S_IFREG | 0644,
				.state = MARU_STATE_PUBLISHED, .nlink = 1 };
	struct proto_statfs st = { .capacity = FAKE_CAPACITY };

	switch (q->h.op) {
	case OP_OPEN:
	case OP_GETATTR:
		return fake_reply(q, 0, &a, sizeof(a), NULL, 0) ? -1 : 0;
	case OP_STATFS:
		return fake_reply(q, 0, &st, sizeof(st), NULL, 0) ? -1 : 0;
	default:
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	}
}

static void test_reclaim_keeps_handle(void **state)
{
	struct maru_attr a;
	struct maru_client *c;
	struct maru_file *h;
	struct fake_marud f;

	(void)state;
	fake_start(&f, one_file, NULL);
	c = fake_client(&f, 2000, 2, NULL, 0);
	assert_int_equal(maru_file_open_ino(c, INO, &h), 0);
	fake_drop(&f);
	assert_int_equal(maru_file_attr(h, &a), 0);	/* GETATTR after a reconnect */
	assert_int_equal(a.ino, INO);
	assert_int_equal(fake_nhellos(&f), 2);
	assert_int_equal(f.hellos[1].flags, HELLO_F_RECLAIM | HELLO_F_DIRATTR);
	assert_memory_equal(f.hellos[1].token, c->s.token, 16);
	assert_int_equal(c->s.epoch, 1);
	assert_int_equal(atomic_load(&c->st.new_sessions), 0);
	maru_file_close(h);
	assert_int_equal(fake_ops(&f, OP_RELEASE), 1);
	maru_client_free(c);
	fake_stop(&f);
}

static void test_forgotten_session_eio(void **state)
{
	struct maru_statfs st;
	struct maru_attr a;
	struct maru_client *c;
	struct maru_file *h;
	struct fake_marud f;
	struct logbook b;
	uint8_t old[16];

	(void)state;
	logbook_init(&b);
	fake_start(&f, one_file, NULL);
	c = fake_client(&f, 2000, 2, &b, LOG_INFO);
	assert_int_equal(maru_file_open_ino(c, INO, &h), 0);
	memcpy(old, c->s.token, sizeof(old));
	fake_forget(&f);
	fake_drop(&f);
	/* same generation: the call itself succeeds in a new session */
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(c->s.epoch, 2);
	assert_memory_not_equal(c->s.token, old, 16);
	assert_int_equal(atomic_load(&c->st.new_sessions), 1);
	assert_true(logged(&b, "new session (generation 99 -> 99)", LOG_INFO));
	/* but the handle's leases went with the old session */
	assert_int_equal(maru_file_attr(h, &a), -EIO);
	assert_int_equal(fake_ops(&f, OP_GETATTR), 0);
	maru_file_close(h);		/* nothing to release in the new session */
	assert_int_equal(fake_ops(&f, OP_RELEASE), 0);
	maru_client_free(c);
	fake_stop(&f);
}

struct gen_seen {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int calls;
	uint64_t old_gen, new_gen;
	pthread_t thread;
};

static void gen_cb(void *arg, uint64_t old_gen, uint64_t new_gen)
{
	struct gen_seen *g = arg;

	pthread_mutex_lock(&g->mu);
	g->calls++;
	g->old_gen = old_gen;
	g->new_gen = new_gen;
	g->thread = pthread_self();
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->mu);
}

static void test_restart_estale(void **state)
{
	struct gen_seen g = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct maru_pool_info pi;
	struct maru_statfs st;
	struct maru_attr a;
	struct maru_client *c;
	struct maru_file *h;
	struct fake_marud f;
	int i;

	(void)state;
	fake_start(&f, one_file, NULL);
	c = fake_client(&f, 2000, 2, NULL, 0);
	maru_client_on_generation(c, gen_cb, &g);
	assert_int_equal(maru_file_open_ino(c, INO, &h), 0);
	assert_int_equal(maru_client_epoch(c, INO), 0);
	fake_restart(&f);
	/* sent with the generation the caller knew: refused once */
	assert_int_equal(maru_statfs(c, &st), -ESTALE);
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(maru_client_pool_info(c, &pi), 0);
	assert_int_equal(pi.generation, FAKE_GEN + 1);
	assert_int_equal(maru_file_attr(h, &a), -ESTALE);
	pthread_mutex_lock(&g.mu);
	for (i = 0; i < 200 && g.calls == 0; i++) {
		pthread_mutex_unlock(&g.mu);
		usleep(10000);
		pthread_mutex_lock(&g.mu);
	}
	assert_int_equal(g.calls, 1);
	assert_int_equal(g.old_gen, FAKE_GEN);
	assert_int_equal(g.new_gen, FAKE_GEN + 1);
	assert_false(pthread_equal(g.thread, pthread_self()));
	pthread_mutex_unlock(&g.mu);
	/* moved before the callback ran, for every id of one pool */
	assert_int_equal(maru_client_epoch(c, INO), 1);
	assert_int_equal(maru_client_epoch(c, MARU_ROOT_ID), 1);
	maru_file_close(h);
	assert_int_equal(fake_ops(&f, OP_RELEASE), 0);
	maru_client_free(c);
	fake_stop(&f);
}

static void test_hello_max_frame(void **state)
{
	struct maru_client *c;
	struct fake_marud f;

	(void)state;
	fake_start(&f, NULL, NULL);
	f.max_frame = 64 * 1024;
	c = fake_client(&f, 2000, 2, NULL, 0);
	/* our frames obey marud's limit; replies may still carry a full READ */
	assert_int_equal(c->s.send_max, 64 * 1024);
	assert_int_equal(c->s.max_frame, PROTO_MAX_IO);
	assert_int_equal(c->s.generation, FAKE_GEN);
	assert_int_equal(c->s.pool_size, 1u << 20);
	assert_string_equal(c->s.pool_path, "/nonexistent/fake-marud-pool");
	maru_client_free(c);
	fake_stop(&f);

	fake_start(&f, NULL, NULL);
	f.max_frame = 0;	/* not said: the protocol's default */
	c = fake_client(&f, 2000, 2, NULL, 0);
	assert_int_equal(c->s.send_max, PROTO_MAX_FRAME);
	assert_int_equal(c->s.max_frame, PROTO_MAX_FRAME);
	assert_int_equal(session_dp_kind(c), MARU_DATA_TCP);
	maru_client_free(c);
	fake_stop(&f);
}

static void test_dp_names(void **state)
{
	(void)state;
	assert_string_equal(session_dp_name(MARU_DATA_SHM), "shm");
	assert_string_equal(session_dp_name(MARU_DATA_TCP), "tcp");
	assert_string_equal(session_dp_name(MARU_DATA_RDMA), "rdma");
	assert_string_equal(session_dp_name(MARU_DATA_AUTO), "auto");
}

static void test_auto_falls_back_to_tcp(void **state)
{
	struct maru_client_opts o;
	struct maru_client *c;
	struct fake_marud f;
	char uri[160];

	(void)state;
	fake_start(&f, NULL, NULL);
	fake_uri(&f, uri, sizeof(uri));
	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.timeout_ms = 1000;
	/* the fake's pool path does not exist here: auto picks tcp */
	assert_int_equal(maru_client_new(&o, &c), 0);
	assert_int_equal(session_dp_kind(c), MARU_DATA_TCP);
	maru_client_free(c);
	/* shm forced: -ENODEV */
	o.data_path = MARU_DATA_SHM;
	assert_int_equal(maru_client_new(&o, &c), -ENODEV);
	fake_stop(&f);
}

static void test_forced_rdma_says_why(void **state)
{
	struct maru_client_opts o;
	struct maru_client *c;
	struct fake_marud f;
	struct logbook b;
	char uri[160];

	(void)state;
	logbook_init(&b);
	fake_start(&f, NULL, NULL);
	fake_uri(&f, uri, sizeof(uri));
	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.timeout_ms = 1000;
	o.log_fn = log_cb;
	o.log_arg = &b;
	o.data_path = MARU_DATA_RDMA;
	/* the fake offers no rdma listener: the probe refuses, with the reason */
	assert_int_equal(maru_client_new(&o, &c), -ENODEV);
	assert_true(logged(&b, "data=rdma unavailable", LOG_WARNING));
	assert_true(logged(&b, "no rdma listener", LOG_WARNING));
	/* HELLO asked for the rdma fields (AUTO and RDMA do) */
	assert_true(f.nhellos >= 1);
	fake_stop(&f);
}

static void test_env_and_facts(void **state)
{
	struct maru_client *c;
	struct fake_marud f;
	struct dp_facts facts;

	(void)state;
	fake_start(&f, NULL, NULL);
	f.max_frame = 64 * 1024;
	c = fake_client(&f, 2000, 2, NULL, 0);
	assert_ptr_equal(c->env.call, transport_call);
	assert_ptr_equal(c->env.facts, session_facts);
	memset(&facts, 0xff, sizeof(facts));
	c->env.facts(c, &facts);
	assert_int_equal(facts.generation, FAKE_GEN);
	assert_int_equal(facts.epoch, c->s.epoch);
	assert_int_equal(facts.send_max, 64 * 1024);
	assert_int_equal(facts.rdma_port, 0);
	assert_memory_equal(facts.token, c->s.token, sizeof(facts.token));
	/* a new session: the facts follow */
	fake_restart(&f);
	transport_ping(c);
	c->env.facts(c, &facts);
	assert_int_equal(facts.generation, f.generation);
	assert_int_equal(facts.epoch, c->s.epoch);
	maru_client_free(c);
	fake_stop(&f);
}

/* What a handle or a splice source held from a session is worth later. */
static void test_held_check(void **state)
{
	struct maru_client *c;
	struct fake_marud f;
	uint64_t epoch, gen;

	(void)state;
	fake_start(&f, NULL, NULL);
	c = fake_client(&f, 2000, 2, NULL, 0);
	epoch = c->s.epoch;
	gen = c->s.generation;
	assert_int_equal(session_held_check(c, epoch, gen), 0);
	/* our session expired under the same marud: -EIO */
	assert_int_equal(session_held_check(c, epoch + 1, gen), -EIO);
	/* marud restarted: a new generation, -ESTALE for what the old one gave */
	fake_restart(&f);
	transport_ping(c);
	assert_int_not_equal(c->s.epoch, epoch);
	assert_int_equal(session_held_check(c, epoch, gen), -ESTALE);
	assert_int_equal(session_held_check(c, c->s.epoch, c->s.generation), 0);
	maru_client_free(c);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reclaim_keeps_handle),
		cmocka_unit_test(test_forgotten_session_eio),
		cmocka_unit_test(test_restart_estale),
		cmocka_unit_test(test_hello_max_frame),
		cmocka_unit_test(test_dp_names),
		cmocka_unit_test(test_auto_falls_back_to_tcp),
		cmocka_unit_test(test_forced_rdma_says_why),
		cmocka_unit_test(test_env_and_facts),
		cmocka_unit_test(test_held_check),
	};

	return cmocka_run_group_tests_name("session", tests, NULL, NULL);
}
