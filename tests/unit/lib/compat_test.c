/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/compat_test.c: the MARU_0.1 calls of lib/compat.c, which
 * libmaru.so exports as NAME@MARU_0.1 for binaries built before struct
 * maru_attr, maru_pool_info, maru_setattr, maru_statfs and maru_event
 * carried their size: each fills the old layout with what the current call
 * filled (or takes the old setattr), field by field, and never writes past
 * the old, smaller struct; the current calls say the size they filled. Against the fake marud's one-file store.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client_priv.h"
#include "compat.h"
#include "fake_store.h"

struct fx {
	struct fake_marud f;
	struct store s;
	struct maru_client *c;
};

/* An old struct with a canary after it: the old binary's next variable. */
struct attr_box {
	struct maru_attr_v1 a;
	uint8_t canary[64];
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	store_init(&x->s);
	fake_start(&x->f, store_handler, &x->s);
	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = 16;
	x->c = fake_client(&x->f, 2000, 2, NULL, 0);
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

static void assert_same(const struct maru_attr *a, const struct maru_attr_v1 *o)
{
	assert_int_equal(a->attr_size, sizeof(*a));
	assert_int_equal(o->ino, a->ino);
	assert_int_equal(o->parent, a->parent);
	assert_int_equal(o->size, a->size);
	assert_int_equal(o->reserved, a->reserved);
	assert_int_equal(o->mode, a->mode);
	assert_int_equal(o->uid, a->uid);
	assert_int_equal(o->gid, a->gid);
	assert_int_equal(o->nlink, a->nlink);
	assert_int_equal(o->state, a->state);
	assert_int_equal(o->leases, a->leases);
	assert_int_equal(o->xxh3, a->xxh3);
	assert_memory_equal(&o->atime, &a->atime, sizeof(o->atime));
	assert_memory_equal(&o->mtime, &a->mtime, sizeof(o->mtime));
	assert_memory_equal(&o->ctime, &a->ctime, sizeof(o->ctime));
	assert_int_equal(o->rdev, a->rdev);
}

static void assert_canary(const struct attr_box *b)
{
	size_t i;

	for (i = 0; i < sizeof(b->canary); i++)
		assert_int_equal(b->canary[i], 0xc5);
}

static void test_attr_v1(void **state)
{
	struct fx *x = *state;
	struct maru_file *f = NULL;
	struct attr_box box;
	struct maru_attr a;

	/* the old layout is the new one without its first field */
	assert_int_equal(sizeof(struct maru_attr_v1) + offsetof(struct maru_attr, ino),
			 sizeof(struct maru_attr));
	memset(&a, 0xee, sizeof(a));
	assert_int_equal(maru_getattr(x->c, STORE_INO, &a), 0);
	memset(&box, 0xc5, sizeof(box));
	assert_int_equal(maru_getattr_v1(x->c, STORE_INO, &box.a), 0);
	assert_same(&a, &box.a);
	assert_int_equal(box.a.ino, STORE_INO);
	assert_canary(&box);

	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &f), 0);
	memset(&box, 0xc5, sizeof(box));
	assert_int_equal(maru_file_attr_v1(f, &box.a), 0);
	assert_int_equal(maru_file_attr(f, &a), 0);
	assert_same(&a, &box.a);
	assert_canary(&box);
	/* errors pass through and leave the old struct alone */
	assert_int_equal(maru_file_attr_v1(f, NULL), -EINVAL);
	maru_file_close(f);
}

static void test_publish_dir_v1(void **state)
{
	struct fx *x = *state;
	struct maru_file *h = NULL;
	struct attr_box box;
	uint8_t b[8] = { 1 };

	pthread_mutex_lock(&x->s.mu);
	x->s.dir_attr = 1;
	pthread_mutex_unlock(&x->s.mu);
	assert_int_equal(maru_file_create(x->c, 1, "chunk", 0644, 0, 0, 0, 0, &h), 0);
	assert_int_equal(maru_file_pwrite(h, b, sizeof(b), 0), sizeof(b));
	memset(&box, 0xc5, sizeof(box));
	assert_int_equal(maru_file_publish_dir_v1(h, &box.a), 0);
	assert_int_equal(box.a.ino, 1);
	assert_int_equal(box.a.state, MARU_STATE_DIR);
	assert_int_equal(box.a.mtime.tv_sec, 5);
	assert_canary(&box);
	maru_file_close(h);
}

