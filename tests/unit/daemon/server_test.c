/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/server_test.c: marud's server as a whole
 * (daemon/server.c): server_new() over a fresh shm pool recording the
 * generation in the superblock, refusing a bad pool URI and a pool another
 * server holds, unwinding a start whose listener cannot bind (the pool's
 * claim released); server_start() serving on a unix socket, server_stop()
 * ending it (socket gone, directory check passed); server_destroy() of a
 * running server; server_reload() applying only what may change at
 * run time (the handshake limits among it); and a session made because
 * the one its client asked to reclaim had ended marked as such.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "handlers/handlers.h"
#include "log.h"
#include "pool.h"
#include "server_harness.h"
#include "server_priv.h"
#include "superblock.h"

static char tmpdir[64];

struct fx {
	struct th t;
	struct treply r;
	char sock[100];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	th_config(&f->t);
	snprintf(f->sock, sizeof(f->sock), "%s/s.sock", tmpdir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char path[96];

	if (f->t.srv)
		th_free(&f->t);
	snprintf(path, sizeof(path), "/dev/shm/%s", f->t.shm);
	unlink(path);
	unlink(f->sock);
	free(f);
	return 0;
}

static void listen_unix(struct fx *f)
{
	f->t.cfg.nlisten = 1;
	snprintf(f->t.cfg.listen[0], sizeof(f->t.cfg.listen[0]), "unix:%s", f->sock);
}

/* The pool is claimed by nobody: a fresh open of it works. */
static void assert_pool_free(const char *uri)
{
	struct pool *p;

	assert_int_equal(pool_open(uri, 0, 1, &p), 0);
	pool_close(p);
}

static void test_new_records_generation(void **state)
{
	struct fx *f = *state;
	struct pool_superblock sb;
	char path[96];
	int fd;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_generation(f->t.srv), TH_GENERATION);
	assert_int_equal(server_reset_asked(f->t.srv), 0);
	snprintf(path, sizeof(path), "/dev/shm/%s", f->t.shm);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	close(fd);
	assert_int_equal(pool_sb_check(&sb), 0);
	assert_int_equal(sb.generation, TH_GENERATION);
	assert_int_equal(th_free(&f->t), 0);
}

static void test_new_bad_pool(void **state)
{
	struct fx *f = *state;
	struct server *srv = (struct server *)1;

	snprintf(f->t.cfg.pool, sizeof(f->t.cfg.pool), "nope:x");
	assert_int_equal(server_new(&f->t.cfg, NULL, 1, &srv), -EINVAL);
	assert_ptr_equal(srv, (struct server *)1);
}

/* A second server over the same pool is refused; the first goes on serving. */
static void test_pool_claimed(void **state)
{
	struct fx *f = *state;
	struct server *srv2 = NULL;
	struct tconn tc;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_new(&f->t.cfg, NULL, 2, &srv2), -EBUSY);
	assert_null(srv2);
	tc_open(&f->t, &tc);
	assert_int_equal(tc_call(&tc, OP_PING, 1, NULL, 0, &f->r, NULL), 0);
	tc_close(&tc);
	assert_int_equal(th_free(&f->t), 0);
	assert_pool_free(f->t.cfg.pool);
}

/* A listener that cannot bind: server_new fails and lets go of the pool. */
static void test_new_unwinds(void **state)
{
	struct fx *f = *state;
	struct server *srv = NULL;

	f->t.cfg.nlisten = 1;
	snprintf(f->t.cfg.listen[0], sizeof(f->t.cfg.listen[0]), "tcp://192.0.2.1:7450");
	assert_true(server_new(&f->t.cfg, NULL, 1, &srv) < 0);
	assert_null(srv);
	assert_pool_free(f->t.cfg.pool);
}

