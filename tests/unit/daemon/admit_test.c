// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/admit_test.c: the handshake limits (daemon/admit.c) on a
 * real server with a real Unix listener, real sockets and its real event
 * loops (nothing emulated): a connection that never authenticates is closed
 * at its deadline, and so is one that trickles its AUTH a byte at a time;
 * an AUTH header announcing 8 MiB is refused on its header, without a
 * thread; the per-source limit closes the next connection at accept; a
 * client with the key gets in while the unauthenticated ones fill their
 * share (the oldest is closed for it), and also when every max-conns slot
 * is taken, as long as one is unauthenticated; only a marud full of
 * authenticated clients answers EUSERS. A client that sends no key and one
 * with the wrong key are refused for different, counted reasons.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "clock.h"
#include "refusals.h"
#include "server_harness.h"
#include "server_priv.h"

struct fx {
	char dir[64];
	char sock[100];
	uint8_t key[CONFIG_KEY_BYTES];
	struct th t;
	struct treply r;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || sodium_init() < 0)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/marud-admit-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/marud.sock", f->dir);
	randombytes_buf(f->key, sizeof(f->key));
	th_config(&f->t);
	f->t.cfg.nlisten = 1;
	snprintf(f->t.cfg.listen[0], sizeof(f->t.cfg.listen[0]), "unix:%s", f->sock);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc = 0;

	if (f->t.srv)
		rc = th_free(&f->t);
	unlink(f->sock);
	rmdir(f->dir);
	free(f);
	return rc;
}

static void start(struct fx *f, int keyed)
{
	assert_int_equal(th_new(&f->t, keyed ? f->key : NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
}

/* Poll until *v == want (at most ms); the last value seen. */
static unsigned int wait_uint(atomic_uint *v, unsigned int want, int ms)
{
	struct timespec ts = { 0, 5 * 1000000L };
	int i;

	for (i = 0; i < ms / 5 && atomic_load(v) != want; i++)
		nanosleep(&ts, NULL);
	return atomic_load(v);
}

/* 1 when the server closed fd within ms (EOF or reset), 0 if it is still open. */
static int closed_within(int fd, int ms)
{
	struct treply *r = malloc(sizeof(*r));
	int rc;

	assert_non_null(r);
	rc = tc_reply(fd, r, ms);
	free(r);
	return rc == -ECONNRESET;
}

static void mac(const uint8_t *key, const char *label, const uint8_t *a, const uint8_t *b,
		uint8_t *out)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, CONFIG_KEY_BYTES);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, a, 32);
	crypto_auth_hmacsha256_update(&st, b, 32);
	crypto_auth_hmacsha256_final(&st, out);
}

/* Both AUTH steps with key over fd: the second step's status. */
static int auth(struct fx *f, int fd, const uint8_t *key)
{
	struct proto_auth q = { 0 }, rep;
	uint8_t want[32];

	randombytes_buf(q.nonce, sizeof(q.nonce));
	assert_int_equal(th_call(fd, OP_AUTH, 1, &q, sizeof(q), &f->r), 0);
	assert_int_equal(f->r.len, sizeof(rep));
	memcpy(&rep, f->r.p, sizeof(rep));
	mac(key, "marud", q.nonce, rep.nonce, want);
	if (memcmp(want, rep.mac, sizeof(want)))
		return -EACCES;	/* marud's proof does not match: a wrong key */
	mac(key, "maruc", rep.nonce, q.nonce, q.mac);
	return th_call(fd, OP_AUTH, 2, &q, sizeof(q), &f->r);
}

static int hello(struct fx *f, int fd)
{
	struct proto_hello_req req = { .proto_version = PROTO_VERSION, .pid = 1 };

	return th_call(fd, OP_HELLO, 3, &req, sizeof(req), &f->r);
}

/* The refusal log holds a (source, reason) pair whose reason starts with why. */
static int refused_now(struct server *srv, const char *why)
{
	int i, found = 0;

	pthread_mutex_lock(&srv->refusals.lock);
	for (i = 0; i < REFUSALS_SLOTS && !found; i++)
		found = srv->refusals.slot[i].source[0] &&
			!strncmp(srv->refusals.slot[i].reason, why, strlen(why));
	pthread_mutex_unlock(&srv->refusals.lock);
	return found;
}

