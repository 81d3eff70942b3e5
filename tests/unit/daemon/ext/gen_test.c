/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/ext/gen_test.c: the watch on a region extension's
 * memory generation (daemon/ext/gen.c), on struct ext objects built by
 * hand around a fake extension whose memory_generation() and mapped()
 * the test steers. Two watches run at once with different callbacks,
 * arguments and grace periods: each calls only its own (what it was
 * started with lives in its struct ext, not in the process). Also: a
 * changed generation calls reset once and counts it, an unknown one past
 * the grace period takes the region out of use and calls unknown, one that
 * comes back after that is a reset, a failed mapped() is asked again, and
 * stopping is quiet and idempotent.
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
#include <time.h>

#include <cmocka.h>

#include "ext_priv.h"
#include "log.h"

/* The fake extension's state: what memory_generation() and mapped() say. */
struct fake {
	atomic_uint_fast64_t gen;
	atomic_int gen_fails;		/* memory_generation() returns -EIO */
	atomic_int map_fails;		/* mapped() fails this many more times */
	atomic_int mapped_calls;
};

/* What a watch's callbacks saw: each watch gets one of these as arg. */
struct seen {
	atomic_int resets, unknowns;
	atomic_int other;		/* a callback came with another's arg */
};

static int fake_gen(void *state, uint64_t *gen)
{
	struct fake *f = state;

	if (atomic_load(&f->gen_fails))
		return -EIO;
	*gen = atomic_load(&f->gen);
	return 0;
}

static int fake_mapped(void *state, const struct marud_ext_region *r, int fresh)
{
	struct fake *f = state;

	atomic_fetch_add(&f->mapped_calls, 1);
	if (atomic_load(&f->map_fails) > 0) {
		atomic_fetch_sub(&f->map_fails, 1);
		return -EAGAIN;
	}
	return 0;
}

static const struct marud_extension fake_ext = {
	.abi_version = MARUD_EXTENSION_ABI,
	.size = sizeof(struct marud_extension),
	.name = "fake",
	.mapped = fake_mapped,
	.memory_generation = fake_gen,
};

static struct seen seen_a, seen_b;

static void on_reset_a(void *arg)
{
	struct seen *s = arg;

	atomic_fetch_add(s == &seen_a ? &s->resets : &seen_a.other, 1);
}

static void on_unknown_a(void *arg)
{
	struct seen *s = arg;

	atomic_fetch_add(s == &seen_a ? &s->unknowns : &seen_a.other, 1);
}

static void on_reset_b(void *arg)
{
	struct seen *s = arg;

	atomic_fetch_add(s == &seen_b ? &s->resets : &seen_b.other, 1);
}

static void on_unknown_b(void *arg)
{
	struct seen *s = arg;

	atomic_fetch_add(s == &seen_b ? &s->unknowns : &seen_b.other, 1);
}

static struct ext *ext_fake(struct fake *f, const char *name, uint64_t gen)
{
	struct ext *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	atomic_store(&f->gen, gen);
	e->x = &fake_ext;
	e->state = f;
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->memgen = gen;
	atomic_store(&e->gen_known, 1);
	atomic_store(&e->mapped_ok, 1);
	return e;
}

