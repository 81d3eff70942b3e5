/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/keys_test.c: the key file in a running marud
 * (daemon/keys.c). Real: a server (server_harness.c) started over a key
 * file written here, its tenant table and directory, connections on
 * socketpairs, the log (stderr, read back through a pipe). Faked: which key
 * a connection proved (conn->tenant, conn->authed are set as AUTH would).
 * Cases: keys loaded at start with their roots and quotas, a reload that
 * revokes a key closes its connections and no others, a changed
 * administrator key closes the administrator's, a bad file (parse error,
 * bad mode, a root that is a file) changes nothing and says why in one
 * line, every allocation of a reload failing in turn never leaves a
 * revoked key's connection open, no key file is a no-op.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dir.h"
#include "dir/fixture.h"
#include "keyfile.h"
#include "keys.h"
#include "server_harness.h"
#include "server_priv.h"
#include "tenant.h"

#define ADMIN1 "admin secret=0123456789abcdef0123\n"
#define ADMIN2 "admin secret=fedcba9876543210fedc\n"
#define KEY_A "key a root=/a rights=rw quota=1M secret=aaaaaaaaaaaaaaaaaaaa\n"
#define KEY_B "key b root=/b rights=ro secret=bbbbbbbbbbbbbbbbbbbb\n"

struct kfx {
	struct th t;
	char path[64];
};

static struct kfx kstore;	/* static: the teardown closes it after a failure */
static struct kfx *open_k;

static void put_keys(struct kfx *k, const char *text, mode_t mode)
{
	FILE *f = fopen(k->path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(k->path, mode), 0);
}

/* A server started over a key file holding text. */
static struct kfx *kfx_open(const char *text)
{
	uint8_t key[CONFIG_KEY_BYTES];
	struct kfx *k = &kstore;
	int fd;

	memset(k, 0, sizeof(*k));
	snprintf(k->path, sizeof(k->path), "/tmp/marud-keys-XXXXXX");
	fd = mkstemp(k->path);
	assert_true(fd >= 0);
	close(fd);
	put_keys(k, text, 0600);
	assert_int_equal(config_load_keys(k->path, key, NULL, stderr), 0);
	th_config(&k->t);
	snprintf(k->t.cfg.key_file, sizeof(k->t.cfg.key_file), "%s", k->path);
	assert_int_equal(th_new(&k->t, key), 0);
	open_k = k;
	return k;
}

/* Off the server's list (only this test's connections are on it). */
static void unlist_all(struct server *srv)
{
	pthread_mutex_lock(&srv->conns_lock);
	srv->conns = NULL;
	pthread_mutex_unlock(&srv->conns_lock);
}

static void kfx_close(struct kfx *k)
{
	open_k = NULL;
	unlist_all(k->t.srv);
	assert_int_equal(th_free(&k->t), 0);
	unlink(k->path);
}

static int kfx_teardown(void **state)
{
	(void)state;
	if (open_k)
		kfx_close(open_k);
	return 0;
}

/* A connection on a socketpair, listed as an accepted one is. */
static void conn_open(struct kfx *k, struct tconn *tc)
{
	struct server *srv = k->t.srv;

	tc_open(&k->t, tc);
	pthread_mutex_lock(&srv->conns_lock);
	tc->c->prev = NULL;
	tc->c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = tc->c;
	srv->conns = tc->c;
	pthread_mutex_unlock(&srv->conns_lock);
}

