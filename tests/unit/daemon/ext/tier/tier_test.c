// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/ext/tier/tier_test.c: the tier extension's descriptor
 * and hooks (daemon/ext/tier/tier.c), called as marud calls them, over a
 * real pool file: the config (sizes with K/M/G, defaults, every bad item
 * refused); only a file: pool is accepted, and it gets a generation tag
 * that memory_generation() follows (unknown before, changed with the tag);
 * no hint is taken before mapped(); a fresh mapped() drops the file's
 * stale contents; a read hint's ranges are cut at unit boundaries, loaded
 * (read_wait answers every range ready) and held until read_end; promote
 * moves a request to the front; connection_closed ends that connection's
 * read requests only; retire makes units the first to go.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include <cmocka.h>

#include "tfix.h"

extern const struct marud_extension marud_extension;
#define X (&marud_extension)

static struct tfix f;
static void *cur;	/* the open extension, closed by teardown if a test failed */
static int held;	/* the test holds cur's lock */

static void tl(struct tier *t)
{
	pthread_mutex_lock(&t->lock);
	held = 1;
}

static void tu(struct tier *t)
{
	held = 0;
	pthread_mutex_unlock(&t->lock);
}

static void *opened(const char *config)
{
	void *s = NULL;

	assert_int_equal(X->open(config, &s), 0);
	cur = s;
	return s;
}

static void closed(void *s)
{
	cur = NULL;
	X->close(s);
}

static int setup(void **state)
{
	return tf_open(&f);
}

static int teardown(void **state)
{
	if (held)
		tu(cur);
	if (cur)
		closed(cur);
	tf_close(&f);
	return 0;
}

static void test_config(void **state)
{
	static const char *const bad[] = {
		"budget=1M", "budget=4X", "budget=", "workers=0", "workers=17",
		"sweep_ms=0", "sweep_ms=10001", "nope=1", "budget", "budget=4M,,",
	};
	struct tier *t;
	void *s;
	size_t i;

	assert_int_equal(X->abi_version, MARUD_EXTENSION_ABI);
	assert_string_equal(X->name, "tier");
	assert_int_equal(X->open("", &s), 0);
	t = s;
	assert_int_equal(t->budget, 256ull << 20);
	assert_int_equal(t->workers, 2);
	assert_int_equal(t->sweep_ms, 20);
	X->close(s);
	assert_int_equal(X->open("budget=1G,workers=16,sweep_ms=5", &s), 0);
	t = s;
	assert_int_equal(t->budget, 1ull << 30);
	assert_int_equal(t->workers, 16);
	assert_int_equal(t->sweep_ms, 5);
	X->close(s);
	assert_int_equal(X->open("budget=3072k", &s), 0);
	assert_int_equal(((struct tier *)s)->budget, 3072ull << 10);
	X->close(s);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(X->open(bad[i], &s), -EINVAL);
}

static void test_validate_and_generation(void **state)
{
	struct marud_ext_region shm = f.r;
	uint64_t g1, g2;
	char tag[32];
	void *s;

	s = opened("budget=4M,workers=1");
	assert_int_equal(X->memory_generation(s, &g1), -EAGAIN);
	shm.backend = 1;
	assert_int_equal(X->validate_access(s, &shm), -ENOTSUP);
	assert_int_equal(X->validate_access(s, &f.r), 0);
	assert_true(getxattr(f.path, "user.maru.tier.gen", tag, sizeof(tag)) > 0);
	assert_int_equal(X->memory_generation(s, &g1), 0);
	assert_int_equal(X->memory_generation(s, &g2), 0);
	assert_int_equal(g1, g2);
	/* validating again keeps the tag */
	assert_int_equal(X->validate_access(s, &f.r), 0);
	assert_int_equal(X->memory_generation(s, &g2), 0);
	assert_int_equal(g1, g2);
	assert_int_equal(setxattr(f.path, "user.maru.tier.gen", "00000000000000ff", 16, 0), 0);
	assert_int_equal(X->memory_generation(s, &g2), 0);
	assert_int_not_equal(g1, g2);
	closed(s);
}

static void test_fresh_mapping_drops_contents(void **state)
{
	struct marud_ext_range r = { TF_DATA_OFF, 4096 };
	char buf[16];
	void *s;

	assert_int_equal(pwrite(f.fd, "stale", 5, TF_DATA_OFF), 5);
	assert_int_equal(pwrite(f.fd, "super", 5, 0), 5);
	s = opened("budget=8M,workers=1");
	assert_int_equal(X->hint(s, 1, MARUD_EXT_READ, "early", &r, 1), -EAGAIN);
	assert_int_equal(X->validate_access(s, &f.r), 0);
	assert_int_equal(X->mapped(s, &f.r, 1), 0);
	assert_int_equal(pread(f.fd, buf, 5, TF_DATA_OFF), 5);
	assert_memory_equal(buf, "\0\0\0\0\0", 5);
	assert_int_equal(pread(f.fd, buf, 5, 0), 5);
	assert_memory_equal(buf, "super", 5);	/* the superblock area stays */
	assert_int_equal(X->mapped(s, &f.r, 1), 0);	/* once only */
	closed(s);
}

