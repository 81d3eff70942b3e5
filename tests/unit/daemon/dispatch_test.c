// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/dispatch_test.c: the gates and the reply cache of
 * marud's dispatch (daemon/dispatch.c) on a real server, one request at a
 * time through the fuzzing seam: with a key nothing but AUTH runs before
 * AUTH, and a bad MAC closes; nothing needing a session runs before HELLO;
 * a request of another pool generation is answered -ESTALE and the
 * connection lives on; a replayed request id gets the recorded reply, even
 * on another connection of the session and even when re-running it would
 * now give another answer; unknown ops and oversized frames close, a
 * well-framed request naming an invalid entry is answered without running.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "dir.h"
#include "server_harness.h"

struct fx {
	struct th t;
	struct tconn a;
	struct treply r;
	uint8_t key[CONFIG_KEY_BYTES];
};

static int setup_key(void **state, int with_key)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	memset(f->key, 0x5a, sizeof(f->key));
	th_config(&f->t);
	if (th_new(&f->t, with_key ? f->key : NULL))
		return -1;
	tc_open(&f->t, &f->a);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_key(state, 0);
}

static int setup_keyed(void **state)
{
	return setup_key(state, 1);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc;

	tc_close(&f->a);
	rc = th_free(&f->t);
	free(f);
	return rc;
}

static void mac_of(const uint8_t *key, const char *label, const uint8_t *a,
		   const uint8_t *b, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, CONFIG_KEY_BYTES);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, a, 32);
	crypto_auth_hmacsha256_update(&st, b, 32);
	crypto_auth_hmacsha256_final(&st, mac);
}

/* Both AUTH steps; bad: corrupt the client's MAC. Returns the last status. */
static int auth(struct fx *f, int bad, int *step)
{
	struct proto_auth req = { 0 }, rep, mine;

	memset(req.nonce, 0x11, sizeof(req.nonce));
	assert_int_equal(tc_call(&f->a, OP_AUTH, 1, &req, sizeof(req), &f->r, step), 0);
	assert_int_equal(f->r.len, sizeof(rep));
	memcpy(&rep, f->r.p, sizeof(rep));
	/* marud proved it knows the key */
	mac_of(f->key, "marud", req.nonce, rep.nonce, mine.mac);
	assert_memory_equal(mine.mac, rep.mac, 32);
	mac_of(f->key, "maruc", rep.nonce, req.nonce, req.mac);
	if (bad)
		req.mac[0] ^= 1;
	return tc_call(&f->a, OP_AUTH, 2, &req, sizeof(req), &f->r, step);
}

static void test_key_gates_everything_before_auth(void **state)
{
	struct fx *f = *state;
	struct proto_ino_req g = { .ino = DIR_ROOT_ID };
	int step;

	assert_int_equal(tc_call(&f->a, OP_PING, 5, NULL, 0, &f->r, &step), -EACCES);
	assert_int_not_equal(step, 0);
	tc_close(&f->a);
	tc_open(&f->t, &f->a);
	assert_int_equal(tc_call(&f->a, OP_GETATTR, 6, &g, sizeof(g), &f->r, &step), -EACCES);
	assert_int_not_equal(step, 0);
}

static void test_auth_then_hello(void **state)
{
	struct fx *f = *state;
	struct proto_ino_req g = { .ino = DIR_ROOT_ID };
	int step;

	assert_int_equal(auth(f, 0, &step), 0);
	assert_int_equal(step, 0);
	assert_int_equal(f->r.len, 0);
	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	assert_int_equal(tc_call(&f->a, OP_GETATTR, 3, &g, sizeof(g), &f->r, &step), 0);
	assert_int_equal(step, 0);
	assert_int_equal(f->r.len, sizeof(struct proto_attr));
}

static void test_bad_mac_closes(void **state)
{
	struct fx *f = *state;
	int step;

	assert_int_equal(auth(f, 1, &step), -EACCES);
	assert_int_not_equal(step, 0);
}