/* The same, waiting up to 5 s (the note follows the close it reports). */
static int refused_for(struct server *srv, const char *why)
{
	struct timespec ts = { 0, 5 * 1000000L };
	int i;

	for (i = 0; i < 1000; i++) {
		if (refused_now(srv, why))
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void test_deadline_closes_idle(void **state)
{
	struct fx *f = *state;
	uint64_t t0;
	int fd;

	f->t.cfg.handshake_timeout_ms = 300;
	start(f, 1);
	fd = th_connect_unix(f->sock);
	assert_int_equal(wait_uint(&f->t.srv->nhandshake, 1, 2000), 1);
	t0 = mono_ms();
	assert_true(closed_within(fd, 3000));
	/* closed at the deadline, not before it and not long after */
	assert_true(mono_ms() - t0 >= 200);
	assert_true(mono_ms() - t0 < 2000);
	close(fd);
	assert_int_equal(wait_uint(&f->t.srv->nconns, 0, 2000), 0);
	assert_int_equal(atomic_load(&f->t.srv->nhandshake), 0);
	assert_int_equal(atomic_load(&f->t.srv->hs_expired), 1);
	assert_true(refused_for(f->t.srv, "handshake not done by its deadline"));
}

/* A byte a second of an AUTH frame does not stretch the deadline. */
static void test_trickle_closed_at_deadline(void **state)
{
	struct fx *f = *state;
	struct proto_hdr h;
	const uint8_t *b = (const uint8_t *)&h;
	int fd, closed = 0;
	size_t i;

	f->t.cfg.handshake_timeout_ms = 400;
	start(f, 1);
	fd = th_connect_unix(f->sock);
	proto_hdr_init(&h, OP_AUTH, sizeof(struct proto_auth), 1, 0, 0);
	for (i = 0; i < sizeof(h) && !closed; i++) {
		if (send(fd, b + i, 1, MSG_NOSIGNAL) != 1)
			break;
		closed = closed_within(fd, 100);
	}
	assert_true(closed || closed_within(fd, 3000));
	close(fd);
	assert_int_equal(atomic_load(&f->t.srv->hs_expired), 1);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 0);
}

/* An AUTH announcing 8 MiB is refused on its header: no thread, no wait. */
static void test_big_frame_refused_on_header(void **state)
{
	struct fx *f = *state;
	struct proto_hdr h;
	uint64_t t0;
	int fd;

	start(f, 1);
	fd = th_connect_unix(f->sock);
	proto_hdr_init(&h, OP_AUTH, 8u << 20, 1, 0, 0);
	assert_int_equal(send(fd, &h, sizeof(h), MSG_NOSIGNAL), (ssize_t)sizeof(h));
	t0 = mono_ms();
	assert_true(closed_within(fd, 3000));
	assert_true(mono_ms() - t0 < 1000);	/* well before the 5 s deadline */
	close(fd);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 0);
	assert_int_equal(atomic_load(&f->t.srv->hs_expired), 0);
	assert_true(refused_for(f->t.srv, "frame before the handshake over its size cap"));
	/* and an op the handshake does not need is refused as well */
	fd = th_connect_unix(f->sock);
	proto_hdr_init(&h, OP_STATFS, 0, 2, 0, 0);
	assert_int_equal(send(fd, &h, sizeof(h), MSG_NOSIGNAL), (ssize_t)sizeof(h));
	assert_true(closed_within(fd, 3000));
	close(fd);
	assert_true(refused_for(f->t.srv, "bad frame before the handshake"));
}

static void test_per_source_limit(void **state)
{
	struct fx *f = *state;
	int fd[4], i;

	f->t.cfg.handshake_per_source = 3;	/* every unix client is one uid here */
	start(f, 1);
	for (i = 0; i < 3; i++)
		fd[i] = th_connect_unix(f->sock);
	assert_int_equal(wait_uint(&f->t.srv->nhandshake, 3, 2000), 3);
	fd[3] = th_connect_unix(f->sock);
	assert_true(closed_within(fd[3], 2000));	/* at once, not at the deadline */
	assert_int_equal(atomic_load(&f->t.srv->rejected_conns), 1);
	assert_true(refused_for(f->t.srv, "handshake limit per source address"));
	/* the three are still there, and one of them can still authenticate */
	assert_false(closed_within(fd[0], 50));
	assert_int_equal(auth(f, fd[0], f->key), 0);
	assert_int_equal(hello(f, fd[0]), 0);
	assert_int_equal(wait_uint(&f->t.srv->nhandshake, 2, 2000), 2);
	for (i = 0; i < 4; i++)
		close(fd[i]);
}

/*
 * max-conns 8: at most 6 unauthenticated. Eight idle connections: the
 * oldest two are closed for the newer ones; a client with the key then
 * gets in at once (the oldest idle one closed for it again).
 */
