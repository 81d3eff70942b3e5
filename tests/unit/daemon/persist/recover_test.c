/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/recover_test.c: recovery at start and the
 * `marud -n` check (daemon/persist/recover.c) over a real file: pool. A
 * new pool starts empty; what was published before a stop is back after
 * the next start, bytes and all; --fresh forgets it; journal off gives no
 * struct persist; persist_check reads the same pool without writing it
 * and says what a start would recover, and what is lost when the journal
 * ends in a torn record.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include <cmocka.h>

#include "alloc.h"
#include "dir.h"
#include "pool.h"
#include "recover.h"

#define ROOT	DIR_ROOT_ID
#define SIZE	(32ull << 20)

struct run {
	struct pool *pl;
	struct alloc *a;
	struct dir *d;
	struct dir_session *s;
	struct persist *p;
};

static char uri[64];

static void no_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		    const struct extent_list *src, uint64_t src_off, uint64_t len)
{
}

/* What server_new does with the pool, the directory and recovery. */
static int start(struct run *r, int journal, int fresh)
{
	struct persist_start_opts o = { .journal = journal, .fresh = fresh };
	struct dir_opts dopt = { .copy = no_copy };
	struct persist_owner own;
	int rc;

	memset(r, 0, sizeof(*r));
	assert_int_equal(pool_open(uri, SIZE, 1, &r->pl), 0);
	assert_int_equal(alloc_new(r->pl->data_off, (r->pl->size - r->pl->data_off) & ~4095ull,
				   4096, 4096, &r->a), 0);
	dopt.alloc = r->a;
	assert_int_equal(dir_new(&dopt, &r->d), 0);
	assert_int_equal(dir_session_new(r->d, &r->s), 0);
	dir_persist_owner(r->d, &own);
	rc = persist_start(r->pl, &own, &o, &r->p);
	if (!rc)
		dir_set_persist(r->d, r->p);
	return rc;
}

static void stop(struct run *r)
{
	dir_session_end(r->d, r->s);
	assert_int_equal(dir_check(r->d), 0);
	dir_destroy(r->d);
	persist_close(r->p);
	alloc_destroy(r->a);
	pool_close(r->pl);
}

static void publish(struct run *r, const char *name, const char *c)
{
	struct extent_list l = { 0 };
	uint64_t len = strlen(c);
	struct dir_attr at;

	assert_int_equal(dir_create_ext(r->d, r->s, ROOT, name, strlen(name), 0, 0, 0644,
					0, 0, len, &at, &l), 0);
	memcpy(r->pl->base + l.v[0].off, c, len);
	alloc_extent_list_free(&l);
	assert_int_equal(dir_publish(r->d, r->s, at.ino, len, XXH3_64bits(c, len), &at, NULL), 0);
	assert_int_equal(dir_release(r->d, r->s, at.ino), 0);
}

static int setup(void **state)
{
	snprintf(uri, sizeof(uri), "file:/tmp/marud-recover-test-%d", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	unlink(uri + 5);
	return 0;
}

static void test_start_stop_start(void **state)
{
	struct dir_attr at;
	struct run r;

	assert_int_equal(start(&r, 1, 0), 0);
	assert_non_null(r.p);
	assert_int_equal(dir_lookup(r.d, r.s, ROOT, "kept", 4, &at), -ENOENT);
	publish(&r, "kept", "warm bytes");
	stop(&r);
	assert_int_equal(start(&r, 1, 0), 0);
	assert_int_equal(dir_lookup(r.d, r.s, ROOT, "kept", 4, &at), 0);
	assert_int_equal(at.size, 10);
	assert_int_equal(at.xxh3, XXH3_64bits("warm bytes", 10));
	stop(&r);
	/* journal off: nothing kept, nothing recorded */
	assert_int_equal(start(&r, 0, 0), 0);
	assert_null(r.p);
	assert_int_equal(dir_lookup(r.d, r.s, ROOT, "kept", 4, &at), -ENOENT);
	stop(&r);
	/* the journal off start wrote nothing: still there */
	assert_int_equal(start(&r, 1, 0), 0);
	assert_int_equal(dir_lookup(r.d, r.s, ROOT, "kept", 4, &at), 0);
	stop(&r);
	/* --fresh forgets it, for good */
	assert_int_equal(start(&r, 1, 1), 0);
	assert_int_equal(dir_lookup(r.d, r.s, ROOT, "kept", 4, &at), -ENOENT);
	stop(&r);
	assert_int_equal(start(&r, 1, 0), 0);
	assert_int_equal(dir_lookup(r.d, r.s, ROOT, "kept", 4, &at), -ENOENT);
	stop(&r);
}

static int check(const struct persist_start_opts *o, char **text)
{
	size_t len;
	FILE *m = open_memstream(text, &len);
	int rc;

	assert_non_null(m);
	rc = persist_check(uri, o, &dir_scratch, m);
	fclose(m);
	return rc;
}

static void test_check_says_what_a_start_recovers(void **state)
{
	struct persist_start_opts o = { .journal = 1 };
	char *text = NULL;
	struct run r;

	assert_int_equal(start(&r, 1, 1), 0);
	publish(&r, "one", "1");
	publish(&r, "two", "22");
	stop(&r);
	assert_int_equal(check(&o, &text), 0);
	assert_non_null(strstr(text, "2 names, 0 directories"));
	assert_non_null(strstr(text, "ends cleanly"));
	free(text);
	o.fresh = 1;
	assert_int_equal(check(&o, &text), 0);
	assert_non_null(strstr(text, "not read"));
	free(text);
	/* a pool that does not exist */
	o.fresh = 0;
	unlink(uri + 5);
	assert_int_equal(check(&o, &text), 0);
	assert_non_null(strstr(text, "a start creates the pool"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start_stop_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_says_what_a_start_recovers, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