static void test_auth_without_key(void **state)
{
	struct fx *f = *state;
	struct proto_auth req = { 0 };
	int step;

	assert_int_equal(tc_call(&f->a, OP_AUTH, 1, &req, sizeof(req), &f->r, &step),
			 -EOPNOTSUPP);
	assert_int_equal(step, 0);
}

static void test_session_ops_need_hello(void **state)
{
	struct fx *f = *state;
	struct proto_ino_req g = { .ino = DIR_ROOT_ID };
	int step;

	/* PING needs no session */
	assert_int_equal(tc_call(&f->a, OP_PING, 1, NULL, 0, &f->r, &step), 0);
	assert_int_equal(step, 0);
	assert_int_equal(tc_call(&f->a, OP_GETATTR, 2, &g, sizeof(g), &f->r, &step), -EPROTO);
	assert_int_not_equal(step, 0);
}

static void test_generation_mismatch_is_estale(void **state)
{
	struct fx *f = *state;
	struct proto_ino_req g = { .ino = DIR_ROOT_ID };

	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	tc_send(f->a.fd, OP_GETATTR, 4, TH_GENERATION + 1, &g, sizeof(g));
	assert_int_equal(tc_step(&f->a), 0);
	assert_int_equal(tc_reply(f->a.fd, &f->r, 0), 0);
	assert_int_equal(f->r.h.status, -ESTALE);
	assert_int_equal(f->r.h.generation, TH_GENERATION);
	/* handshake ops carry no generation check */
	tc_send(f->a.fd, OP_PING, 5, 0, NULL, 0);
	assert_int_equal(tc_step(&f->a), 0);
	assert_int_equal(tc_reply(f->a.fd, &f->r, 0), 0);
	assert_int_equal(f->r.h.status, 0);
	/* and the connection is still good */
	assert_int_equal(tc_call(&f->a, OP_GETATTR, 6, &g, sizeof(g), &f->r, NULL), 0);
}

static void test_stale_write_payload_is_drained(void **state)
{
	struct fx *f = *state;
	uint8_t buf[sizeof(struct proto_io_req) + 100] = { 0 };
	struct proto_io_req w = { .ino = 12345, .off = 0, .len = 100 };

	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	memcpy(buf, &w, sizeof(w));
	tc_send(f->a.fd, OP_WRITE, 7, TH_GENERATION + 1, buf, sizeof(buf));
	assert_int_equal(tc_step(&f->a), 0);
	assert_int_equal(tc_reply(f->a.fd, &f->r, 0), 0);
	assert_int_equal(f->r.h.status, -ESTALE);
	/* the 100 data bytes did not become the next frame */
	assert_int_equal(tc_call(&f->a, OP_PING, 8, NULL, 0, &f->r, NULL), 0);
}

static void test_replayed_reqid_gets_recorded_reply(void **state)
{
	struct fx *f = *state;
	uint8_t req[64], first[sizeof(struct proto_attr)], token[16];
	size_t n = name_req(req, DIR_ROOT_ID, "a", 0755);
	struct tconn b;

	assert_int_equal(tc_hello(&f->a, NULL, token), 0);
	assert_int_equal(tc_call(&f->a, OP_MKDIR, 7, req, n, &f->r, NULL), 0);
	assert_int_equal(f->r.len, sizeof(first));
	memcpy(first, f->r.p, sizeof(first));
	/* the retry is answered from the cache: same attributes, not -EEXIST */
	assert_int_equal(tc_call(&f->a, OP_MKDIR, 7, req, n, &f->r, NULL), 0);
	assert_int_equal(f->r.len, sizeof(first));
	assert_memory_equal(f->r.p, first, sizeof(first));
	/* a new request id runs */
	assert_int_equal(tc_call(&f->a, OP_MKDIR, 8, req, n, &f->r, NULL), -EEXIST);
	/* a retry on another connection of the same session is a replay too */
	tc_open(&f->t, &b);
	assert_int_equal(tc_hello(&b, token, NULL), 0);
	assert_int_equal(tc_call(&b, OP_MKDIR, 7, req, n, &f->r, NULL), 0);
	assert_memory_equal(f->r.p, first, sizeof(first));
	tc_close(&b);
}

