// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/subscribe_test.c: event subscribers and acknowledgement
 * waits (daemon/subscribe.c) on a real server over a unix listener: a
 * subscriber gets the events of another session's change and may PING; once
 * it acknowledges, another session's change is answered only after the
 * subscriber acknowledged it, or after the bound (counted as a timeout); the
 * requester's own event stream is never waited for, and the events of its
 * own publishes say so (EVENT_F_OWN) on that stream only. A session that
 * said HELLO_F_DIRATTR gets the directory's attributes after the version's
 * in each PUBLISH reply; others get the version's alone. A subscriber that
 * misses one deadline is waited for that once, then dropped: later changes
 * answer at once, and the events pushed to it say EVENT_F_UNWAITED; an ack
 * of an event before the one it missed changes nothing, the ack of that
 * event puts it back (changes wait for it again, the flag goes), once it
 * has caught up: a stream replaying a backlog of more than 64 events joins
 * (or rejoins) only when its ack comes within 64 of the newest. All real:
 * a server on a unix socket, the subscriber played by the test.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "dir.h"
#include "server_harness.h"
#include "server_priv.h"

#define ACK_MS	300

struct fx {
	char dir[64], sock[96];
	struct th t;
	struct treply r;
	int sub, cli;		/* subscriber socket, client socket */
	uint8_t cli_token[16];
};

static void hello(int fd, uint32_t flags, const uint8_t *token, uint8_t *out,
		  struct treply *r)
{
	struct proto_hello_req req = { .flags = flags, .proto_version = PROTO_VERSION };

	if (token)
		memcpy(req.token, token, sizeof(req.token));
	assert_int_equal(th_call(fd, OP_HELLO, 1, &req, sizeof(req), r), 0);
	if (out)
		memcpy(out, r->p + offsetof(struct proto_hello_rep, token), 16);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/marud-sub-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/marud.sock", f->dir);
	th_config(&f->t);
	f->t.cfg.nlisten = 1;
	snprintf(f->t.cfg.listen[0], sizeof(f->t.cfg.listen[0]), "unix:%s", f->sock);
	f->t.cfg.ack_ms = ACK_MS;
	f->t.cfg.ack_publish_ms = ACK_MS;
	if (th_new(&f->t, NULL) || server_start(f->t.srv))
		return -1;
	f->cli = th_connect_unix(f->sock);
	f->sub = th_connect_unix(f->sock);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc;

	close(f->cli);
	close(f->sub);
	rc = th_free(&f->t);
	rmdir(f->dir);
	free(f);
	return rc;
}

/* Subscribe f->sub; owner: the session whose event stream it is, or NULL. */
static void subscribe(struct fx *f, const uint8_t *owner)
{
	struct proto_subscribe_req s = { .after_seq = 0 };

	hello(f->sub, owner ? HELLO_F_EVENTS : 0, owner, NULL, &f->r);
	assert_int_equal(th_call(f->sub, OP_SUBSCRIBE, 2, &s, sizeof(s), &f->r), 0);
}

/* Next pushed event on the subscriber (skipping other frames): its seq. */
static uint64_t next_event(struct fx *f, const char *name)
{
	struct proto_event e;

	do
		assert_int_equal(tc_reply(f->sub, &f->r, 5000), 0);
	while (f->r.h.op != OP_EVENT);
	assert_int_equal(f->r.h.reqid, 0);
	assert_true(f->r.len >= sizeof(e));
	memcpy(&e, f->r.p, sizeof(e));
	if (name) {
		assert_int_equal(e.namelen, strlen(name));
		assert_memory_equal(f->r.p + sizeof(e), name, e.namelen);
	}
	return e.seq;
}

static void ack(struct fx *f, uint64_t seq)
{
	struct proto_ack_req a = { .seq = seq };

	tc_send(f->sub, OP_EVENT_ACK, 0, TH_GENERATION, &a, sizeof(a));
}

/* The reader thread takes the ACK asynchronously. */
static void wait_acking(struct server *srv)
{
	struct timespec ts = { 0, 5 * 1000000L };
	int i;

	for (i = 0; i < 1000 && !atomic_load(&srv->nacking); i++)
		nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&srv->nacking), 1);
}