static void test_key_holder_gets_in(void **state)
{
	struct fx *f = *state;
	int idle[8], authed[3], fd, i, nclosed = 0;

	f->t.cfg.max_conns = 8;
	start(f, 1);
	for (i = 0; i < 8; i++)
		idle[i] = th_connect_unix(f->sock);
	assert_int_equal(wait_uint(&f->t.srv->nhandshake, 6, 2000), 6);
	assert_true(closed_within(idle[0], 2000));
	assert_true(closed_within(idle[1], 2000));
	fd = th_connect_unix(f->sock);
	assert_int_equal(auth(f, fd, f->key), 0);
	assert_int_equal(hello(f, fd), 0);
	assert_true(closed_within(idle[2], 2000));	/* made room for it */
	for (i = 3; i < 8; i++)
		nclosed += closed_within(idle[i], 20);
	assert_int_equal(nclosed, 0);
	assert_int_equal(atomic_load(&f->t.srv->hs_evicted), 3);
	assert_true(refused_for(f->t.srv, "handshake limit (closed its oldest"));
	/*
	 * Two more key holders: 3 authenticated + 5 idle take all 8 slots. A
	 * third finds max-conns reached: the oldest idle one makes room.
	 */
	for (i = 0; i < 3; i++) {
		authed[i] = th_connect_unix(f->sock);
		assert_int_equal(auth(f, authed[i], f->key), 0);
		assert_int_equal(hello(f, authed[i]), 0);
	}
	assert_true(closed_within(idle[3], 2000));
	assert_int_equal(atomic_load(&f->t.srv->hs_evicted), 4);
	assert_int_equal(atomic_load(&f->t.srv->rejected_conns), 0);
	for (i = 0; i < 8; i++)
		close(idle[i]);
	for (i = 0; i < 3; i++)
		close(authed[i]);
	close(fd);
}

/* Only when every slot is authenticated is a new client told EUSERS. */
static void test_full_of_authenticated(void **state)
{
	struct proto_hello_req req = { .proto_version = PROTO_VERSION };
	struct fx *f = *state;
	int a, b, c;

	f->t.cfg.max_conns = 2;
	start(f, 0);
	a = th_connect_unix(f->sock);
	assert_int_equal(hello(f, a), 0);
	b = th_connect_unix(f->sock);
	/* b is unauthenticated: a newcomer pushes it out rather than wait */
	assert_int_equal(wait_uint(&f->t.srv->nhandshake, 1, 2000), 1);
	c = th_connect_unix(f->sock);
	assert_true(closed_within(b, 2000));
	assert_int_equal(hello(f, c), 0);
	close(b);
	b = th_connect_unix(f->sock);
	tc_send(b, OP_HELLO, 4, TH_GENERATION, &req, sizeof(req));
	assert_int_equal(tc_reply(b, &f->r, 5000), 0);
	assert_int_equal(f->r.h.status, -EUSERS);
	assert_true(refused_for(f->t.srv, "max-conns reached"));
	close(a);
	close(b);
	close(c);
}

static void test_no_key_and_wrong_key_differ(void **state)
{
	struct proto_hello_req req = { .proto_version = PROTO_VERSION };
	uint8_t other[CONFIG_KEY_BYTES];
	struct fx *f = *state;
	int fd;

	start(f, 1);
	/* no key: HELLO first, answered EACCES, closed */
	fd = th_connect_unix(f->sock);
	tc_send(fd, OP_HELLO, 1, TH_GENERATION, &req, sizeof(req));
	assert_int_equal(tc_reply(fd, &f->r, 5000), 0);
	assert_int_equal(f->r.h.status, -EACCES);
	assert_true(closed_within(fd, 2000));
	close(fd);
	assert_true(refused_for(f->t.srv, "client sent no key"));
	assert_false(refused_now(f->t.srv, "wrong key"));
	/* a wrong key: the client sees marud's proof fail and leaves */
	randombytes_buf(other, sizeof(other));
	fd = th_connect_unix(f->sock);
	assert_int_equal(auth(f, fd, other), -EACCES);
	close(fd);
	assert_int_equal(wait_uint(&f->t.srv->nconns, 0, 2000), 0);
	assert_true(refused_for(f->t.srv, "wrong key"));
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_deadline_closes_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trickle_closed_at_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_frame_refused_on_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_source_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_holder_gets_in, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_of_authenticated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_key_and_wrong_key_differ, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