/* keys_load with stderr read back into out. */
static int load_logged(struct server *srv, int reload, char *out, size_t cap)
{
	int p[2], saved, rc;
	ssize_t n;

	fflush(stderr);
	assert_int_equal(pipe(p), 0);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	rc = keys_load(srv, reload);
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = read(p[0], out, cap - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = '\0';
	return rc;
}

/* 1 when marud's end was shut down (the client reads EOF), 0 when still open. */
static int closed(struct tconn *tc)
{
	char b;
	ssize_t n = recv(tc->fd, &b, 1, MSG_DONTWAIT);

	if (n < 0)
		assert_int_equal(errno, EAGAIN);
	return n == 0;
}

static void test_start_loads(void **state)
{
	struct dir_tenant_usage u[4];
	struct tenant *a, *b;
	struct dir_attr at;
	struct server *srv;
	struct kfx *k;

	(void)state;
	k = kfx_open("marud-keys 1\n" ADMIN1 KEY_A KEY_B);
	srv = k->t.srv;
	assert_int_equal(tenants_count(&srv->tenants), 2);
	assert_int_equal(srv->tenants.have_admin, 1);
	a = tenants_find(&srv->tenants, "a");
	b = tenants_find(&srv->tenants, "b");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(tenant_ro(b));
	/* the roots were made in the server's namespace */
	assert_int_equal(dir_lookup(srv->dir, NULL, DIR_ROOT_ID, "a", 1, &at), 0);
	assert_int_equal(at.ino, a->root);
	/* the quotas reached the directory (quotas.c) */
	assert_int_equal(dir_tenant_usages(srv->dir, u, 4), 2);
	assert_int_equal(u[0].quota, 1 << 20);
	kfx_close(k);
}

/* A removed key: its record revoked, its connections closed, no others. */
static void test_reload_revokes(void **state)
{
	struct tconn ca, cb, cadmin, copen;
	struct tenant *a, *b;
	struct server *srv;
	char log[4096];
	struct kfx *k;

	(void)state;
	k = kfx_open("marud-keys 1\n" ADMIN1 KEY_A KEY_B);
	srv = k->t.srv;
	a = tenants_find(&srv->tenants, "a");
	b = tenants_find(&srv->tenants, "b");
	conn_open(k, &ca);
	conn_open(k, &cb);
	conn_open(k, &cadmin);
	conn_open(k, &copen);
	ca.c->authed = cb.c->authed = cadmin.c->authed = 1;
	ca.c->tenant = a;
	cb.c->tenant = b;
	/* b's rights change, a goes: only a's connection is closed */
	put_keys(k, "marud-keys 1\n" ADMIN1
		 "key b root=/b rights=rw secret=bbbbbbbbbbbbbbbbbbbb\n", 0600);
	assert_int_equal(load_logged(srv, 1, log, sizeof(log)), 0);
	assert_int_equal(atomic_load(&a->revoked), 1);
	assert_int_equal(atomic_load(&b->revoked), 0);
	assert_ptr_equal(tenants_find(&srv->tenants, "b"), b);
	assert_false(tenant_ro(b));
	assert_null(tenants_find(&srv->tenants, "a"));
	assert_true(closed(&ca));
	assert_false(closed(&cb));
	assert_false(closed(&cadmin));
	assert_false(closed(&copen));
	assert_non_null(strstr(log, "key 'a' was removed from the key file: closing"));
	assert_non_null(strstr(log, "1 key removed or changed, 1 connection closed"));
	assert_non_null(strstr(log, "an administrator key, 1 scoped key"));
	unlist_all(srv);
	tc_close(&ca);
	tc_close(&cb);
	tc_close(&cadmin);
	tc_close(&copen);
	kfx_close(k);
}

/* A new administrator secret closes the administrator's connections. */
static void test_admin_changed(void **state)
{
	uint8_t before[CONFIG_KEY_BYTES];
	struct tconn cadmin, ca, cnone;
	struct server *srv;
	char log[4096];
	struct kfx *k;

	(void)state;
	k = kfx_open("marud-keys 1\n" ADMIN1 KEY_A);
	srv = k->t.srv;
	conn_open(k, &cadmin);
	conn_open(k, &ca);
	conn_open(k, &cnone);
	cadmin.c->authed = ca.c->authed = 1;
	ca.c->tenant = tenants_find(&srv->tenants, "a");
	memcpy(before, srv->key, sizeof(before));
	/* the same file again: nothing closed, the key as it was */
	assert_int_equal(load_logged(srv, 1, log, sizeof(log)), 0);
	assert_false(closed(&cadmin));
	assert_null(strstr(log, "closed"));
	put_keys(k, "marud-keys 1\n" ADMIN2 KEY_A, 0600);
	assert_int_equal(load_logged(srv, 1, log, sizeof(log)), 0);
	assert_memory_not_equal(srv->key, before, sizeof(before));
	assert_true(closed(&cadmin));
	assert_false(closed(&ca));	/* a's key did not change */
	assert_false(closed(&cnone));	/* not authenticated: proved no key */
	assert_non_null(strstr(log, "the administrator key changed: closing"));
	assert_non_null(strstr(log, "1 key removed or changed, 1 connection closed"));
	unlist_all(srv);
	tc_close(&cadmin);
	tc_close(&ca);
	tc_close(&cnone);
	kfx_close(k);
}

/* Any bad file: -errno, one line saying why, nothing changed. */
static void test_bad_file_keeps(void **state)
{
	uint8_t before[CONFIG_KEY_BYTES];
	struct tenant *a;
	struct server *srv;
	struct tconn ca;
	char log[4096];
	struct kfx *k;

	(void)state;
	k = kfx_open("marud-keys 1\n" ADMIN1 KEY_A);
	srv = k->t.srv;
	a = tenants_find(&srv->tenants, "a");
	conn_open(k, &ca);
	ca.c->authed = 1;
	ca.c->tenant = a;
	memcpy(before, srv->key, sizeof(before));
	/* a parse error: FILE:LINE in the line */
	put_keys(k, "marud-keys 1\n" ADMIN2 "key b root=/b rights=maybe secret=x\n", 0600);
	assert_true(load_logged(srv, 1, log, sizeof(log)) < 0);
	assert_non_null(strstr(log, "key file reload failed, keeping the old keys: "));
	assert_non_null(strstr(log, k->path));
	assert_non_null(strstr(log, ":3:"));
	/* readable by others */
	put_keys(k, "marud-keys 1\n" ADMIN2, 0644);
	assert_true(load_logged(srv, 1, log, sizeof(log)) < 0);
	assert_non_null(strstr(log, "keeping the old keys"));
	/* a root that is a file */
	{
		struct dir_session *s;
		struct dir_attr at;

		assert_int_equal(dir_session_new(srv->dir, &s), 0);
		assert_int_equal(dir_create(srv->dir, s, DIR_ROOT_ID, "file", 4, 0, 0, 0644,
					    0, 0, 0, &at), 0);
		assert_int_equal(dir_publish(srv->dir, s, at.ino, 0, 0, NULL, NULL), 0);
		dir_session_end(srv->dir, s);
	}
	put_keys(k, "marud-keys 1\n" ADMIN2
		 "key c root=/file rights=rw secret=cccccccccccccccccccc\n", 0600);
	assert_int_equal(load_logged(srv, 1, log, sizeof(log)), -ENOTDIR);
	assert_non_null(strstr(log, "keeping the old keys"));
	/* after all three: the same keys, nothing closed */
	assert_memory_equal(srv->key, before, sizeof(before));
	assert_ptr_equal(tenants_find(&srv->tenants, "a"), a);
	assert_int_equal(atomic_load(&a->revoked), 0);
	assert_null(tenants_find(&srv->tenants, "c"));
	assert_false(closed(&ca));
	/* at start the line says marud does not start */
	put_keys(k, "marud-keys 1\nbogus\n", 0600);
	assert_true(load_logged(srv, 0, log, sizeof(log)) < 0);
	assert_non_null(strstr(log, "cannot start: "));
	unlist_all(srv);
	tc_close(&ca);
	kfx_close(k);
}

/*
 * Every allocation of a reload failing in turn: whatever the result, a key
 * that ended up revoked has its connections closed (and one that did not,
 * none). Without fault injection (sanitizers) only the last round runs.
 */
static void test_nomem_sweep(void **state)
{
	struct tenant *a;
	struct server *srv;
	struct kfx *k;
	struct tconn ca;
	unsigned long n;
	char log[4096];
	int rc, done = 0;

	(void)state;
	k = kfx_open("marud-keys 1\n" ADMIN1 KEY_A KEY_B);
	srv = k->t.srv;
	for (n = 1; !done && n < 10000; n++) {
		a = tenants_find(&srv->tenants, "a");
		assert_non_null(a);
		conn_open(k, &ca);
		ca.c->authed = 1;
		ca.c->tenant = a;
		put_keys(k, "marud-keys 1\n" ADMIN1 KEY_B, 0600);
		fail_injected = 0;
		fail_countdown = n;
		rc = load_logged(srv, 1, log, sizeof(log));
		fail_countdown = 0;
		done = !fail_injected;
		if (done)
			assert_int_equal(rc, 0);
		if (atomic_load(&a->revoked)) {
			if (!closed(&ca))
				fail_msg("allocation %lu failed (%d): a revoked, its "
					 "connection open: %s", n, rc, log);
			/* the keys changed: the log must not say they did not */
			assert_null(strstr(log, "keeping the old keys"));
		} else {
			assert_false(closed(&ca));
		}
		unlist_all(srv);
		tc_close(&ca);
		/* back to a and b for the next round */
		put_keys(k, "marud-keys 1\n" ADMIN1 KEY_A KEY_B, 0600);
		assert_int_equal(load_logged(srv, 1, log, sizeof(log)), 0);
	}
	assert_true(done);
	print_message("%lu allocations failed in turn\n", n - 2);
	kfx_close(k);
}

/* No key file (or no key): nothing to read, nothing changes. */
static void test_no_key_file(void **state)
{
	struct th t;
	char log[4096];

	(void)state;
	th_config(&t);
	assert_int_equal(th_new(&t, NULL), 0);
	assert_int_equal(load_logged(t.srv, 1, log, sizeof(log)), 0);
	assert_string_equal(log, "");
	assert_int_equal(tenants_count(&t.srv->tenants), 0);
	assert_int_equal(th_free(&t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_start_loads, kfx_teardown),
		cmocka_unit_test_teardown(test_reload_revokes, kfx_teardown),
		cmocka_unit_test_teardown(test_admin_changed, kfx_teardown),
		cmocka_unit_test_teardown(test_bad_file_keeps, kfx_teardown),
		cmocka_unit_test_teardown(test_nomem_sweep, kfx_teardown),
		cmocka_unit_test(test_no_key_file),
	};

	return cmocka_run_group_tests_name("keys", tests, NULL, NULL);
}
