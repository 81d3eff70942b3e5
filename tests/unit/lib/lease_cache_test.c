/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/lease_cache_test.c: the client's lease cache
 * (lib/lease_cache.c) against the fake marud's one-file store: a kept lease
 * is handed back by its ino with neither a RELEASE nor an OPEN; without
 * opts.lease_cache (and with a MARU_0.1-sized opts) put is a plain close;
 * a pending file, a file over the byte budget (1/32 of the pool) or over
 * MARU_LEASE_CACHE_FILE_MAX, or a lease of an older generation is closed, not kept or handed out; a second
 * lease of one ino replaces the first; drop, clear and expiry close what
 * they take; count follows; client teardown closes what is still kept.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "client_priv.h"
#include "fake_store.h"

struct fx {
	struct fake_marud f;
	struct store s;
	struct maru_client *c;
};

static struct maru_client *client(struct fx *x, size_t opts_size, unsigned int entries,
				  unsigned int ms)
{
	struct maru_client_opts o;
	struct maru_client *c = NULL;
	char uri[160];

	fake_uri(&x->f, uri, sizeof(uri));
	/* what lies past an older caller's opts is never read */
	memset(&o, 0xff, sizeof(o));
	maru_client_opts_init(&o, opts_size);
	o.uri = uri;
	o.data_path = MARU_DATA_TCP;
	o.timeout_ms = 2000;
	o.max_conns = 2;
	if (opts_size == sizeof(o)) {
		o.lease_cache = entries;
		o.lease_cache_ms = ms;
	}
	assert_int_equal(maru_client_new(&o, &c), 0);
	return c;
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	store_init(&x->s);
	fake_start(&x->f, store_handler, &x->s);
	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = 16;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	maru_client_free(x->c);
	fake_stop(&x->f);
	store_free(&x->s);
	free(x);
	return 0;
}

static void assert_calls(struct fx *x, const char *want)
{
	char got[512];

	store_calls(&x->s, got, sizeof(got));
	assert_string_equal(got, want);
}

static struct maru_file *lease(struct fx *x)
{
	struct maru_file *f = NULL;

	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &f), 0);
	return f;
}

static void test_put_take(void **state)
{
	struct fx *x = *state;
	struct maru_file *f, *g = NULL;
	uint8_t b[16];

	x->c = client(x, sizeof(struct maru_client_opts), 8, 60000);
	f = lease(x);
	maru_lease_cache_put(f);
	assert_int_equal(maru_lease_cache_count(x->c), 1);
	assert_calls(x, "O");			/* kept: no RELEASE */
	assert_int_equal(maru_lease_cache_take(x->c, STORE_INO + 1, &g), -ENOENT);
	assert_null(g);
	assert_int_equal(maru_lease_cache_take(x->c, STORE_INO, &g), 0);
	assert_ptr_equal(g, f);			/* the same lease, no OPEN */
	assert_int_equal(maru_lease_cache_count(x->c), 0);
	assert_int_equal(maru_file_pread(g, b, sizeof(b), 0), sizeof(b));
	assert_int_equal(maru_lease_cache_take(x->c, STORE_INO, &g), -ENOENT);
	maru_lease_cache_put(f);
	maru_lease_cache_drop(x->c, STORE_INO);
	assert_int_equal(maru_lease_cache_count(x->c), 0);
	assert_calls(x, "OrL");
	/* a second lease of one ino replaces the first, which is closed */
	maru_lease_cache_put(lease(x));
	maru_lease_cache_put(lease(x));
	assert_int_equal(maru_lease_cache_count(x->c), 1);
	assert_calls(x, "OrLOOL");
	/* what is still kept goes with the client */
	maru_client_free(x->c);
	x->c = NULL;
	assert_calls(x, "OrLOOLL");
}

