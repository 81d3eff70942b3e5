// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/handshake_test.c: the handlers that start a
 * connection (daemon/handlers/handshake.c) on a real server through the
 * fuzzing seam: PING answers empty; HELLO describes the pool (generation,
 * size, data offset, backend, path, no extension, no rdma) and refuses a
 * second HELLO and another protocol version; a reclaim HELLO gets its
 * session back; AUTH without a key is refused; with a key, the two-step
 * HMAC exchange (checked here with libsodium) lets HELLO through, and a bad
 * MAC or a changed client nonce is refused and closes the connection.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "hreq.h"

static const uint8_t key[32] = "0123456789abcdef0123456789abcde";

static int hello(struct hfx *f, struct tconn *tc, uint32_t flags, uint32_t version,
		 const uint8_t *token, struct proto_hello_rep *rep, int *step)
{
	struct proto_hello_req q = { .flags = flags, .proto_version = version, .pid = 7 };
	int rc;

	snprintf(q.client_name, sizeof(q.client_name), "handshake");
	if (token)
		memcpy(q.token, token, sizeof(q.token));
	rc = tc_call(tc, OP_HELLO, hr_id(), &q, sizeof(q), &f->r, step);
	if (!rc) {
		assert_int_equal(f->r.len, sizeof(*rep));
		memcpy(rep, f->r.p, sizeof(*rep));
	}
	return rc;
}

static void test_ping(void **state)
{
	struct hfx *f = hfx_new(NULL);

	(void)state;
	assert_non_null(f);
	assert_int_equal(tc_call(&f->a, OP_PING, hr_id(), NULL, 0, &f->r, NULL), 0);
	assert_int_equal(f->r.len, 0);
	assert_int_equal(hfx_free(f), 0);
}

static void test_hello_describes_pool(void **state)
{
	struct hfx *f = hfx_new(NULL);
	struct proto_hello_rep rep, again;
	int step;

	(void)state;
	assert_non_null(f);
	assert_int_equal(hello(f, &f->a, HELLO_F_RDMA, PROTO_VERSION, NULL, &rep, NULL), 0);
	assert_int_equal(rep.generation, TH_GENERATION);
	assert_int_equal(rep.pool_size, f->t.cfg.size);
	assert_true(rep.data_off > 0 && rep.data_off < rep.pool_size);
	assert_true(rep.pool_align > 0);
	assert_int_equal(rep.max_frame, TH_MAX_FRAME);
	assert_int_equal(rep.backend, 1);	/* shm */
	assert_non_null(strstr(rep.pool_path, f->t.shm));
	assert_int_equal(rep.reclaimed, 0);
	/* no extension, no rdma listener */
	assert_int_equal(rep.hint_actions, 0);
	assert_int_equal(rep.ext_abi, 0);
	assert_int_equal(rep.rdma_port, 0);
	/* a connection has one session */
	assert_int_equal(hello(f, &f->a, 0, PROTO_VERSION, NULL, &again, &step), -EISCONN);
	/* another protocol version: refused, no session */
	assert_int_equal(hello(f, &f->b, 0, PROTO_VERSION + 1, NULL, &again, NULL),
			 -EPROTONOSUPPORT);
	assert_int_equal(tc_call(&f->b, OP_STATFS, hr_id(), NULL, 0, &f->r, NULL), -EPROTO);
	assert_int_equal(hfx_free(f), 0);
}

static void test_hello_reclaim(void **state)
{
	struct hfx *f = hfx_new(NULL);
	struct proto_hello_rep rep, back;
	uint8_t unknown[16];

	(void)state;
	assert_non_null(f);
	assert_int_equal(hello(f, &f->a, 0, PROTO_VERSION, NULL, &rep, NULL), 0);
	tc_close(&f->a);
	assert_int_equal(hello(f, &f->b, HELLO_F_RECLAIM, PROTO_VERSION, rep.token, &back,
			       NULL), 0);
	assert_int_equal(back.reclaimed, 1);
	assert_memory_equal(back.token, rep.token, sizeof(rep.token));
	/* an unknown token: a new session, not reclaimed */
	tc_open(&f->t, &f->a);
	memset(unknown, 0x5a, sizeof(unknown));
	assert_int_equal(hello(f, &f->a, HELLO_F_RECLAIM, PROTO_VERSION, unknown, &back,
			       NULL), 0);
	assert_int_equal(back.reclaimed, 0);
	assert_memory_not_equal(back.token, rep.token, sizeof(rep.token));
	assert_int_equal(hfx_free(f), 0);
}