static void mkdir_send(struct fx *f, uint64_t reqid, const char *name)
{
	uint8_t req[64];
	size_t n = name_req(req, DIR_ROOT_ID, name, 0755);

	tc_send(f->cli, OP_MKDIR, reqid, TH_GENERATION, req, n);
}

static void test_events_and_ping(void **state)
{
	struct fx *f = *state;

	hello(f->cli, 0, NULL, NULL, &f->r);
	subscribe(f, NULL);
	mkdir_send(f, 10, "x");
	assert_int_equal(tc_reply(f->cli, &f->r, 5000), 0);
	assert_int_equal(f->r.h.status, 0);
	next_event(f, "x");
	/* the reader thread answers PING between events */
	tc_send(f->sub, OP_PING, 11, TH_GENERATION, NULL, 0);
	do
		assert_int_equal(tc_reply(f->sub, &f->r, 5000), 0);
	while (f->r.h.op == OP_EVENT);
	assert_int_equal(f->r.h.op, OP_PING);
	assert_int_equal(f->r.h.reqid, 11);
	assert_int_equal(f->r.h.status, 0);
}

static void test_change_waits_for_the_ack(void **state)
{
	struct fx *f = *state;
	uint64_t seq;

	hello(f->cli, 0, NULL, NULL, &f->r);
	subscribe(f, NULL);
	ack(f, 0);
	wait_acking(f->t.srv);
	mkdir_send(f, 20, "y");
	seq = next_event(f, "y");
	/* held until the subscriber applied it */
	assert_int_equal(tc_reply(f->cli, &f->r, 50), -EAGAIN);
	ack(f, seq);
	assert_int_equal(tc_reply(f->cli, &f->r, 5000), 0);
	assert_int_equal(f->r.h.reqid, 20);
	assert_int_equal(f->r.h.status, 0);
	assert_int_equal(atomic_load(&f->t.srv->ack_timeouts), 0);
}

static void test_missed_ack_times_out(void **state)
{
	struct fx *f = *state;
	uint64_t t0, ms;

	hello(f->cli, 0, NULL, NULL, &f->r);
	subscribe(f, NULL);
	ack(f, 0);
	wait_acking(f->t.srv);
	t0 = mono_ns();
	mkdir_send(f, 30, "z");
	assert_int_equal(tc_reply(f->cli, &f->r, 5000), 0);
	ms = (mono_ns() - t0) / 1000000;
	assert_int_equal(f->r.h.status, 0);
	assert_true(ms >= ACK_MS - 20);
	assert_int_equal(atomic_load(&f->t.srv->ack_timeouts), 1);
	next_event(f, "z");
}

static void test_own_stream_not_waited_for(void **state)
{
	struct fx *f = *state;
	uint64_t t0, ms;

	hello(f->cli, 0, NULL, f->cli_token, &f->r);
	subscribe(f, f->cli_token);
	ack(f, 0);
	wait_acking(f->t.srv);
	t0 = mono_ns();
	mkdir_send(f, 40, "w");
	assert_int_equal(tc_reply(f->cli, &f->r, 5000), 0);
	ms = (mono_ns() - t0) / 1000000;
	assert_int_equal(f->r.h.status, 0);
	assert_true(ms < ACK_MS);
	assert_int_equal(atomic_load(&f->t.srv->ack_timeouts), 0);
	next_event(f, "w");
}

/* CREATE parent/name then PUBLISH it (size 0) on fd: the PUBLISH reply in f->r. */
static void create_publish(struct fx *f, int fd, uint64_t reqid, const char *name)
{
	uint8_t buf[sizeof(struct proto_create_req) + 64];
	struct proto_create_req q = { .parent = DIR_ROOT_ID, .mode = 0100644 };
	struct proto_publish_req p = { 0 };
	struct proto_attr a;

	q.namelen = (uint16_t)strlen(name);
	memcpy(buf, &q, sizeof(q));
	memcpy(buf + sizeof(q), name, q.namelen);
	assert_int_equal(th_call(fd, OP_CREATE, reqid, buf, sizeof(q) + q.namelen, &f->r), 0);
	memcpy(&a, f->r.p, sizeof(a));
	p.ino = a.ino;
	assert_int_equal(th_call(fd, OP_PUBLISH, reqid + 1, &p, sizeof(p), &f->r), 0);
}

