/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/quotas_test.c: the tenants' quotas handed to the
 * directory (daemon/quotas.c). Real: the directory (the dir tests'
 * fixture, with its malloc fault injection), the tenant table loaded from
 * key file texts, the log (stderr, read back through a pipe). Cases: the
 * live tenants' roots and quotas reach the directory and bind, usage is
 * recounted from what the directory holds and logged one line a tenant, a
 * reload's table replaces the old one, and a failed copy changes nothing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "dir/fixture.h"
#include "keyfile.h"
#include "quotas.h"
#include "tenant.h"

static void load(struct tenants *t, struct dir *d, const char *text)
{
	struct keyfile kf;
	char err[256];

	if (keyfile_parse("t", text, strlen(text), &kf, err, sizeof(err)))
		fail_msg("parse: %s", err);
	assert_int_equal(tenants_apply(t, d, &kf, NULL, NULL), 0);
	keyfile_free(&kf);
}

/* quotas_sync with stderr read back into out. */
static int sync_logged(struct tenants *t, struct dir *d, char *out, size_t cap)
{
	int p[2], saved, rc;
	ssize_t n;

	fflush(stderr);
	assert_int_equal(pipe(p), 0);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	rc = quotas_sync(t, d);
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = read(p[0], out, cap - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = '\0';
	return rc;
}

static uint32_t usages(struct fx *f, struct dir_tenant_usage *u)
{
	return dir_tenant_usages(f->d, u, DIR_TENANTS_MAX);
}

#define AB "marud-keys 1\n" \
	"key a root=/a rights=rw quota=8K secret=aaaaaaaaaaaaaaaa\n" \
	"key b root=/b rights=rw secret=bbbbbbbbbbbbbbbb\n"

/* Roots and quotas reach the directory; usage is what it already held. */
static void test_sync_counts(void **state)
{
	static struct dir_tenant_usage u[DIR_TENANTS_MAX];
	struct tenant *a, *b;
	struct tenants t;
	char log[4096];
	struct fx f;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(tenants_init(&t), 0);
	load(&t, f.d, AB);
	a = tenants_find(&t, "a");
	b = tenants_find(&t, "b");
	assert_int_equal(usages(&f, u), 0);	/* nothing handed over yet */
	/* bytes written before the quotas are known, as after a restart */
	put_sized(&f, f.s1, a->root, "x", BLK);
	assert_int_equal(sync_logged(&t, f.d, log, sizeof(log)), 0);
	assert_int_equal(usages(&f, u), 2);
	assert_string_equal(u[0].name, "a");
	assert_int_equal(u[0].root, a->root);
	assert_int_equal(u[0].quota, 8192);
	assert_int_equal(u[0].used, BLK);
	assert_string_equal(u[1].name, "b");
	assert_int_equal(u[1].root, b->root);
	assert_int_equal(u[1].quota, 0);
	assert_int_equal(u[1].used, 0);
	assert_non_null(strstr(log, "tenant a: quota 8192 bytes, used 4096 + pending 0"));
	assert_non_null(strstr(log, "tenant b: quota 0 bytes (none), used 0 + pending 0"));
	tenants_fini(&t);
	fx_close(&f);
}

/* The quota binds: over it a tenant gives up its own oldest file. */
static void test_quota_binds(void **state)
{
	struct dir_tenant_usage u;
	struct dir_attr at;
	struct tenant *a;
	struct tenants t;
	char log[4096];
	struct fx f;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(tenants_init(&t), 0);
	load(&t, f.d, AB);
	a = tenants_find(&t, "a");
	assert_int_equal(sync_logged(&t, f.d, log, sizeof(log)), 0);
	put_sized(&f, f.s1, a->root, "a1", 2 * BLK);
	put_sized(&f, f.s1, a->root, "a2", 2 * BLK);
	assert_int_equal(lookup(&f, NULL, a->root, "a1", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, a->root, "a2", &at), 0);
	assert_int_equal(dir_tenant_usage_of(f.d, a->root, &u), 0);
	assert_int_equal(u.used, 2 * BLK);
	assert_int_equal(u.evictions, 1);
	tenants_fini(&t);
	fx_close(&f);
}

/* A reload's table replaces the directory's: removed tenants go, quotas change. */
static void test_resync(void **state)
{
	static struct dir_tenant_usage u[DIR_TENANTS_MAX];
	struct tenants t;
	char log[4096];
	struct fx f;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(tenants_init(&t), 0);
	load(&t, f.d, AB);
	assert_int_equal(sync_logged(&t, f.d, log, sizeof(log)), 0);
	load(&t, f.d, "marud-keys 1\n"
	     "key b root=/b rights=rw quota=1M secret=bbbbbbbbbbbbbbbb\n");
	assert_int_equal(sync_logged(&t, f.d, log, sizeof(log)), 0);
	assert_int_equal(usages(&f, u), 1);
	assert_string_equal(u[0].name, "b");
	assert_int_equal(u[0].quota, 1 << 20);
	assert_null(strstr(log, "tenant a:"));
	/* no tenants left: the directory holds none */
	load(&t, f.d, "marud-keys 1\nadmin secret=dddddddddddddddd\n");
	assert_int_equal(sync_logged(&t, f.d, log, sizeof(log)), 0);
	assert_int_equal(usages(&f, u), 0);
	assert_string_equal(log, "");
	tenants_fini(&t);
	fx_close(&f);
}

/* The copy cannot be made: -ENOMEM, the directory's table as it was. */
static void test_nomem_keeps(void **state)
{
	static struct dir_tenant_usage u[DIR_TENANTS_MAX];
	struct tenants t;
	char log[4096];
	struct fx f;
	int rc;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(tenants_init(&t), 0);
	load(&t, f.d, AB);
	assert_int_equal(sync_logged(&t, f.d, log, sizeof(log)), 0);
	load(&t, f.d, "marud-keys 1\n"
	     "key c root=/c rights=rw secret=cccccccccccccccc\n");
	fail_injected = 0;
	fail_countdown = 1;
	rc = quotas_sync(&t, f.d);
	fail_countdown = 0;
	if (fail_injected) {
		assert_int_equal(rc, -ENOMEM);
		assert_int_equal(usages(&f, u), 2);
		assert_string_equal(u[0].name, "a");
		assert_string_equal(u[1].name, "b");
	} else {
		/* a sanitizer's allocator: the fixture cannot fail it */
		print_message("no malloc fault injection in this build: sync ran\n");
		assert_int_equal(rc, 0);
		assert_int_equal(usages(&f, u), 1);
	}
	tenants_fini(&t);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_counts),
		cmocka_unit_test(test_quota_binds),
		cmocka_unit_test(test_resync),
		cmocka_unit_test(test_nomem_keeps),
	};

	return cmocka_run_group_tests_name("quotas", tests, NULL, NULL);
}