static void test_off(void **state)
{
	struct fx *x = *state;
	struct maru_file *g = NULL;

	/* a MARU_0.1 caller's opts end before lease_cache: no cache */
	x->c = client(x, offsetof(struct maru_client_opts, lease_cache), 0, 0);
	assert_int_equal(x->c->opts.lease_cache, 0);
	assert_null(x->c->lc);
	maru_lease_cache_put(lease(x));
	assert_calls(x, "OL");
	assert_int_equal(maru_lease_cache_count(x->c), 0);
	assert_int_equal(maru_lease_cache_take(x->c, STORE_INO, &g), -ENOENT);
	maru_lease_cache_drop(x->c, STORE_INO);
	maru_lease_cache_clear(x->c);
	maru_lease_cache_expire(x->c);
	maru_lease_cache_put(NULL);
	assert_int_equal(maru_lease_cache_take(NULL, STORE_INO, &g), -ENOENT);
	assert_int_equal(maru_lease_cache_take(x->c, STORE_INO, NULL), -EINVAL);
	assert_calls(x, "OL");
}

static void test_not_kept(void **state)
{
	struct fx *x = *state;
	struct maru_file *f = NULL;

	x->c = client(x, sizeof(struct maru_client_opts), 8, 60000);
	/* a pending version is abandoned, never kept */
	assert_int_equal(maru_file_create(x->c, 1, "chunk", 0644, 0, 0, 0, 0, &f), 0);
	maru_lease_cache_put(f);
	assert_calls(x, "CA");
	/* over the byte budget: 1/32 of the 1 MiB pool is 32 KiB */
	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = 40 * 1024;
	maru_lease_cache_put(lease(x));
	assert_calls(x, "CAOL");
	assert_int_equal(maru_lease_cache_count(x->c), 0);
}

static void test_file_max(void **state)
{
	struct fx *x = *state;

	/* a pool whose budget is the 64 MiB cap: the file size still bounds */
	x->f.pool_size = 1ull << 40;
	x->c = client(x, sizeof(struct maru_client_opts), 8, 60000);
	x->s.size = x->s.reserved = MARU_LEASE_CACHE_FILE_MAX + 1;
	maru_lease_cache_put(lease(x));
	assert_int_equal(maru_lease_cache_count(x->c), 0);
	x->s.size = x->s.reserved = MARU_LEASE_CACHE_FILE_MAX;
	maru_lease_cache_put(lease(x));
	assert_int_equal(maru_lease_cache_count(x->c), 1);
	assert_calls(x, "OLO");
}

static void test_stale_never_handed_out(void **state)
{
	struct fx *x = *state;
	struct maru_file *g = NULL;

	x->c = client(x, sizeof(struct maru_client_opts), 8, 60000);
	maru_lease_cache_put(lease(x));
	assert_int_equal(maru_lease_cache_count(x->c), 1);
	fake_restart(&x->f);
	/* once the client met the new generation (any call, no round trip
	 * of the cache's own), the kept lease is closed, not handed out */
	if (maru_file_open_ino(x->c, STORE_INO, &g) == 0)
		maru_file_close(g);
	g = NULL;
	assert_int_equal(maru_lease_cache_count(x->c), 1);
	assert_int_equal(maru_lease_cache_take(x->c, STORE_INO, &g), -ENOENT);
	assert_null(g);
	assert_int_equal(maru_lease_cache_count(x->c), 0);
}

static void test_expire_and_clear(void **state)
{
	struct fx *x = *state;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	x->c = client(x, sizeof(struct maru_client_opts), 1, 10);
	maru_lease_cache_put(lease(x));
	assert_int_equal(maru_lease_cache_count(x->c), 1);
	maru_lease_cache_expire(x->c);		/* not yet: kept for 10 ms */
	assert_int_equal(maru_lease_cache_count(x->c), 1);
	nanosleep(&ts, NULL);
	maru_lease_cache_expire(x->c);
	assert_int_equal(maru_lease_cache_count(x->c), 0);
	assert_calls(x, "OL");
	maru_lease_cache_put(lease(x));
	maru_lease_cache_clear(x->c);
	assert_int_equal(maru_lease_cache_count(x->c), 0);
	assert_calls(x, "OLOL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_take, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_never_handed_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expire_and_clear, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