static void test_replayed_failure_is_not_rerun(void **state)
{
	struct fx *f = *state;
	uint8_t req[64];
	size_t n = name_req(req, DIR_ROOT_ID, "b", 0755);

	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	assert_int_equal(tc_call(&f->a, OP_RMDIR, 20, req, n, &f->r, NULL), -ENOENT);
	assert_int_equal(tc_call(&f->a, OP_MKDIR, 21, req, n, &f->r, NULL), 0);
	/* re-running reqid 20 would now succeed: the recorded -ENOENT is what comes */
	assert_int_equal(tc_call(&f->a, OP_RMDIR, 20, req, n, &f->r, NULL), -ENOENT);
	assert_int_equal(tc_call(&f->a, OP_RMDIR, 22, req, n, &f->r, NULL), 0);
}

static void test_unknown_op_closes_unanswered(void **state)
{
	struct fx *f = *state;

	tc_send(f->a.fd, OP_EVENT_ACK, 1, TH_GENERATION, NULL, 0);
	assert_int_equal(tc_step(&f->a), -EPROTO);
	assert_int_equal(tc_reply(f->a.fd, &f->r, 0), -EAGAIN);
	tc_close(&f->a);
	tc_open(&f->t, &f->a);
	tc_send(f->a.fd, 99, 1, TH_GENERATION, NULL, 0);
	assert_int_equal(tc_step(&f->a), -EPROTO);
	assert_int_equal(tc_reply(f->a.fd, &f->r, 0), -EAGAIN);
}

static void test_oversized_frame_answered_then_closed(void **state)
{
	struct fx *f = *state;
	struct proto_hdr h;

	proto_hdr_init(&h, OP_LOOKUP, TH_MAX_FRAME + 1, 3, TH_GENERATION, 0);
	assert_int_equal(proto_send(f->a.fd, &h, NULL, 0, NULL, 0), 0);
	assert_int_equal(tc_step(&f->a), -EPROTO);
	assert_int_equal(tc_reply(f->a.fd, &f->r, 0), 0);
	assert_int_equal(f->r.h.status, -EMSGSIZE);
	assert_int_equal(f->r.h.reqid, 3);
}

static void test_invalid_name_answered_not_run(void **state)
{
	struct fx *f = *state;
	uint8_t req[64];
	size_t n = name_req(req, DIR_ROOT_ID, "x/y", 0755);
	int step;

	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	assert_int_equal(tc_call(&f->a, OP_MKDIR, 30, req, n, &f->r, &step), -EINVAL);
	assert_int_equal(step, 0);
	/* a malformed one (length disagrees with namelen) closes */
	tc_send(f->a.fd, OP_MKDIR, 31, TH_GENERATION, req, n - 1);
	assert_int_not_equal(tc_step(&f->a), 0);
	assert_int_equal(tc_reply(f->a.fd, &f->r, 0), -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_key_gates_everything_before_auth,
						setup_keyed, teardown),
		cmocka_unit_test_setup_teardown(test_auth_then_hello, setup_keyed, teardown),
		cmocka_unit_test_setup_teardown(test_bad_mac_closes, setup_keyed, teardown),
		cmocka_unit_test_setup_teardown(test_auth_without_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_ops_need_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generation_mismatch_is_estale, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stale_write_payload_is_drained, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_replayed_reqid_gets_recorded_reply, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_replayed_failure_is_not_rerun, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_op_closes_unanswered, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_oversized_frame_answered_then_closed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_invalid_name_answered_not_run, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("dispatch", tests, NULL, NULL);
}