static void test_auth_without_key(void **state)
{
	struct hfx *f = hfx_new(NULL);
	struct proto_auth q = { 0 };

	(void)state;
	assert_non_null(f);
	assert_int_equal(tc_call(&f->a, OP_AUTH, hr_id(), &q, sizeof(q), &f->r, NULL),
			 -EOPNOTSUPP);
	assert_int_equal(hfx_free(f), 0);
}

static void mac_of(const char *label, const uint8_t *a, const uint8_t *b, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, sizeof(key));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, a, 32);
	crypto_auth_hmacsha256_update(&st, b, 32);
	crypto_auth_hmacsha256_final(&st, mac);
}

/* The first AUTH step: the server's nonce, its MAC checked. */
static void auth_first(struct hfx *f, struct tconn *tc, struct proto_auth *q,
		       struct proto_auth *rep)
{
	uint8_t want[32];

	randombytes_buf(q->nonce, sizeof(q->nonce));
	memset(q->mac, 0, sizeof(q->mac));
	assert_int_equal(tc_call(tc, OP_AUTH, hr_id(), q, sizeof(*q), &f->r, NULL), 0);
	assert_int_equal(f->r.len, sizeof(*rep));
	memcpy(rep, f->r.p, sizeof(*rep));
	mac_of("marud", q->nonce, rep->nonce, want);
	assert_memory_equal(rep->mac, want, sizeof(want));
}

static void test_auth_key(void **state)
{
	struct hfx *f = hfx_new(key);
	struct proto_auth q, rep;
	struct proto_hello_rep h;
	int step = 0;

	(void)state;
	assert_int_equal(sodium_init() < 0, 0);
	assert_non_null(f);
	auth_first(f, &f->a, &q, &rep);
	mac_of("maruc", rep.nonce, q.nonce, q.mac);
	assert_int_equal(tc_call(&f->a, OP_AUTH, hr_id(), &q, sizeof(q), &f->r, &step), 0);
	assert_int_equal(f->r.len, 0);
	assert_int_equal(step, 0);
	assert_int_equal(hello(f, &f->a, 0, PROTO_VERSION, NULL, &h, NULL), 0);
	/* authenticated already: a further AUTH is a no-op */
	assert_int_equal(tc_call(&f->a, OP_AUTH, hr_id(), &q, sizeof(q), &f->r, NULL), 0);

	/* a wrong MAC: refused, the connection closes */
	auth_first(f, &f->b, &q, &rep);
	mac_of("maruc", q.nonce, rep.nonce, q.mac);	/* nonces swapped */
	assert_int_equal(tc_call(&f->b, OP_AUTH, hr_id(), &q, sizeof(q), &f->r, &step),
			 -EACCES);
	assert_int_not_equal(step, 0);
	assert_int_equal(hfx_free(f), 0);
}

static void test_auth_nonce_changed(void **state)
{
	struct hfx *f = hfx_new(key);
	struct proto_auth q, rep;
	int step = 0;

	(void)state;
	assert_non_null(f);
	/* HELLO before AUTH under a key: refused and closed */
	{
		struct proto_hello_rep h;

		assert_int_equal(hello(f, &f->b, 0, PROTO_VERSION, NULL, &h, &step), -EACCES);
		assert_int_not_equal(step, 0);
	}
	auth_first(f, &f->a, &q, &rep);
	mac_of("maruc", rep.nonce, q.nonce, q.mac);
	q.nonce[0] ^= 1;
	assert_int_equal(tc_call(&f->a, OP_AUTH, hr_id(), &q, sizeof(q), &f->r, &step),
			 -EACCES);
	assert_int_not_equal(step, 0);
	assert_int_equal(hfx_free(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping),
		cmocka_unit_test(test_hello_describes_pool),
		cmocka_unit_test(test_hello_reclaim),
		cmocka_unit_test(test_auth_without_key),
		cmocka_unit_test(test_auth_key),
		cmocka_unit_test(test_auth_nonce_changed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