/* Wait up to 5 s for *v to reach want; 1 when it did. */
static int wait_for(atomic_int *v, int want)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int i;

	for (i = 0; i < 2500; i++) {
		if (atomic_load(v) >= want)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static int reset_seen(void **state)
{
	memset(&seen_a, 0, sizeof(seen_a));
	memset(&seen_b, 0, sizeof(seen_b));
	return 0;
}

/*
 * Two watches at once: A with a long grace, B with a short one. A's
 * generation changes: only A's reset runs, with A's arg. B's generation
 * goes unknown: only B's unknown runs, after B's grace, and only B's
 * region goes out of use. With the watch's arguments in one process-wide
 * variable, the second start would have redirected A's callbacks to B's.
 */
static void test_two_watchers(void **state)
{
	struct fake fa = { 0 }, fb = { 0 };
	struct ext *a = ext_fake(&fa, "a", 0x100), *b = ext_fake(&fb, "b", 0x200);

	assert_int_equal(ext_watch_start(a, 5, 60000, on_reset_a, on_unknown_a, &seen_a), 0);
	assert_int_equal(ext_watch_start(b, 5, 30, on_reset_b, on_unknown_b, &seen_b), 0);

	atomic_store(&fa.gen, 0x101);
	assert_true(wait_for(&seen_a.resets, 1));
	assert_int_equal(atomic_load(&a->st.resets), 1);
	assert_int_equal(atomic_load(&seen_b.resets), 0);
	assert_int_equal(atomic_load(&b->st.resets), 0);

	atomic_store(&fb.gen_fails, 1);
	assert_true(wait_for(&seen_b.unknowns, 1));
	assert_false(ext_region_ok(b));
	assert_true(ext_region_ok(a));
	assert_int_equal(atomic_load(&seen_a.unknowns), 0);

	/* B's generation answers again: it may have been reset unseen. */
	atomic_store(&fb.gen_fails, 0);
	assert_true(wait_for(&seen_b.resets, 1));
	assert_int_equal(atomic_load(&b->st.resets), 1);

	ext_watch_stop(a);
	ext_watch_stop(b);
	assert_int_equal(atomic_load(&seen_a.resets), 1);
	assert_int_equal(atomic_load(&seen_b.unknowns), 1);
	assert_int_equal(atomic_load(&seen_a.other), 0);
	assert_int_equal(atomic_load(&seen_b.other), 0);
	free(a);
	free(b);
}

/* A generation unknown for less than the grace period is not a reset. */
static void test_unknown_within_grace(void **state)
{
	struct fake f = { 0 };
	struct ext *e = ext_fake(&f, "grace", 7);

	assert_int_equal(ext_watch_start(e, 5, 60000, on_reset_a, on_unknown_a, &seen_a), 0);
	atomic_store(&f.gen_fails, 1);
	sleep_ms(60);
	atomic_store(&f.gen_fails, 0);
	sleep_ms(60);
	ext_watch_stop(e);
	assert_int_equal(atomic_load(&seen_a.unknowns), 0);
	assert_int_equal(atomic_load(&seen_a.resets), 0);
	assert_true(ext_region_ok(e));
	free(e);
}

/* A failed mapped() leaves the region out of use until the watch's retry works. */
static void test_remap(void **state)
{
	struct fake f = { 0 };
	struct ext *e = ext_fake(&f, "remap", 9);

	atomic_store(&e->mapped_ok, 0);
	atomic_store(&f.map_fails, 2);
	assert_false(ext_region_ok(e));
	assert_int_equal(ext_watch_start(e, 5, 60000, on_reset_a, on_unknown_a, &seen_a), 0);
	assert_true(wait_for(&f.mapped_calls, 3));
	ext_watch_stop(e);
	assert_true(ext_region_ok(e));
	assert_int_equal(atomic_load(&seen_a.resets), 0);
	free(e);
}

/* Stopping at once calls nothing; a second stop and a NULL are no-ops. */
static void test_stop(void **state)
{
	struct fake f = { 0 };
	struct ext *e = ext_fake(&f, "stop", 1);

	assert_int_equal(ext_watch_start(e, 1000, 60000, on_reset_a, on_unknown_a, &seen_a), 0);
	assert_int_equal(e->watching, 1);
	ext_watch_stop(e);
	assert_int_equal(e->watching, 0);
	ext_watch_stop(e);
	ext_watch_stop(NULL);
	assert_int_equal(atomic_load(&seen_a.resets) + atomic_load(&seen_a.unknowns), 0);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_two_watchers, reset_seen),
		cmocka_unit_test_setup(test_unknown_within_grace, reset_seen),
		cmocka_unit_test_setup(test_remap, reset_seen),
		cmocka_unit_test_setup(test_stop, reset_seen),
	};

	log_init("gen_test", 1, 0);
	return cmocka_run_group_tests_name("ext_gen", tests, NULL, NULL);
}
