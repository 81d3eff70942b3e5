// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/session_test.c: the session table of marud (session.c)
 * over a real allocator and directory on fake pool memory: creation, attach
 * and detach counting, reclaim inside the grace period, expiry (leases
 * released, pending versions abandoned, accounting back to baseline), the
 * reaper thread, the reply cache and unknown tokens.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "dir.h"
#include "proto.h"
#include "session.h"

#define MEM_SIZE	(16U << 20)
#define BLOCK		4096U
#define GRACE_MS	100

struct fixture {
	uint8_t *mem;
	struct alloc *alloc;
	struct dir *dir;
	struct sessions *t;
	struct dir_stats base;
};

/* The copy callback over the fake pool memory (extent offsets index mem). */
static void fake_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		      const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	uint8_t *mem = arg;

	while (len) {
		uint64_t d = 0, s = 0, sn, n = alloc_extent_list_at(dst, dst_off, &d);

		assert_true(n > 0);
		if (src) {
			sn = alloc_extent_list_at(src, src_off, &s);
			assert_true(sn > 0);
			n = n < sn ? n : sn;
		}
		n = n < len ? n : len;
		if (src)
			memmove(mem + d, mem + s, n);
		else
			memset(mem + d, 0, n);
		dst_off += n;
		src_off += n;
		len -= n;
	}
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct dir_opts o = { .eviction = DIR_EVICT_LRU, .copy = fake_copy };

	assert_non_null(f);
	f->mem = calloc(1, MEM_SIZE);
	assert_non_null(f->mem);
	/* The first block stands for the superblock, as in a real pool. */
	assert_int_equal(alloc_new(BLOCK, MEM_SIZE - BLOCK, BLOCK, BLOCK, &f->alloc), 0);
	o.alloc = f->alloc;
	o.copy_arg = f->mem;
	assert_int_equal(dir_new(&o, &f->dir), 0);
	assert_int_equal(sessions_new(f->dir, GRACE_MS, &f->t), 0);
	dir_stats(f->dir, &f->base);
	assert_int_equal(f->base.free, f->base.capacity);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sessions_destroy(f->t);
	assert_int_equal(dir_check(f->dir), 0);
	dir_destroy(f->dir);
	alloc_destroy(f->alloc);
	free(f->mem);
	free(f);
	return 0;
}

static struct session *hello(struct fixture *f, const uint8_t *token, int want_reclaimed)
{
	struct session *s = NULL;
	int reclaimed = -1;

	assert_int_equal(session_hello(f->t, token, &s, &reclaimed), 0);
	assert_non_null(s);
	assert_int_equal(reclaimed, want_reclaimed);
	return s;
}

/* Publish name with len bytes of `fill` from session s; its lease is dropped. */
static uint64_t publish(struct fixture *f, struct session *s, const char *name,
			uint64_t len, uint8_t fill)
{
	struct dir_session *ds = session_dir(s);
	struct extent_list l = { 0 };
	struct dir_attr a;
	uint64_t ino;

	assert_int_equal(dir_create(f->dir, ds, DIR_ROOT_ID, name, strlen(name), 0, 0,
				    0644, 0, 0, len, &a), 0);
	ino = a.ino;
	assert_int_equal(dir_extents(f->dir, ds, ino, 1, &l, &a), 0);
	assert_true(l.n >= 1);
	memset(f->mem + l.v[0].off, fill, len < l.v[0].len ? len : l.v[0].len);
	alloc_extent_list_free(&l);
	assert_int_equal(dir_wrote(f->dir, ds, ino, 0, len, &a), 0);
	assert_int_equal(dir_publish(f->dir, ds, ino, len, 1, &a, NULL), 0);
	assert_int_equal(dir_release(f->dir, ds, ino), 0);
	return ino;
}

static uint64_t pending(struct fixture *f, struct session *s, const char *name, uint64_t len)
{
	struct dir_attr a;

	assert_int_equal(dir_create(f->dir, session_dir(s), DIR_ROOT_ID, name, strlen(name),
				    0, 0, 0644, 0, 0, len, &a), 0);
	assert_int_equal(a.state, DIR_ST_PENDING);
	return a.ino;
}

static uint64_t lease(struct fixture *f, struct session *s, const char *name)
{
	struct dir_attr a;

	assert_int_equal(dir_open(f->dir, session_dir(s), DIR_ROOT_ID, name, strlen(name),
				  0, &a), 0);
	return a.ino;
}