static void test_pool_info_v1(void **state)
{
	struct fx *x = *state;
	struct maru_pool_info pi;
	struct {
		struct maru_pool_info_v1 pi;
		uint8_t canary[64];
	} box;
	size_t i;

	assert_int_equal(sizeof(struct maru_pool_info_v1) +
			 offsetof(struct maru_pool_info, uuid), sizeof(struct maru_pool_info));
	assert_int_equal(maru_client_pool_info(x->c, &pi), 0);
	assert_int_equal(pi.info_size, sizeof(pi));
	memset(&box, 0xc5, sizeof(box));
	assert_int_equal(maru_client_pool_info_v1(x->c, &box.pi), 0);
	assert_memory_equal(box.pi.uuid, pi.uuid, sizeof(pi.uuid));
	assert_int_equal(box.pi.generation, pi.generation);
	assert_int_equal(box.pi.generation, FAKE_GEN);
	assert_int_equal(box.pi.size, pi.size);
	assert_int_equal(box.pi.align, pi.align);
	assert_int_equal(box.pi.data_off, pi.data_off);
	assert_string_equal(box.pi.path, pi.path);
	assert_string_equal(box.pi.uri, pi.uri);
	assert_int_equal(box.pi.data_path, MARU_DATA_TCP);
	assert_int_equal(box.pi.coherence, pi.coherence);
	for (i = 0; i < sizeof(box.canary); i++)
		assert_int_equal(box.canary[i], 0xc5);
	assert_int_equal(maru_client_pool_info_v1(x->c, NULL), -EINVAL);
}

/* marud's STATFS from the fake's default handler. */
static void test_statfs_v1(void **state)
{
	struct fake_marud f;
	struct maru_client *c;
	struct maru_statfs s;
	struct {
		struct maru_statfs_v1 s;
		uint8_t canary[64];
	} box;
	size_t i;

	(void)state;
	fake_start(&f, NULL, NULL);
	c = fake_client(&f, 2000, 2, NULL, 0);
	memset(&s, 0xee, sizeof(s));
	assert_int_equal(maru_statfs(c, &s), 0);
	assert_int_equal(s.statfs_size, sizeof(s));
	memset(&box, 0xc5, sizeof(box));
	assert_int_equal(maru_statfs_v1(c, &box.s), 0);
	assert_int_equal(box.s.capacity, FAKE_CAPACITY);
	assert_int_equal(box.s.capacity, s.capacity);
	assert_int_equal(box.s.free, s.free);
	assert_int_equal(box.s.evictable, s.evictable);
	assert_int_equal(box.s.used, s.used);
	assert_int_equal(box.s.pending, s.pending);
	assert_int_equal(box.s.orphaned, s.orphaned);
	assert_int_equal(box.s.names, s.names);
	assert_int_equal(box.s.dirs, s.dirs);
	assert_int_equal(box.s.block, s.block);
	for (i = 0; i < sizeof(box.canary); i++)
		assert_int_equal(box.canary[i], 0xc5);
	assert_int_equal(maru_statfs_v1(c, NULL), -EINVAL);
	maru_client_free(c);
	fake_stop(&f);
}

/* An old caller's setattr and event, field by field. */
static void test_setattr_event_v1(void **state)
{
	struct maru_setattr_v1 o = { .mask = MARU_SET_MODE | MARU_SET_MTIME, .mode = 0640,
				     .uid = 7, .gid = 8, .atime = { 1, 2 }, .mtime = { 3, 4 } };
	struct maru_event *e = calloc(1, sizeof(*e));
	struct maru_event_v1 *v = malloc(sizeof(*v));
	struct maru_setattr sa;

	(void)state;
	assert_non_null(e);
	assert_non_null(v);
	memset(&sa, 0xee, sizeof(sa));
	compat_setattr_from_v1(&o, &sa);
	assert_int_equal(sa.sa_size, sizeof(sa));
	assert_int_equal(sa.mask, o.mask);
	assert_int_equal(sa.mode, 0640);
	assert_int_equal(sa.uid, 7);
	assert_int_equal(sa.gid, 8);
	assert_int_equal(sa.atime.tv_nsec, 2);
	assert_int_equal(sa.mtime.tv_sec, 3);
	assert_int_equal(maru_setattr_v1(NULL, 1, NULL, NULL), -EINVAL);

	e->event_size = sizeof(*e);
	e->seq = 11;
	e->time_ns = 12;
	e->type = MARU_EV_RENAME;
	e->flags = MARU_EV_F_OWN;
	e->ino = 13;
	e->parent = 14;
	e->parent2 = 15;
	strcpy(e->name, "a");
	strcpy(e->name2, "b");
	strcpy(e->path, "/x/a");
	strcpy(e->path2, "/y/b");
	memset(v, 0xee, sizeof(*v));
	compat_event_to_v1(e, v);
	assert_int_equal(v->seq, 11);
	assert_int_equal(v->time_ns, 12);
	assert_int_equal(v->type, MARU_EV_RENAME);
	assert_int_equal(v->flags, MARU_EV_F_OWN);
	assert_int_equal(v->ino, 13);
	assert_int_equal(v->parent, 14);
	assert_int_equal(v->parent2, 15);
	assert_string_equal(v->name, "a");
	assert_string_equal(v->name2, "b");
	assert_string_equal(v->path, "/x/a");
	assert_string_equal(v->path2, "/y/b");
	assert_int_equal(maru_events_next_v1(NULL, v, 0), -EINVAL);
	free(e);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_attr_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_publish_dir_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_info_v1, setup, teardown),
		cmocka_unit_test(test_statfs_v1),
		cmocka_unit_test(test_setattr_event_v1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