/* The next event on the subscriber, whole. */
static struct proto_event next_event_full(struct fx *f)
{
	struct proto_event e;

	do
		assert_int_equal(tc_reply(f->sub, &f->r, 5000), 0);
	while (f->r.h.op != OP_EVENT);
	memcpy(&e, f->r.p, sizeof(e));
	return e;
}

static void test_own_publish_and_dir_attr(void **state)
{
	struct fx *f = *state;
	struct proto_attr a[2];
	struct proto_event e;
	int other = th_connect_unix(f->sock);

	hello(f->cli, HELLO_F_DIRATTR, NULL, f->cli_token, &f->r);
	hello(other, 0, NULL, NULL, &f->r);
	subscribe(f, f->cli_token);
	create_publish(f, f->cli, 50, "mine");
	assert_int_equal(f->r.len, 2 * sizeof(struct proto_attr));
	memcpy(a, f->r.p, sizeof(a));
	assert_int_equal(a[0].state, DIR_ST_PUBLISHED);
	assert_int_equal(a[1].ino, DIR_ROOT_ID);
	assert_int_equal(a[1].state, DIR_ST_DIR);
	assert_int_equal(a[1].size, 1);		/* the root's one entry */
	assert_int_equal(a[1].nextents, 0);
	e = next_event_full(f);
	assert_int_equal(e.type, DEV_PUBLISH);
	assert_int_equal(e.flags, EVENT_F_OWN);
	/* another session's publish: not ours, and no directory without asking */
	create_publish(f, other, 60, "theirs");
	assert_int_equal(f->r.len, sizeof(struct proto_attr));
	e = next_event_full(f);
	assert_int_equal(e.type, DEV_PUBLISH);
	assert_int_equal(e.flags, 0);
	/* a change of ours that is not a publish carries no flag */
	mkdir_send(f, 70, "d");
	assert_int_equal(tc_reply(f->cli, &f->r, 5000), 0);
	e = next_event_full(f);
	assert_int_equal(e.type, DEV_MKDIR);
	assert_int_equal(e.flags, 0);
	close(other);
}

/* A change by f->cli (mkdir name): its status, and how long it took (ms). */
static uint64_t mkdir_timed(struct fx *f, uint64_t reqid, const char *name)
{
	uint64_t t0 = mono_ns();

	mkdir_send(f, reqid, name);
	assert_int_equal(tc_reply(f->cli, &f->r, 5000), 0);
	assert_int_equal(f->r.h.reqid, reqid);
	assert_int_equal(f->r.h.status, 0);
	return (mono_ns() - t0) / 1000000;
}

static void wait_nacking(struct server *srv, unsigned int n)
{
	struct timespec ts = { 0, 5 * 1000000L };
	int i;

	for (i = 0; i < 1000 && atomic_load(&srv->nacking) != n; i++)
		nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&srv->nacking), n);
}

static void test_missed_ack_drops_until_acked(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;
	struct proto_event e;
	uint64_t missed;
	char name[16];
	int i;

	hello(f->cli, 0, NULL, NULL, &f->r);
	subscribe(f, NULL);
	ack(f, 0);
	wait_acking(srv);
	/* waited for once: the whole bound, then dropped */
	assert_true(mkdir_timed(f, 100, "a") >= ACK_MS - 20);
	assert_int_equal(atomic_load(&srv->ack_timeouts), 1);
	assert_int_equal(atomic_load(&srv->ack_drops), 1);
	assert_int_equal(atomic_load(&srv->nacking), 0);
	e = next_event_full(f);
	missed = e.seq;
	assert_int_equal(e.flags & EVENT_F_UNWAITED, 0);
	/* later changes do not wait for it, and it is told so */
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		assert_true(mkdir_timed(f, 110 + (uint64_t)i, name) < ACK_MS / 2);
		e = next_event_full(f);
		assert_int_equal(e.flags & EVENT_F_UNWAITED, EVENT_F_UNWAITED);
	}
	assert_int_equal(atomic_load(&srv->ack_timeouts), 1);
	assert_int_equal(atomic_load(&srv->ack_drops), 1);
	/* an ack short of the missed event does not bring it back */
	ack(f, missed - 1);
	assert_true(mkdir_timed(f, 120, "c") < ACK_MS / 2);
	assert_int_equal(atomic_load(&srv->ack_rejoins), 0);
	e = next_event_full(f);
	assert_int_equal(e.flags & EVENT_F_UNWAITED, EVENT_F_UNWAITED);
	/* the ack of the missed event (or later) does, at once */
	ack(f, e.seq);
	wait_nacking(srv, 1);
	assert_int_equal(atomic_load(&srv->ack_rejoins), 1);
	mkdir_send(f, 130, "d");
	e = next_event_full(f);
	assert_int_equal(e.flags & EVENT_F_UNWAITED, 0);
	assert_int_equal(tc_reply(f->cli, &f->r, 50), -EAGAIN);
	ack(f, e.seq);
	assert_int_equal(tc_reply(f->cli, &f->r, 5000), 0);
	assert_int_equal(f->r.h.reqid, 130);
	assert_int_equal(f->r.h.status, 0);
	assert_int_equal(atomic_load(&srv->ack_timeouts), 1);
	assert_int_equal(atomic_load(&srv->ack_drops), 1);
}