static int holds(struct fixture *f, struct session *s, uint64_t ino, int want_write)
{
	struct extent_list l = { 0 };
	struct dir_attr a;
	int rc = dir_extents(f->dir, session_dir(s), ino, want_write, &l, &a);

	alloc_extent_list_free(&l);
	return rc;
}

static void test_create(void **state)
{
	struct fixture *f = *state;
	static const uint8_t zero[SESSION_TOKEN_BYTES];
	struct dir_stats st;
	struct session *a, *b;

	a = hello(f, NULL, 0);
	b = hello(f, NULL, 0);
	assert_ptr_not_equal(a, b);
	assert_memory_not_equal(session_token(a), zero, SESSION_TOKEN_BYTES);
	assert_memory_not_equal(session_token(a), session_token(b), SESSION_TOKEN_BYTES);
	assert_int_not_equal(dir_session_id(session_dir(a)), dir_session_id(session_dir(b)));
	assert_int_equal(sessions_count(f->t), 2);
	assert_int_equal(session_attached(f->t, a), 1);
	dir_stats(f->dir, &st);
	assert_int_equal(st.sessions, 2);
	/* An all-zero token is "no token", even with RECLAIM. */
	hello(f, zero, 0);
	assert_int_equal(sessions_count(f->t), 3);
}

static void test_attach_detach(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = sessions_now_ms();
	struct session *s, *again;

	s = hello(f, NULL, 0);
	again = hello(f, session_token(s), 1);
	assert_ptr_equal(s, again);
	assert_int_equal(session_attached(f->t, s), 2);
	session_detach_at(f->t, s, t0);
	assert_int_equal(session_attached(f->t, s), 1);
	/* Still attached: never reaped, however late. */
	assert_int_equal(sessions_reap(f->t, t0 + 10 * GRACE_MS), 0);
	session_detach_at(f->t, s, t0);
	assert_int_equal(session_attached(f->t, s), 0);
	assert_int_equal(sessions_reap(f->t, t0 + GRACE_MS - 1), 0);
	assert_int_equal(sessions_count(f->t), 1);
	assert_int_equal(sessions_reap(f->t, t0 + GRACE_MS), 1);
	assert_int_equal(sessions_count(f->t), 0);
}

static void test_reclaim_keeps_state(void **state)
{
	struct fixture *f = *state;
	struct dir_stats before, after;
	uint64_t t0, ino_p, ino_l;
	uint8_t token[SESSION_TOKEN_BYTES];
	struct session *w, *s;

	w = hello(f, NULL, 0);
	publish(f, w, "published", 3 * BLOCK, 0xab);
	s = hello(f, NULL, 0);
	ino_l = lease(f, s, "published");
	ino_p = pending(f, s, "pending", 5 * BLOCK);
	memcpy(token, session_token(s), sizeof(token));
	dir_stats(f->dir, &before);
	assert_int_equal(before.pending, 5 * BLOCK);
	assert_int_equal(before.leases, 1);

	t0 = sessions_now_ms();
	session_detach_at(f->t, s, t0);
	assert_int_equal(sessions_reap(f->t, t0 + GRACE_MS / 2), 0);
	assert_ptr_equal(hello(f, token, 1), s);
	assert_int_equal(session_attached(f->t, s), 1);
	/* The lease and the pending version came back with the session. */
	assert_int_equal(holds(f, s, ino_p, 1), 0);
	assert_int_equal(holds(f, s, ino_l, 0), 0);
	assert_int_equal(holds(f, w, ino_p, 0), -EPERM);
	dir_stats(f->dir, &after);
	assert_int_equal(after.pending, before.pending);
	assert_int_equal(after.leases, before.leases);
	assert_int_equal(after.free, before.free);
	/* Reattached: the old detach time no longer counts. */
	assert_int_equal(sessions_reap(f->t, t0 + 100 * GRACE_MS), 0);
	assert_int_equal(holds(f, s, ino_p, 1), 0);
}

