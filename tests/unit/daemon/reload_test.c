/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/reload_test.c: SIGHUP's steps (daemon/reload.c) on a
 * real server (server_harness.c) started over a key file written here,
 * without TLS. Real: the server, its live settings, the key file's
 * tenants. Cases: every step applies and none fails; a configuration that
 * failed to load (NULL) keeps the running settings yet the key file is
 * read again; a bad key file keeps the old keys yet the new settings
 * apply; both bad count two failures.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "reload.h"
#include "server_harness.h"
#include "server_priv.h"
#include "tenant.h"

#define ADMIN "admin secret=0123456789abcdef0123\n"
#define KEY_A "key a root=/a rights=rw secret=aaaaaaaaaaaaaaaaaaaa\n"
#define KEY_B "key b root=/b rights=rw secret=bbbbbbbbbbbbbbbbbbbb\n"

struct rfx {
	struct th t;
	char path[64];
};

static struct rfx rstore;	/* static: the teardown closes it after a failure */
static struct rfx *open_r;

static void put_keys(struct rfx *r, const char *text, mode_t mode)
{
	FILE *f = fopen(r->path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(r->path, mode), 0);
}

static struct rfx *rfx_open(void)
{
	uint8_t key[CONFIG_KEY_BYTES];
	struct rfx *r = &rstore;
	int fd;

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "/tmp/marud-keys-XXXXXX");
	fd = mkstemp(r->path);
	assert_true(fd >= 0);
	close(fd);
	put_keys(r, "marud-keys 1\n" ADMIN KEY_A, 0600);
	assert_int_equal(config_load_keys(r->path, key, NULL, stderr), 0);
	th_config(&r->t);
	snprintf(r->t.cfg.key_file, sizeof(r->t.cfg.key_file), "%s", r->path);
	assert_int_equal(th_new(&r->t, key), 0);
	open_r = r;
	return r;
}

static int rfx_teardown(void **state)
{
	(void)state;
	if (open_r) {
		assert_int_equal(th_free(&open_r->t), 0);
		unlink(open_r->path);
		open_r = NULL;
	}
	return 0;
}

/* The running configuration with new live settings. */
static void changed(const struct server *srv, struct config *nc)
{
	*nc = srv->cfg;
	nc->max_conns = 7;
	nc->grace_ms = 1234;
	nc->handshake_timeout_ms = 999;
}

static void test_all_steps(void **state)
{
	struct rfx *r = rfx_open();
	struct server *srv = r->t.srv;
	struct config nc;

	(void)state;
	changed(srv, &nc);
	put_keys(r, "marud-keys 1\n" ADMIN KEY_A KEY_B, 0600);
	assert_int_equal(reload_all(srv, &nc), 0);
	assert_int_equal(srv->cfg.max_conns, 7);
	assert_int_equal(atomic_load(&srv->max_conns), 7);
	assert_int_equal(srv->cfg.grace_ms, 1234);
	assert_int_equal(atomic_load(&srv->hs_timeout_ms), 999);
	assert_non_null(tenants_find(&srv->tenants, "b"));
}

/* The configuration did not load: settings kept, the key file still read. */
static void test_config_failed(void **state)
{
	struct rfx *r = rfx_open();
	struct server *srv = r->t.srv;
	unsigned int before = srv->cfg.max_conns;

	(void)state;
	put_keys(r, "marud-keys 1\n" ADMIN KEY_B, 0600);
	assert_int_equal(reload_all(srv, NULL), 1);
	assert_int_equal(srv->cfg.max_conns, before);
	assert_int_equal(atomic_load(&srv->max_conns), before);
	assert_non_null(tenants_find(&srv->tenants, "b"));
	assert_null(tenants_find(&srv->tenants, "a"));
}

/* A bad key file: old keys kept, the new settings applied all the same. */
static void test_keys_failed(void **state)
{
	struct rfx *r = rfx_open();
	struct server *srv = r->t.srv;
	struct tenant *a = tenants_find(&srv->tenants, "a");
	struct config nc;

	(void)state;
	changed(srv, &nc);
	put_keys(r, "marud-keys 1\n" ADMIN KEY_B, 0644);	/* readable by others */
	assert_int_equal(reload_all(srv, &nc), 1);
	assert_int_equal(srv->cfg.max_conns, 7);
	assert_ptr_equal(tenants_find(&srv->tenants, "a"), a);
	assert_null(tenants_find(&srv->tenants, "b"));
	/* both bad: two failures, nothing changed */
	put_keys(r, "marud-keys 1\nnonsense\n", 0600);
	assert_int_equal(reload_all(srv, NULL), 2);
	assert_ptr_equal(tenants_find(&srv->tenants, "a"), a);
	assert_int_equal(atomic_load(&a->revoked), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_all_steps, rfx_teardown),
		cmocka_unit_test_teardown(test_config_failed, rfx_teardown),
		cmocka_unit_test_teardown(test_keys_failed, rfx_teardown),
	};

	return cmocka_run_group_tests_name("reload", tests, NULL, NULL);
}