/* A dropped subscriber that leaves does not upset the count of the others. */
static void test_dropped_subscriber_leaves(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;

	hello(f->cli, 0, NULL, NULL, &f->r);
	subscribe(f, NULL);
	ack(f, 0);
	wait_acking(srv);
	assert_true(mkdir_timed(f, 200, "e") >= ACK_MS - 20);
	assert_int_equal(atomic_load(&srv->nacking), 0);
	close(f->sub);
	f->sub = th_connect_unix(f->sock);
	subscribe(f, NULL);
	ack(f, 0);
	wait_acking(srv);
	assert_int_equal(atomic_load(&srv->nacking), 1);
	/* the new stream is waited on from its first ack, as any */
	assert_true(mkdir_timed(f, 210, "f") >= ACK_MS - 20);
	assert_int_equal(atomic_load(&srv->ack_drops), 2);
}

/* n changes nobody waits for; the last one's event seq. */
static uint64_t backlog(struct fx *f, uint64_t reqid, int n)
{
	char name[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "g%llu", (unsigned long long)reqid + (uint64_t)i);
		assert_true(mkdir_timed(f, reqid + (uint64_t)i, name) < ACK_MS / 2);
	}
	return dir_event_seq(f->t.srv->dir);
}

static void test_joins_when_caught_up(void **state)
{
	struct fx *f = *state;
	struct server *srv = f->t.srv;
	struct proto_subscribe_req sr = { .after_seq = 1 };
	struct timespec ts = { 0, 50 * 1000000L };
	uint64_t last, missed;

	hello(f->cli, 0, NULL, NULL, &f->r);
	last = backlog(f, 300, 100);
	/* a stream that replays from event 1: not waited on until caught up */
	hello(f->sub, 0, NULL, NULL, &f->r);
	assert_int_equal(th_call(f->sub, OP_SUBSCRIBE, 2, &sr, sizeof(sr), &f->r), 0);
	ack(f, 1);
	nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&srv->nacking), 0);
	assert_true(mkdir_timed(f, 400, "h") < ACK_MS / 2);
	ack(f, last);
	wait_nacking(srv, 1);
	/* dropped, then 100 changes behind: the missed event's ack is not enough */
	assert_true(mkdir_timed(f, 401, "i") >= ACK_MS - 20);
	missed = dir_event_seq(srv->dir);
	last = backlog(f, 500, 100);
	ack(f, missed);
	nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&srv->nacking), 0);
	assert_int_equal(atomic_load(&srv->ack_rejoins), 0);
	ack(f, last - 10);
	wait_nacking(srv, 1);
	assert_int_equal(atomic_load(&srv->ack_rejoins), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_events_and_ping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_change_waits_for_the_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missed_ack_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_stream_not_waited_for, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_publish_and_dir_attr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missed_ack_drops_until_acked, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dropped_subscriber_leaves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_joins_when_caught_up, setup, teardown),
	};

	return cmocka_run_group_tests_name("subscribe", tests, NULL, NULL);
}