static void test_expiry_releases(void **state)
{
	struct fixture *f = *state;
	uint8_t token[SESSION_TOKEN_BYTES];
	struct session *w, *s, *fresh;
	struct dir_stats st;
	uint64_t t0, ino_l;

	w = hello(f, NULL, 0);
	publish(f, w, "victim", 4 * BLOCK, 0x11);
	s = hello(f, NULL, 0);
	ino_l = lease(f, s, "victim");
	pending(f, s, "half-written", 7 * BLOCK);
	/* Unlinked while leased: its bytes are orphaned until the lease goes. */
	assert_int_equal(dir_unlink(f->dir, session_dir(w), DIR_ROOT_ID, "victim", 6), 0);
	dir_stats(f->dir, &st);
	assert_int_equal(st.orphaned, 4 * BLOCK);
	assert_int_equal(st.pending, 7 * BLOCK);
	assert_int_equal(dir_check(f->dir), 0);

	memcpy(token, session_token(s), sizeof(token));
	t0 = sessions_now_ms();
	session_detach_at(f->t, s, t0);
	assert_int_equal(sessions_reap(f->t, t0 + GRACE_MS), 1);
	assert_int_equal(sessions_count(f->t), 1);

	dir_stats(f->dir, &st);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.orphaned, 0);
	assert_int_equal(st.leases, 0);
	assert_int_equal(st.used, 0);
	assert_int_equal(st.free, f->base.free);
	assert_int_equal(st.free + st.used + st.pending + st.orphaned, st.capacity);
	assert_int_equal(dir_check(f->dir), 0);
	assert_int_equal(holds(f, w, ino_l, 0), -EPERM);

	/* Too late: the token names nothing any more. */
	fresh = hello(f, token, 0);
	assert_memory_not_equal(session_token(fresh), token, sizeof(token));
}

static void test_reaper_thread(void **state)
{
	struct fixture *f = *state;
	struct session *s;
	int i;

	sessions_set_grace(f->t, 50);
	assert_int_equal(sessions_start_reaper(f->t), 0);
	s = hello(f, NULL, 0);
	pending(f, s, "p", BLOCK);
	session_detach(f->t, s);
	for (i = 0; i < 200 && sessions_count(f->t); i++)
		usleep(10 * 1000);
	assert_int_equal(sessions_count(f->t), 0);
	sessions_stop_reaper(f->t);
	assert_int_equal(dir_check(f->dir), 0);
}

static void test_cache_hit_miss(void **state)
{
	struct fixture *f = *state;
	struct cache_reply *r = malloc(sizeof(*r));
	struct session *s = hello(f, NULL, 0);
	uint8_t big[SESSION_CACHE_PAYLOAD + 1];

	assert_non_null(r);
	assert_int_equal(session_cache_begin(s, 0, OP_MKDIR, r), CACHE_BYPASS);
	assert_int_equal(session_cache_begin(s, 1, OP_MKDIR, r), CACHE_MISS);
	session_cache_finish(s, 1, 0, "abc", 3, 0);
	assert_int_equal(session_cache_begin(s, 1, OP_MKDIR, r), CACHE_HIT);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->len, 3);
	assert_int_equal(r->too_large, 0);
	assert_memory_equal(r->payload, "abc", 3);
	/* Same id, another op: a confused client; never served from the cache. */
	assert_int_equal(session_cache_begin(s, 1, OP_UNLINK, r), CACHE_BYPASS);

	assert_int_equal(session_cache_begin(s, 2, OP_UNLINK, r), CACHE_MISS);
	session_cache_finish(s, 2, -ENOENT, NULL, 0, 0);
	assert_int_equal(session_cache_begin(s, 2, OP_UNLINK, r), CACHE_HIT);
	assert_int_equal(r->status, -ENOENT);
	assert_int_equal(r->len, 0);

	memset(big, 7, sizeof(big));
	assert_int_equal(session_cache_begin(s, 3, OP_CREATE, r), CACHE_MISS);
	session_cache_finish(s, 3, 0, big, sizeof(big), 42);
	assert_int_equal(session_cache_begin(s, 3, OP_CREATE, r), CACHE_HIT);
	assert_int_equal(r->too_large, 1);
	assert_int_equal(r->ino, 42);
	assert_int_equal(r->status, 0);
	free(r);
}

/* A request that broke its connection is forgotten: the retry runs again. */
static void test_cache_forget(void **state)
{
	struct fixture *f = *state;
	struct cache_reply *r = malloc(sizeof(*r));
	struct session *s = hello(f, NULL, 0);

	assert_non_null(r);
	assert_int_equal(session_cache_begin(s, 9, OP_WRITE, r), CACHE_MISS);
	session_cache_forget(s, 9);
	assert_int_equal(session_cache_begin(s, 9, OP_WRITE, r), CACHE_MISS);
	session_cache_finish(s, 9, 0, NULL, 0, 0);
	assert_int_equal(session_cache_begin(s, 9, OP_WRITE, r), CACHE_HIT);
	assert_int_equal(r->status, 0);
	/* forgetting a finished reply changes nothing */
	session_cache_forget(s, 9);
	assert_int_equal(session_cache_begin(s, 9, OP_WRITE, r), CACHE_HIT);
	free(r);
}

