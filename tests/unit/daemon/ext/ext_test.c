// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/ext/ext_test.c: the loaded region extension
 * (daemon/ext/ext.c) driven directly, with the probe extension of
 * tests/ext/ recording each hook and a shm pool of its own: a missing file,
 * a library without the descriptor, and an open() that fails are load
 * errors; a name is looked up in $MARUD_EXTENSION_DIR; the region is out
 * of use (no actions advertised) until attached, a first attach is fresh
 * and records the memory generation in the pool, a second with the same
 * generation is not, another generation is again; a failed mapped() keeps
 * the region out of use until a remap succeeds; hints and waits reach the
 * hooks only for advertised actions and are counted, a failing hint is
 * counted and returned; retire skips empty ranges; connection_closed is
 * heard only for a session that hinted; with no extension every call is
 * a harmless no.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ext_priv.h"
#include "pool.h"

struct fx {
	struct pool *pool;
	char shm[64], log[128], gen[128], cfg[512];
	struct ext *e;
};

static struct fx fx;

static int setup(void **state)
{
	char uri[96];

	memset(&fx, 0, sizeof(fx));
	snprintf(fx.shm, sizeof(fx.shm), "marud-ext-ut-%ld", (long)getpid());
	snprintf(uri, sizeof(uri), "shm:%s", fx.shm);
	snprintf(fx.log, sizeof(fx.log), "/tmp/maru-ext-ut-%ld.log", (long)getpid());
	snprintf(fx.gen, sizeof(fx.gen), "/tmp/maru-ext-ut-%ld.gen", (long)getpid());
	unlink(fx.log);
	unlink(fx.gen);
	return pool_open(uri, (2ULL << 20) + 64 * 4096, 1, &fx.pool);
}

static int teardown(void **state)
{
	char path[96];

	ext_unload(fx.e);
	pool_close(fx.pool);
	snprintf(path, sizeof(path), "/dev/shm/%s", fx.shm);
	unlink(path);
	unlink(fx.log);
	unlink(fx.gen);
	return 0;
}

/* Load the probe with log= and extra config; its result. */
static int load(const char *extra)
{
	ext_unload(fx.e);
	fx.e = NULL;
	snprintf(fx.cfg, sizeof(fx.cfg), "log=%s,actions=7e%s%s", fx.log, extra[0] ? "," : "",
		 extra);
	return ext_load(PROBE_EXT, fx.cfg, &fx.e);
}

/* How many lines of the probe's log start with prefix. */
static int lines(const char *prefix)
{
	char line[512];
	FILE *f = fopen(fx.log, "r");
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, prefix, strlen(prefix)) == 0;
	fclose(f);
	return n;
}

static void test_load_errors(void **state)
{
	char dir[PATH_MAX], *slash;
	struct ext *e = NULL;

	assert_int_equal(ext_load("/nonexistent/none.so", "", &e), -ENOENT);
	assert_int_equal(ext_load(LIBMARU_SO, "", &e), -ENOENT);	/* no descriptor */
	assert_int_equal(ext_load(PROBE_EXT, "nonsense", &e), -EINVAL);	/* open() */
	assert_null(e);
	/* a bare name: NAME.so in $MARUD_EXTENSION_DIR */
	snprintf(dir, sizeof(dir), "%s", PROBE_EXT);
	slash = strrchr(dir, '/');
	assert_non_null(slash);
	*slash = '\0';
	setenv("MARUD_EXTENSION_DIR", dir, 1);
	assert_int_equal(ext_load("probe_ext", "actions=7e", &e), 0);
	assert_string_equal(ext_name(e), "probe");
	ext_unload(e);
	assert_int_equal(ext_load("no_such_ext", "", &e), -ENOENT);
	unsetenv("MARUD_EXTENSION_DIR");
}

static void test_attach_and_generation(void **state)
{
	char gen[160];
	int fresh = -1;

	assert_int_equal(load(""), 0);
	assert_int_equal(ext_region_ok(fx.e), 0);
	assert_int_equal(ext_actions(fx.e), 0);	/* out of use: nothing advertised */
	assert_int_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	assert_int_equal(fresh, 1);		/* the pool recorded no generation */
	assert_int_equal(ext_region_ok(fx.e), 1);
	assert_int_equal(ext_actions(fx.e), 0x7e);
	assert_int_equal(lines("validate 1"), 1);	/* shm */
	assert_int_equal(lines("mapped 1 0"), 1);
	/* the same memory generation again: not fresh */
	assert_int_equal(load(""), 0);
	assert_int_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	assert_int_equal(fresh, 0);
	assert_int_equal(lines("mapped 0 0"), 1);
	/* another generation: fresh again; an unknown one refuses to attach */
	snprintf(gen, sizeof(gen), "gen=%s", fx.gen);
	assert_int_equal(load(gen), 0);
	assert_int_not_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	{
		FILE *f = fopen(fx.gen, "w");

		assert_non_null(f);
		fprintf(f, "5\n");
		fclose(f);
	}
	assert_int_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	assert_int_equal(fresh, 1);
	assert_int_equal(lines("mapped 1 0"), 2);
}

