/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/away_test.c: fs/away.c, what a mount answers stat, ls and
 * df with while marud cannot be reached: published files and directories
 * are kept by (parent, name) and found by name or by name and inode; a
 * pending version is never kept; a name only listed is listed but never
 * stat'ed from here, and does not hide what a lookup told of the same
 * version; a forgotten or cleared name is unknown; a listing gives exactly
 * the names kept in that directory; a directory outlives any number of
 * files, which evict the older first; the last statfs is kept; only the
 * errors of an unreachable marud count as away; a table of NULL is empty.
 * Known away: every call asks until a call finds marud unreachable; then
 * a cached answer is not asked for, and of the others one probe at a time
 * goes, only once the probe interval (500 ms) passed; an answer ends it,
 * and so does the stream back, which drops what was kept. A cluster
 * mount's table (away_many_pools) is never known away: after an
 * unreachable pool every call still asks, and what it kept still answers.
 * All real (the table alone, the real clock).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>

#include "away.h"

static struct maru_attr file(uint64_t ino, uint64_t size, uint32_t state)
{
	struct maru_attr a;

	memset(&a, 0, sizeof(a));
	a.ino = ino;
	a.size = size;
	a.mode = S_IFREG | 0644;
	a.state = state;
	return a;
}

static void test_put_get_forget(void **state)
{
	struct maru_attr a = file(10, 64, MARU_STATE_PUBLISHED), got;
	struct maru_attr p = file(11, 5, MARU_STATE_PENDING);
	struct away *aw;

	assert_int_equal(away_new(&aw), 0);
	away_put(aw, 1, "f", &a);
	assert_int_equal(away_get(aw, 1, "f", &got), 0);
	assert_int_equal(got.ino, 10);
	assert_int_equal(got.size, 64);
	assert_int_equal(away_get_ino(aw, 1, "f", 10, &got), 0);
	assert_int_equal(away_get_ino(aw, 1, "f", 12, &got), -ENOENT);	/* another version */
	assert_int_equal(away_get(aw, 2, "f", &got), -ENOENT);
	assert_int_equal(away_get(aw, 1, "g", &got), -ENOENT);
	away_put(aw, 1, "p", &p);	/* a pending version is its writer's */
	assert_int_equal(away_get(aw, 1, "p", &got), -ENOENT);
	away_forget(aw, 1, "f");
	assert_int_equal(away_get(aw, 1, "f", &got), -ENOENT);
	away_put(aw, 1, "f", &a);
	away_clear(aw);
	assert_int_equal(away_get(aw, 1, "f", &got), -ENOENT);
	away_free(aw);
}

static void test_listed(void **state)
{
	struct maru_attr a = file(10, 64, MARU_STATE_PUBLISHED), got;
	struct away *aw;

	assert_int_equal(away_new(&aw), 0);
	away_put_listed(aw, 1, "l", 20, S_IFREG | 0600);
	assert_int_equal(away_get(aw, 1, "l", &got), -ENOENT);	/* no attributes */
	away_put(aw, 1, "f", &a);
	away_put_listed(aw, 1, "f", 10, S_IFREG);	/* the same version: kept whole */
	assert_int_equal(away_get(aw, 1, "f", &got), 0);
	assert_int_equal(got.size, 64);
	away_put_listed(aw, 1, "f", 30, S_IFREG);	/* another: the listing wins */
	assert_int_equal(away_get(aw, 1, "f", &got), -ENOENT);
	away_free(aw);
}

struct seen {
	char names[8][16];
	uint32_t modes[8];
	int n;
};

static int collect(void *arg, const char *name, const struct maru_attr *a)
{
	struct seen *s = arg;

	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
	s->modes[s->n++] = a->mode & S_IFMT;
	return s->n == 8;
}

static void test_list(void **state)
{
	struct maru_attr a = file(10, 64, MARU_STATE_PUBLISHED), d = file(11, 0, MARU_STATE_DIR);
	struct seen s = { .n = 0 };
	struct away *aw;
	int i, found_f = 0, found_d = 0;

	d.mode = S_IFDIR | 0755;
	assert_int_equal(away_new(&aw), 0);
	away_put(aw, 5, "f", &a);
	away_put(aw, 5, "d", &d);
	away_put(aw, 6, "elsewhere", &a);
	away_put_listed(aw, 5, "l", 12, S_IFREG);
	assert_int_equal(away_list(aw, 5, collect, &s), 0);
	assert_int_equal(s.n, 3);
	for (i = 0; i < s.n; i++) {
		found_f |= !strcmp(s.names[i], "f") && s.modes[i] == S_IFREG;
		found_d |= !strcmp(s.names[i], "d") && s.modes[i] == S_IFDIR;
		assert_string_not_equal(s.names[i], "elsewhere");
	}
	assert_true(found_f && found_d);
	s.n = 0;
	assert_int_equal(away_list(aw, 7, collect, &s), 0);
	assert_int_equal(s.n, 0);
	away_free(aw);
}