/* Wait until the request id has loaded every piece (lock taken here). */
static int loaded(struct tier *t, const char *id)
{
	struct treq *q;
	int i, done = 0;

	for (i = 0; i < 1000 && !done; i++) {
		tl(t);
		q = tier_req_find(t, 0, id);
		done = q && q->next_piece == q->n && !q->inflight;
		tu(t);
		if (!done)
			usleep(10000);
	}
	return done;
}

static void test_read_hint_lifecycle(void **state)
{
	/* one range across the boundary of units 0 and 1, one in unit 3 */
	struct marud_ext_range r[2] = { { TIER_UNIT - 8192, 16384 }, { 3 * TIER_UNIT, 4096 } };
	struct tier *t;
	struct treq *q;
	void *s;

	s = opened("budget=8M,workers=1,sweep_ms=1000");
	t = s;
	assert_int_equal(X->validate_access(s, &f.r), 0);
	assert_int_equal(X->mapped(s, &f.r, 1), 0);
	assert_int_equal(X->hint(s, 7, MARUD_EXT_READ, "r1", r, 2), 0);
	tl(t);
	q = tier_req_find(t, 7, "r1");
	assert_non_null(q);
	assert_int_equal(q->n, 3);		/* cut at the unit boundary */
	assert_int_equal(q->p[0].len, 8192);
	assert_int_equal(q->p[1].off, TIER_UNIT);
	tu(t);
	assert_int_equal(X->read_wait(s, 7, r, 2, 5000), 2);
	assert_true(loaded(t, "r1"));
	tl(t);
	assert_int_equal(t->u[0].holds, 1);
	assert_int_equal(t->u[1].holds, 1);
	assert_int_equal(t->u[3].holds, 1);
	assert_int_equal(t->u[2].holds, 0);
	tu(t);
	/* another connection's read_end of the id ends nothing */
	assert_int_equal(X->hint(s, 8, MARUD_EXT_READ_END, "r1", NULL, 0), 0);
	assert_int_equal(t->u[0].holds, 1);
	assert_int_equal(X->hint(s, 7, MARUD_EXT_READ_END, "r1", NULL, 0), 0);
	tl(t);
	assert_null(tier_req_find(t, 0, "r1"));
	assert_int_equal(t->u[0].holds + t->u[1].holds + t->u[3].holds, 0);
	tu(t);
	closed(s);
}

static void test_promote_close_retire(void **state)
{
	struct marud_ext_range r = { 2 * TIER_UNIT, 4096 };
	struct tier *t;
	void *s;

	s = opened("budget=8M,workers=1,sweep_ms=1000");
	t = s;
	assert_int_equal(X->validate_access(s, &f.r), 0);
	assert_int_equal(X->mapped(s, &f.r, 0), 0);
	assert_int_equal(X->hint(s, 1, MARUD_EXT_READ, "a", &r, 1), 0);
	assert_int_equal(X->hint(s, 1, MARUD_EXT_READ, "b", &r, 1), 0);
	assert_int_equal(X->hint(s, 2, MARUD_EXT_READ, "c", &r, 1), 0);
	assert_int_equal(X->hint(s, 2, MARUD_EXT_PROMOTE, "c", NULL, 0), 0);
	tl(t);
	assert_string_equal(t->reqs->id, "c");
	assert_string_equal(t->reqs->next->id, "a");
	tu(t);
	assert_true(loaded(t, "a") && loaded(t, "b") && loaded(t, "c"));
	X->connection_closed(s, 1);
	tl(t);
	assert_null(tier_req_find(t, 0, "a"));
	assert_null(tier_req_find(t, 0, "b"));
	assert_non_null(tier_req_find(t, 2, "c"));
	assert_int_equal(t->u[2].holds, 1);
	assert_true(t->u[2].used > 0);
	tu(t);
	X->retire(s, &r);
	assert_int_equal(t->u[2].used, 0);
	closed(s);	/* ends "c" too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test_setup_teardown(test_validate_and_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fresh_mapping_drops_contents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_hint_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_promote_close_retire, setup, teardown),
	};

	return cmocka_run_group_tests_name("tier/tier", tests, NULL, NULL);
}