static void test_cache_eviction(void **state)
{
	struct fixture *f = *state;
	struct cache_reply *r = malloc(sizeof(*r));
	struct session *s = hello(f, NULL, 0);
	uint64_t id;

	assert_non_null(r);
	for (id = 1; id <= SESSION_CACHE_SLOTS + 10; id++) {
		assert_int_equal(session_cache_begin(s, id, OP_WRITE, r), CACHE_MISS);
		session_cache_finish(s, id, 0, &id, sizeof(id), 0);
	}
	/* The oldest ten were evicted; the last SESSION_CACHE_SLOTS remain. */
	for (id = 1; id <= 10; id++) {
		assert_int_equal(session_cache_begin(s, id, OP_WRITE, r), CACHE_MISS);
		session_cache_finish(s, id, 0, NULL, 0, 0);
	}
	id = SESSION_CACHE_SLOTS + 10;
	assert_int_equal(session_cache_begin(s, id, OP_WRITE, r), CACHE_HIT);
	assert_int_equal(r->len, sizeof(id));
	assert_memory_equal(r->payload, &id, sizeof(id));
	free(r);
}

/*
 * A client that streams writes while a PUBLISH reply is lost on its way:
 * the writes evict each other, never the PUBLISH's reply, which its resend
 * still finds; once every slot holds a namespace reply, the oldest goes.
 */
static void test_cache_keeps_namespace(void **state)
{
	struct fixture *f = *state;
	struct cache_reply *r = malloc(sizeof(*r));
	struct session *s = hello(f, NULL, 0);
	uint64_t id;

	assert_non_null(r);
	assert_int_equal(session_cache_begin(s, 1, OP_PUBLISH, r), CACHE_MISS);
	session_cache_finish(s, 1, 0, "pub", 3, 0);
	for (id = 2; id <= 10 * SESSION_CACHE_SLOTS; id++) {
		assert_int_equal(session_cache_begin(s, id, OP_WRITE, r), CACHE_MISS);
		session_cache_finish(s, id, 0, NULL, 0, 0);
	}
	assert_int_equal(session_cache_begin(s, 1, OP_PUBLISH, r), CACHE_HIT);
	assert_memory_equal(r->payload, "pub", 3);
	/* the newest write is there, the oldest are not */
	assert_int_equal(session_cache_begin(s, id - 1, OP_WRITE, r), CACHE_HIT);
	assert_int_equal(session_cache_begin(s, 2, OP_WRITE, r), CACHE_MISS);
	session_cache_finish(s, 2, 0, NULL, 0, 0);
	/* namespace replies alone: they evict each other, oldest first */
	for (id = 20000; id < 20000 + SESSION_CACHE_SLOTS; id++) {
		assert_int_equal(session_cache_begin(s, id, OP_UNLINK, r), CACHE_MISS);
		session_cache_finish(s, id, 0, NULL, 0, 0);
	}
	assert_int_equal(session_cache_begin(s, 1, OP_PUBLISH, r), CACHE_MISS);
	session_cache_finish(s, 1, 0, NULL, 0, 0);
	assert_int_equal(session_cache_begin(s, 20000 + SESSION_CACHE_SLOTS - 1, OP_UNLINK, r),
			 CACHE_HIT);
	free(r);
}

struct waiter {
	struct session *s;
	enum cache_result res;
	int32_t status;
};

/*
 * Slots are reused with the buffer of their last reply: a short reply
 * recorded where a long one was replays its own bytes and length; ids
 * that do not count up (an old id recorded after newer ones) still hit.
 */