static void test_statfs_and_errors(void **state)
{
	struct maru_statfs st = { .capacity = 100, .free = 40 }, got;
	struct maru_attr a;
	struct away *aw;

	assert_int_equal(away_new(&aw), 0);
	assert_int_equal(away_get_statfs(aw, &got), -ENOENT);
	away_put_statfs(aw, &st);
	assert_int_equal(away_get_statfs(aw, &got), 0);
	assert_int_equal(got.capacity, 100);
	assert_int_equal(got.free, 40);
	away_free(aw);
	assert_true(away_err(-ETIMEDOUT));
	assert_true(away_err(-ENOTCONN));
	assert_true(away_err(-ECONNREFUSED));
	assert_false(away_err(-ENOENT));
	assert_false(away_err(-EIO));
	assert_false(away_err(0));
	assert_int_equal(away_answer(-ETIMEDOUT, "stat", 0), 0);
	assert_int_equal(away_answer(-ETIMEDOUT, "stat", -ENOENT), -ETIMEDOUT);
	/* NULL: empty */
	away_put(NULL, 1, "f", &a);
	assert_int_equal(away_get(NULL, 1, "f", &a), -ENOENT);
	assert_int_equal(away_get_statfs(NULL, &got), -ENOENT);
}

static void test_dirs_outlive_files(void **state)
{
	struct maru_attr d = file(2, 0, MARU_STATE_DIR), f = file(0, 1, MARU_STATE_PUBLISHED), got;
	struct away *aw;
	char name[32];
	int i, kept = 0;

	d.mode = S_IFDIR | 0755;
	assert_int_equal(away_new(&aw), 0);
	away_put(aw, 1, "dir", &d);
	/* twice as many files as the table holds: the directory stays */
	for (i = 0; i < 8192; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		f.ino = 100 + (uint64_t)i;
		away_put(aw, 2, name, &f);
	}
	assert_int_equal(away_get(aw, 1, "dir", &got), 0);
	assert_int_equal(got.ino, 2);
	/* and most recent files are found */
	for (i = 8192 - 1000; i < 8192; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		kept += away_get(aw, 2, name, &got) == 0;
	}
	assert_true(kept > 500);
	away_free(aw);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void test_known_away(void **state)
{
	struct maru_attr f = file(10, 64, MARU_STATE_PUBLISHED), got;
	struct away *aw;

	(void)state;
	assert_int_equal(away_new(&aw), 0);
	away_put(aw, 1, "f", &f);
	/* not known away: every call asks, cached or not */
	assert_true(away_ask(aw, 0));
	assert_true(away_ask(aw, 1));
	/* errors that tell nothing of marud's presence change nothing */
	away_heard(aw, -EINTR);
	away_heard(aw, -EACCES);
	assert_true(away_ask(aw, 0));
	/* a call found it unreachable: no call asks within the interval */
	away_heard(aw, -ETIMEDOUT);
	assert_false(away_ask(aw, 1));
	assert_false(away_ask(aw, 0));
	sleep_ms(600);
	/* then one probe, and only one while it is out; cached ones never */
	assert_false(away_ask(aw, 1));
	assert_true(away_ask(aw, 0));
	assert_false(away_ask(aw, 0));
	/* the probe failed: wait again */
	away_heard(aw, -ECONNREFUSED);
	assert_false(away_ask(aw, 0));
	sleep_ms(600);
	assert_true(away_ask(aw, 0));
	/* a probe answered with an error that tells nothing (ESTALE of a
	 * new generation) ends too: the next call probes at once, not never */
	away_heard(aw, -ESTALE);
	assert_true(away_ask(aw, 0));
	assert_false(away_ask(aw, 0));
	assert_false(away_ask(aw, 1));
	/* an answer (a missing name is one) ends it */
	away_heard(aw, -ENOENT);
	assert_true(away_ask(aw, 0));
	assert_true(away_ask(aw, 1));
	assert_int_equal(away_get(aw, 1, "f", &got), 0);
	/* away again, then the stream is back: asks, and nothing kept */
	away_heard(aw, -ETIMEDOUT);
	assert_false(away_ask(aw, 0));
	away_back(aw);
	assert_true(away_ask(aw, 0));
	assert_int_equal(away_get(aw, 1, "f", &got), -ENOENT);
	assert_false(away_knows_dir(aw, 1));
	away_put(aw, 1, "f", &f);
	assert_true(away_knows_dir(aw, 1));
	assert_false(away_knows_dir(aw, 2));
	away_free(aw);
	/* a NULL table always asks */
	assert_true(away_ask(NULL, 0));
	away_heard(NULL, -ETIMEDOUT);
	away_back(NULL);
	assert_false(away_knows_dir(NULL, 1));
}

/* a cluster mount: one pool out of reach does not stop the others' calls */
static void test_many_pools(void **state)
{
	struct maru_attr f = file(10, 64, MARU_STATE_PUBLISHED), got;
	struct away *aw;

	(void)state;
	assert_int_equal(away_new(&aw), 0);
	away_many_pools(aw);
	away_put(aw, 1, "f", &f);
	away_heard(aw, -ETIMEDOUT);
	assert_true(away_ask(aw, 0));
	assert_true(away_ask(aw, 1));
	away_heard(aw, -ECONNREFUSED);
	away_heard(aw, -EHOSTUNREACH);
	assert_true(away_ask(aw, 0));
	/* the name of the pool out of reach answers from what was kept */
	assert_int_equal(away_get(aw, 1, "f", &got), 0);
	assert_int_equal(got.ino, 10);
	away_free(aw);
	away_many_pools(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_forget),
		cmocka_unit_test(test_listed),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_statfs_and_errors),
		cmocka_unit_test(test_dirs_outlive_files),
		cmocka_unit_test(test_known_away),
		cmocka_unit_test(test_many_pools),
	};

	return cmocka_run_group_tests_name("fs/away", tests, NULL, NULL);
}