static void test_mapped_failure(void **state)
{
	int fresh;

	assert_int_equal(load("fail_mapped=1"), 0);
	assert_int_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	assert_int_equal(ext_region_ok(fx.e), 0);
	assert_int_equal(ext_actions(fx.e), 0);
	assert_int_equal(lines("mapped 1 -5"), 1);
	ext_remap(fx.e);
	assert_int_equal(ext_region_ok(fx.e), 1);
	assert_int_equal(lines("mapped 0 0"), 1);
	ext_remap(fx.e);			/* mapped already: not called again */
	assert_int_equal(lines("mapped"), 2);
}

static void test_hints_and_waits(void **state)
{
	struct marud_ext_range r[3] = { { 8192, 4096 }, { 16384, 100 }, { 20480, 1 } };
	struct ext_stats *st;
	int fresh;

	assert_int_equal(load("actions=2"), 0);	/* read only */
	assert_int_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	st = ext_stats(fx.e);
	assert_int_equal(ext_hint(fx.e, 9, MARUD_EXT_READ, "q", r, 2), 0);
	assert_int_equal(lines("hint 9 1 q 2 8192+4096 16384+100"), 1);
	assert_int_equal(ext_hint(fx.e, 9, MARUD_EXT_WRITE, "", r, 1), -EOPNOTSUPP);
	assert_int_equal(ext_wait(fx.e, 9, MARUD_EXT_READ_WAIT, r, 3, 10), -EOPNOTSUPP);
	assert_int_equal(lines("hint"), 1);
	assert_int_equal(lines("wait"), 0);
	assert_int_equal(atomic_load(&st->hints), 1);
	/* every action, and a hint that fails */
	assert_int_equal(load("fail_hint=1"), 0);
	assert_int_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	st = ext_stats(fx.e);
	assert_int_equal(ext_wait(fx.e, 4, MARUD_EXT_READ_WAIT, r, 3, 10), 3);
	assert_int_equal(ext_wait(fx.e, 4, MARUD_EXT_WRITE_WAIT, r, 1, 20), 1);
	assert_int_equal(lines("wait 4 3 10"), 1);
	assert_int_equal(atomic_load(&st->waits), 2);
	assert_int_equal(ext_hint(fx.e, 4, MARUD_EXT_PROMOTE, "q", NULL, 0), -EIO);
	assert_int_equal(atomic_load(&st->failed), 1);
	assert_int_equal(atomic_load(&st->hints), 1);
}

static void test_retire_and_session_end(void **state)
{
	struct hint_sessions *t;
	int fresh;

	assert_int_equal(load(""), 0);
	assert_int_equal(ext_attach(fx.e, fx.pool, 0, &fresh), 0);
	ext_retire(fx.e, 65536, 0);
	ext_retire(fx.e, 65536, 8192);
	assert_int_equal(lines("retire"), 1);
	assert_int_equal(lines("retire 65536+8192"), 1);
	assert_int_equal(atomic_load(&ext_stats(fx.e)->retired), 1);
	ext_session_end(fx.e, 77);		/* never hinted: not heard */
	assert_int_equal(lines("closed"), 0);
	t = ext_hint_sessions(fx.e);
	assert_non_null(t);
	assert_int_equal(ext_open_session_track(t, 77, 1, "r"), 0);
	ext_session_end(fx.e, 77);
	assert_int_equal(lines("closed 77"), 1);
	assert_int_equal(ext_open_session_count(t, 77), 0);
	ext_session_end(fx.e, 77);
	assert_int_equal(lines("closed"), 1);
}

static void test_no_extension(void **state)
{
	struct marud_ext_range r = { 0, 1 };

	assert_int_equal(ext_region_ok(NULL), 1);
	assert_int_equal(ext_actions(NULL), 0);
	assert_string_equal(ext_name(NULL), "");
	assert_int_equal(ext_hint(NULL, 1, MARUD_EXT_READ, "x", &r, 1), -EOPNOTSUPP);
	assert_int_equal(ext_wait(NULL, 1, MARUD_EXT_READ_WAIT, &r, 1, 1), -EOPNOTSUPP);
	assert_null(ext_hint_sessions(NULL));
	ext_retire(NULL, 0, 4096);
	ext_session_end(NULL, 1);
	ext_unload(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_and_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapped_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hints_and_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retire_and_session_end, setup, teardown),
		cmocka_unit_test(test_no_extension),
	};

	return cmocka_run_group_tests_name("ext/ext", tests, NULL, NULL);
}