static void test_cache_slot_reuse(void **state)
{
	struct fixture *f = *state;
	struct cache_reply *r = malloc(sizeof(*r));
	struct session *s = hello(f, NULL, 0);
	uint8_t longer[200], shorter[5];
	uint64_t id;

	assert_non_null(r);
	memset(longer, 'L', sizeof(longer));
	memset(shorter, 'S', sizeof(shorter));
	for (id = 100; id < 100 + SESSION_CACHE_SLOTS; id++) {
		assert_int_equal(session_cache_begin(s, id, OP_CREATE, r), CACHE_MISS);
		session_cache_finish(s, id, 0, longer, sizeof(longer), id);
	}
	/* every slot once more, a lower id each, a shorter reply in each (a
	 * namespace change too: a bulk op would take the oldest bulk slot) */
	for (id = 1; id <= SESSION_CACHE_SLOTS; id++) {
		assert_int_equal(session_cache_begin(s, id, OP_MKNOD, r), CACHE_MISS);
		session_cache_finish(s, id, 0, shorter, id % 2 ? sizeof(shorter) : 0, id);
	}
	for (id = SESSION_CACHE_SLOTS; id >= 1; id--) {
		assert_int_equal(session_cache_begin(s, id, OP_MKNOD, r), CACHE_HIT);
		assert_int_equal(r->len, id % 2 ? sizeof(shorter) : 0);
		assert_int_equal(r->ino, id);
		if (r->len)
			assert_memory_equal(r->payload, shorter, sizeof(shorter));
	}
	/* the long replies were evicted by them; a new id misses */
	assert_int_equal(session_cache_begin(s, 100, OP_CREATE, r), CACHE_MISS);
	session_cache_finish(s, 100, 0, longer, sizeof(longer), 7);
	assert_int_equal(session_cache_begin(s, 100, OP_CREATE, r), CACHE_HIT);
	assert_int_equal(r->len, sizeof(longer));
	assert_memory_equal(r->payload, longer, sizeof(longer));
	assert_int_equal(session_cache_begin(s, 1000, OP_CREATE, r), CACHE_MISS);
	session_cache_forget(s, 1000);
	free(r);
}

static void *cache_waiter(void *arg)
{
	struct waiter *w = arg;
	struct cache_reply *r = malloc(sizeof(*r));

	w->res = session_cache_begin(w->s, 77, OP_PUBLISH, r);
	w->status = r->status;
	free(r);
	return NULL;
}

/* A retry on another connection waits for the first execution's result. */
static void test_cache_concurrent_retry(void **state)
{
	struct fixture *f = *state;
	struct cache_reply *r = malloc(sizeof(*r));
	struct waiter w = { .s = hello(f, NULL, 0), .res = CACHE_BYPASS };
	pthread_t t;

	assert_non_null(r);
	assert_int_equal(session_cache_begin(w.s, 77, OP_PUBLISH, r), CACHE_MISS);
	assert_int_equal(pthread_create(&t, NULL, cache_waiter, &w), 0);
	usleep(50 * 1000);
	session_cache_finish(w.s, 77, -EISDIR, NULL, 0, 0);
	pthread_join(t, NULL);
	assert_int_equal(w.res, CACHE_HIT);
	assert_int_equal(w.status, -EISDIR);
	free(r);
}

static void test_unknown_token(void **state)
{
	struct fixture *f = *state;
	uint8_t token[SESSION_TOKEN_BYTES];
	struct session *s;
	unsigned int i;

	for (i = 0; i < sizeof(token); i++)
		token[i] = (uint8_t)(0x5a + i);
	s = hello(f, token, 0);
	assert_memory_not_equal(session_token(s), token, sizeof(token));
	assert_int_equal(session_attached(f->t, s), 1);
	assert_ptr_equal(hello(f, session_token(s), 1), s);
	assert_int_equal(sessions_count(f->t), 1);
}

/* Destroying the table ends attached sessions too (daemon shutdown). */
static void test_destroy_ends_all(void **state)
{
	struct fixture *f = *state;
	struct session *s = hello(f, NULL, 0);
	struct dir_stats st;

	publish(f, s, "kept", BLOCK, 1);
	lease(f, s, "kept");
	pending(f, s, "dropped", 2 * BLOCK);
	sessions_destroy(f->t);
	f->t = NULL;
	dir_stats(f->dir, &st);
	assert_int_equal(st.sessions, 0);
	assert_int_equal(st.leases, 0);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.used, BLOCK);
	assert_int_equal(st.free + st.used, st.capacity);
	assert_int_equal(sessions_new(f->dir, GRACE_MS, &f->t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_detach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reclaim_keeps_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry_releases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reaper_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_hit_miss, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_eviction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_keeps_namespace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_slot_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_concurrent_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_ends_all, setup, teardown),
	};

	return cmocka_run_group_tests_name("session", tests, NULL, NULL);
}