/* Start, serve on the unix socket, stop: the socket is gone, the check passed. */
static void test_start_stop(void **state)
{
	struct fx *f = *state;
	int fd;

	listen_unix(f);
	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(access(f->sock, F_OK), 0);	/* bound at new */
	assert_int_equal(server_start(f->t.srv), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(th_call(fd, OP_PING, 7, NULL, 0, &f->r), 0);
	close(fd);
	assert_int_equal(server_stop(f->t.srv), 0);
	assert_int_equal(access(f->sock, F_OK), -1);
	server_destroy(f->t.srv);
	f->t.srv = NULL;
	assert_pool_free(f->t.cfg.pool);
}

/* Destroying a server that still runs stops it first: nothing hangs, nothing stays claimed. */
static void test_destroy_running(void **state)
{
	struct fx *f = *state;
	int fd;

	listen_unix(f);
	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(th_call(fd, OP_PING, 8, NULL, 0, &f->r), 0);
	server_destroy(f->t.srv);
	f->t.srv = NULL;
	assert_int_equal(tc_reply(fd, &f->r, 2000), -ECONNRESET);
	close(fd);
	assert_pool_free(f->t.cfg.pool);
}

/* A reload changes the run-time limits and leaves the rest (the pool) as started. */
static void test_reload(void **state)
{
	struct fx *f = *state;
	struct server *srv;
	struct config nc;

	assert_int_equal(th_new(&f->t, NULL), 0);
	srv = f->t.srv;
	nc = f->t.cfg;
	nc.max_conns = 3;
	nc.max_frame = 1U << 16;
	nc.ack_ms = 7;
	nc.ack_publish_ms = 70;
	nc.grace_ms = 1234;
	nc.verbose = 0;
	nc.handshake_timeout_ms = 700;
	nc.handshake_max = 9;
	nc.handshake_per_source = 2;
	snprintf(nc.pool, sizeof(nc.pool), "shm:elsewhere");
	server_reload(srv, &nc);
	assert_int_equal(atomic_load(&srv->max_conns), 3);
	assert_int_equal(atomic_load(&srv->max_frame), 1U << 16);
	assert_int_equal(atomic_load(&srv->ack_ms), 7);
	assert_int_equal(atomic_load(&srv->ack_publish_ms), 70);
	assert_int_equal(srv->cfg.grace_ms, 1234);
	assert_int_equal(srv->cfg.max_conns, 3);
	assert_int_equal(atomic_load(&srv->hs_timeout_ms), 700);
	assert_int_equal(atomic_load(&srv->hs_max), 9);
	assert_int_equal(atomic_load(&srv->hs_per_source), 2);
	assert_int_equal(srv->cfg.handshake_per_source, 2);
	assert_string_equal(srv->cfg.pool, f->t.cfg.pool);
	assert_int_equal(th_free(&f->t), 0);
}

/*
 * A client whose session ended asks to reclaim it and gets a new one: that
 * session is marked (handlers/handshake.c) so that refusals of what the
 * client still asks of its old versions are logged at debug level only.
 * A fresh HELLO and a reclaim that works are not marked.
 */
static void test_reborn_session_marked(void **state)
{
	static const uint8_t gone[16] = { 0xde, 0xad };
	struct fx *f = *state;
	struct tconn a, b, c;
	uint8_t token[16];

	assert_int_equal(th_new(&f->t, NULL), 0);
	tc_open(&f->t, &a);
	assert_int_equal(tc_hello(&a, NULL, token), 0);
	assert_int_equal(hdl_session_reborn(a.c), 0);
	tc_open(&f->t, &b);
	assert_int_equal(tc_hello(&b, token, NULL), 0);	/* a live session: reclaimed */
	assert_int_equal(hdl_session_reborn(b.c), 0);
	tc_open(&f->t, &c);
	assert_int_equal(tc_hello(&c, gone, NULL), 0);	/* unknown: a new session */
	assert_int_equal(hdl_session_reborn(c.c), 1);
	tc_close(&a);
	tc_close(&b);
	tc_close(&c);
	assert_int_equal(th_free(&f->t), 0);
}

static int group_setup(void **state)
{
	log_init("server_test", 1, 0);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/marud-server-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	return rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_records_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_bad_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_claimed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_unwinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reborn_session_marked, setup, teardown),
	};

	return cmocka_run_group_tests_name("server", tests, group_setup, group_teardown);
}
