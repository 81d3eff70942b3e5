/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/quota_test.c: tenant quotas (daemon/dir/quota.c and
 * the eviction order of lru.c) over the shared fixture: per-tenant
 * accounting of published and pending bytes, a reservation over the quota
 * evicting the tenant's own least recently used files (never another's),
 * ENOSPC when nothing of its own is evictable, the pool-pressure order
 * (over-quota tenants, files under no tenant, then the writer's own), the
 * charges following a rename across tenant roots, and usage recomputed
 * when the tenant set is given after the files exist (as after recovery).
 * fx_close() runs dir_check(), which recounts every tenant's bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "fixture.h"

struct qfx {
	struct fx f;
	uint64_t a, b;		/* tenant roots /a and /b */
};

static void set2(struct qfx *q, uint64_t qa, uint64_t qb)
{
	const struct dir_tenant t[] = {
		{ "alpha", q->a, qa },
		{ "beta", q->b, qb },
	};

	assert_int_equal(dir_set_tenants(q->f.d, t, 2), 0);
}

static void open2(struct qfx *q, uint64_t blocks, uint64_t qa, uint64_t qb)
{
	fx_open(&q->f, blocks, DIR_EVICT_LRU, 0);
	q->a = do_mkdir(&q->f, ROOT, "a");
	q->b = do_mkdir(&q->f, ROOT, "b");
	set2(q, qa, qb);
}

static struct dir_tenant_usage usage(struct qfx *q, uint64_t root)
{
	struct dir_tenant_usage u;

	assert_int_equal(dir_tenant_usage_of(q->f.d, root, &u), 0);
	return u;
}

static int exists(struct qfx *q, uint64_t parent, const char *name)
{
	struct dir_attr at;

	return lookup(&q->f, NULL, parent, name, &at) == 0;
}

static int create_rc(struct qfx *q, uint64_t parent, const char *name, uint64_t size,
		     uint64_t *ino)
{
	struct dir_attr at;
	int rc = dir_create(q->f.d, q->f.s1, parent, name, strlen(name), 0, 0, 0644, 0, 0,
			    size, &at);

	*ino = at.ino;
	return rc;
}

/* Published and pending bytes per tenant; none charged to the other. */
static void test_accounting(void **state)
{
	struct qfx q;
	struct dir_tenant_usage u;
	uint64_t ino;

	(void)state;
	open2(&q, 64, 16 * BLK, 16 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "x", 3 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "y", BLK);
	put_sized(&q.f, q.f.s1, ROOT, "free", 2 * BLK);
	ino = do_create(&q.f, q.f.s2, q.b, "p", 0, 2 * BLK);
	u = usage(&q, q.a);
	assert_string_equal(u.name, "alpha");
	assert_int_equal(u.used, 4 * BLK);
	assert_int_equal(u.pending, 0);
	assert_int_equal(u.evictable, 4 * BLK);
	assert_int_equal(u.quota, 16 * BLK);
	u = usage(&q, q.b);
	assert_int_equal(u.used, 0);
	assert_int_equal(u.pending, 2 * BLK);
	assert_int_equal(dir_publish(q.f.d, q.f.s2, ino, BLK, 0, NULL, NULL), 0);
	u = usage(&q, q.b);
	assert_int_equal(u.used, BLK);		/* the tail reservation was freed */
	assert_int_equal(u.pending, 0);
	assert_int_equal(u.evictable, 0);	/* leased by its publisher */
	assert_int_equal(dir_release(q.f.d, q.f.s2, ino), 0);
	assert_int_equal(usage(&q, q.b).evictable, BLK);
	assert_int_equal(dir_unlink(q.f.d, q.f.s1, q.a, "x", 1), 0);
	assert_int_equal(usage(&q, q.a).used, BLK);
	assert_int_equal(dir_tenant_usage_of(q.f.d, ROOT, &u), -ENODATA);
	assert_int_equal(dir_check(q.f.d), 0);
	fx_close(&q.f);
}

/* Over its quota a tenant loses its own least recently used file first. */
static void test_own_lru_order(void **state)
{
	struct qfx q;
	struct dir_attr at;
	struct extent_list l;

	(void)state;
	open2(&q, 64, 4 * BLK, 16 * BLK);
	put_sized(&q.f, q.f.s1, q.b, "b1", BLK);	/* older than all of alpha's */
	put_sized(&q.f, q.f.s1, q.a, "a1", BLK);
	put_sized(&q.f, q.f.s1, q.a, "a2", BLK);
	put_sized(&q.f, q.f.s1, q.a, "a3", BLK);
	put_sized(&q.f, q.f.s1, q.a, "a4", BLK);
	/* a1 read again: a2 is now the least recently used. */
	assert_int_equal(dir_open(q.f.d, q.f.s1, q.a, "a1", 2, 0, &at), 0);
	assert_int_equal(dir_read_extents(q.f.d, q.f.s1, at.ino, &l, &at), 0);
	alloc_extent_list_free(&l);
	assert_int_equal(dir_release(q.f.d, q.f.s1, at.ino), 0);
	put_sized(&q.f, q.f.s1, q.a, "a5", BLK);
	assert_false(exists(&q, q.a, "a2"));
	assert_true(exists(&q, q.a, "a1"));
	put_sized(&q.f, q.f.s1, q.a, "a6", 2 * BLK);
	assert_false(exists(&q, q.a, "a3"));
	assert_false(exists(&q, q.a, "a4"));
	assert_true(exists(&q, q.a, "a1"));
	assert_true(exists(&q, q.b, "b1"));	/* the pool had room: nobody else's */
	assert_int_equal(usage(&q, q.a).used, 4 * BLK);
	assert_int_equal(usage(&q, q.a).evictions, 3);
	assert_int_equal(usage(&q, q.b).evictions, 0);
	fx_close(&q.f);
}

/* Nothing of its own evictable: ENOSPC, evicting nothing, counted. */
static void test_enospc_own(void **state)
{
	struct qfx q;
	struct dir_attr at;
	uint64_t ino;

	(void)state;
	open2(&q, 64, 2 * BLK, 16 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "a1", BLK);
	put_sized(&q.f, q.f.s1, q.a, "a2", BLK);
	put_sized(&q.f, q.f.s1, q.b, "b1", BLK);
	put_sized(&q.f, q.f.s1, ROOT, "u1", BLK);
	assert_int_equal(dir_open(q.f.d, q.f.s2, q.a, "a1", 2, 0, &at), 0);
	assert_int_equal(create_rc(&q, q.a, "big", 3 * BLK, &ino), -ENOSPC);
	assert_true(exists(&q, q.a, "a2"));	/* refused at once: nothing evicted */
	/* One block fits once a2, the only unleased one, goes. */
	assert_int_equal(create_rc(&q, q.a, "a3", BLK, &ino), 0);
	assert_false(exists(&q, q.a, "a2"));
	/* a1 leased, a3 pending: nothing left to evict for one more byte. */
	assert_int_equal(dir_reserve(q.f.d, q.f.s1, ino, 2 * BLK, &at), -ENOSPC);
	assert_true(exists(&q, q.b, "b1"));
	assert_true(exists(&q, ROOT, "u1"));
	assert_int_equal(usage(&q, q.a).enospc, 2);
	assert_int_equal(usage(&q, q.a).used + usage(&q, q.a).pending, 2 * BLK);
	assert_int_equal(dir_release(q.f.d, q.f.s2, at.ino), 0);
	fx_close(&q.f);
}

/*
 * A full pool: a tenant's write evicts files under no tenant first, then
 * its own, never those of a tenant within its quota; with only those left
 * it gets ENOSPC.
 */
static void test_pool_pressure(void **state)
{
	struct qfx q;
	uint64_t ino;

	(void)state;
	open2(&q, 32, 0, 0);		/* quotas 0: none, still protected */
	put_sized(&q.f, q.f.s1, q.b, "b1", 8 * BLK);
	put_sized(&q.f, q.f.s1, ROOT, "u1", 8 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "a1", 8 * BLK);
	put_sized(&q.f, q.f.s1, q.b, "b2", 8 * BLK);
	/* b1 is the pool's least recently used; u1 goes instead. */
	put_sized(&q.f, q.f.s1, q.a, "a2", 8 * BLK);
	assert_false(exists(&q, ROOT, "u1"));
	assert_true(exists(&q, q.b, "b1"));
	assert_true(exists(&q, q.a, "a1"));
	/* Then alpha's own oldest. */
	put_sized(&q.f, q.f.s1, q.a, "a3", 8 * BLK);
	assert_false(exists(&q, q.a, "a1"));
	assert_true(exists(&q, q.b, "b1"));
	assert_true(exists(&q, q.b, "b2"));
	/* 24 blocks: a2 + a3 leave 16, beta's are untouchable. */
	assert_int_equal(create_rc(&q, q.a, "a4", 24 * BLK, &ino), -ENOSPC);
	assert_true(exists(&q, q.a, "a2"));
	assert_int_equal(usage(&q, q.b).evictions, 0);
	/* Beta within its (absent) quota evicts its own, not alpha's. */
	put_sized(&q.f, q.f.s1, q.b, "b3", 8 * BLK);
	assert_false(exists(&q, q.b, "b1"));
	assert_true(exists(&q, q.a, "a2"));
	fx_close(&q.f);
}

/* A tenant over a lowered quota is the first to give way to pool pressure. */
static void test_over_quota_first(void **state)
{
	struct qfx q;

	(void)state;
	open2(&q, 32, 0, 0);
	put_sized(&q.f, q.f.s1, q.b, "b1", 8 * BLK);
	put_sized(&q.f, q.f.s1, q.b, "b2", 8 * BLK);
	put_sized(&q.f, q.f.s1, ROOT, "u1", 8 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "a1", 8 * BLK);
	set2(&q, 0, 8 * BLK);		/* beta now 8 blocks over */
	assert_int_equal(usage(&q, q.b).used, 16 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "a2", 8 * BLK);
	assert_false(exists(&q, q.b, "b1"));
	assert_true(exists(&q, q.b, "b2"));	/* at its quota again: kept */
	assert_true(exists(&q, ROOT, "u1"));
	assert_true(exists(&q, q.a, "a1"));
	put_sized(&q.f, q.f.s1, q.a, "a3", 8 * BLK);
	assert_false(exists(&q, ROOT, "u1"));
	assert_true(exists(&q, q.b, "b2"));
	fx_close(&q.f);
}

/* An administrator's rename across tenant roots moves the charge with the bytes. */
static void test_rename_moves_charge(void **state)
{
	struct qfx q;
	uint64_t sub, ino;

	(void)state;
	open2(&q, 64, 16 * BLK, 16 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "f", 2 * BLK);
	sub = do_mkdir(&q.f, q.a, "sub");
	put_sized(&q.f, q.f.s1, sub, "g", 3 * BLK);
	ino = do_create(&q.f, q.f.s2, sub, "h", 0, BLK);
	assert_int_equal(usage(&q, q.a).used, 5 * BLK);
	assert_int_equal(usage(&q, q.a).pending, BLK);
	assert_int_equal(dir_rename(q.f.d, q.f.s1, q.a, "f", 1, q.b, "f", 1, 0), 0);
	assert_int_equal(usage(&q, q.a).used, 3 * BLK);
	assert_int_equal(usage(&q, q.b).used, 2 * BLK);
	assert_int_equal(dir_rename(q.f.d, q.f.s1, q.a, "sub", 3, ROOT, "sub", 3, 0), 0);
	assert_int_equal(usage(&q, q.a).used, 0);
	assert_int_equal(usage(&q, q.a).pending, 0);	/* s2's pending went along */
	assert_int_equal(usage(&q, q.a).evictable, 0);
	assert_int_equal(dir_check(q.f.d), 0);
	assert_int_equal(dir_rename(q.f.d, q.f.s1, ROOT, "sub", 3, q.b, "sub", 3, 0), 0);
	assert_int_equal(usage(&q, q.b).used, 5 * BLK);
	assert_int_equal(usage(&q, q.b).pending, BLK);
	assert_int_equal(dir_publish(q.f.d, q.f.s2, ino, BLK, 0, NULL, NULL), 0);
	assert_int_equal(usage(&q, q.b).used, 6 * BLK);
	assert_int_equal(dir_check(q.f.d), 0);
	fx_close(&q.f);
}

/* Bytes asked ahead of the writer come from free room only, never by evicting. */
static void test_reserve_ahead(void **state)
{
	struct qfx q;
	struct dir_attr at;
	uint64_t ino;

	(void)state;
	open2(&q, 16, 4 * BLK, 0);
	put_sized(&q.f, q.f.s1, q.a, "a1", 2 * BLK);
	put_sized(&q.f, q.f.s1, ROOT, "u1", 8 * BLK);
	ino = do_create(&q.f, q.f.s1, q.a, "w", 0, BLK);
	/* past the quota: refused, a1 kept, nothing counted */
	assert_int_equal(dir_reserve_ahead_ext(q.f.d, q.f.s1, ino, 3 * BLK, &at, NULL), -ENOSPC);
	assert_true(exists(&q, q.a, "a1"));
	assert_int_equal(usage(&q, q.a).enospc, 0);
	/* within it, from free room */
	assert_int_equal(dir_reserve_ahead_ext(q.f.d, q.f.s1, ino, 2 * BLK, &at, NULL), 0);
	assert_int_equal(at.reserved, 2 * BLK);
	/* the pool short (16 blocks: 2 + 8 + 2 + 4 asked): u1 kept */
	ino = do_create(&q.f, q.f.s2, q.b, "v", 0, BLK);
	assert_int_equal(dir_reserve_ahead_ext(q.f.d, q.f.s2, ino, 6 * BLK, &at, NULL), -ENOSPC);
	assert_true(exists(&q, ROOT, "u1"));
	assert_int_equal(stats(&q.f).evictions, 0);
	/* what it needs, asked plainly, evicts */
	assert_int_equal(dir_reserve(q.f.d, q.f.s2, ino, 6 * BLK, &at), 0);
	assert_false(exists(&q, ROOT, "u1"));
	fx_close(&q.f);
}

/* A hard-linked version counts where the name holding it is; that moves. */
static void test_link_holder_moves(void **state)
{
	struct qfx q;
	struct dir_attr at;
	uint64_t ino;

	(void)state;
	open2(&q, 64, 16 * BLK, 16 * BLK);
	put_sized(&q.f, q.f.s1, q.a, "f", 2 * BLK);
	assert_int_equal(lookup(&q.f, NULL, q.a, "f", &at), 0);
	ino = at.ino;
	assert_int_equal(dir_link(q.f.d, q.f.s1, ino, q.b, "l", 1, &at), 0);
	assert_int_equal(usage(&q, q.a).used, 2 * BLK);
	assert_int_equal(usage(&q, q.b).used, 0);
	/* symlinks and device nodes hold no bytes: charged nowhere */
	assert_int_equal(dir_symlink(q.f.d, q.f.s1, q.a, "s", 1, "f", 1, 0, 0, &at), 0);
	assert_int_equal(dir_mknod(q.f.d, q.f.s1, q.b, "p", 1, 010644, 0, 0, 0, &at), 0);
	assert_int_equal(dir_check(q.f.d), 0);
	assert_int_equal(dir_unlink(q.f.d, q.f.s1, q.a, "f", 1), 0);
	assert_int_equal(usage(&q, q.a).used, 0);
	assert_int_equal(usage(&q, q.b).used, 2 * BLK);
	assert_int_equal(usage(&q, q.b).evictable, 2 * BLK);
	assert_int_equal(dir_check(q.f.d), 0);
	fx_close(&q.f);
}

/* Files first, tenants after (recovery): usage recomputed; dropping a tenant frees it. */
static void test_set_after_files(void **state)
{
	struct qfx q;
	struct dir_tenant t1 = { "beta", 0, 0 };

	(void)state;
	fx_open(&q.f, 64, DIR_EVICT_LRU, 0);
	q.a = do_mkdir(&q.f, ROOT, "a");
	q.b = do_mkdir(&q.f, ROOT, "b");
	put_sized(&q.f, q.f.s1, q.a, "x", 2 * BLK);
	put_sized(&q.f, q.f.s1, q.b, "y", 5 * BLK);
	set2(&q, 4 * BLK, 8 * BLK);
	assert_int_equal(usage(&q, q.a).used, 2 * BLK);
	assert_int_equal(usage(&q, q.b).used, 5 * BLK);
	assert_int_equal(dir_check(q.f.d), 0);
	t1.root = q.b;
	assert_int_equal(dir_set_tenants(q.f.d, &t1, 1), 0);
	assert_int_equal(dir_tenant_usage_of(q.f.d, q.a, &(struct dir_tenant_usage){ 0 }),
			 -ENODATA);
	assert_int_equal(usage(&q, q.b).used, 5 * BLK);
	assert_int_equal(dir_check(q.f.d), 0);
	set2(&q, 4 * BLK, 8 * BLK);
	assert_int_equal(usage(&q, q.a).used, 2 * BLK);
	assert_int_equal(dir_set_tenants(q.f.d, NULL, 0), 0);
	assert_int_equal(dir_check(q.f.d), 0);
	/* Bad sets change nothing. */
	t1.root = 999;
	assert_int_equal(dir_set_tenants(q.f.d, &t1, 1), -ENOENT);
	fx_close(&q.f);
}

/* A reload dropping one root and adding another charges only what they hold. */
static void test_swap_roots(void **state)
{
	struct qfx q;
	struct dir_tenant t[2];
	struct dir_tenant_usage u;
	struct dir_attr at;
	uint64_t c, sub, ino;

	(void)state;
	open2(&q, 64, 16 * BLK, 16 * BLK);
	c = do_mkdir(&q.f, ROOT, "c");
	sub = do_mkdir(&q.f, c, "sub");
	put_sized(&q.f, q.f.s1, q.a, "x", 2 * BLK);
	put_sized(&q.f, q.f.s1, q.b, "y", 3 * BLK);
	put_sized(&q.f, q.f.s1, sub, "z", 4 * BLK);
	ino = do_create(&q.f, q.f.s2, sub, "p", 0, BLK);	/* pending under c */
	assert_int_equal(dir_open(q.f.d, q.f.s2, q.a, "x", 1, 0, &at), 0);	/* leased */
	t[0] = (struct dir_tenant){ "beta", q.b, 16 * BLK };
	t[1] = (struct dir_tenant){ "gamma", c, 8 * BLK };
	assert_int_equal(dir_set_tenants(q.f.d, t, 2), 0);
	assert_int_equal(dir_tenant_usage_of(q.f.d, q.a, &u), -ENODATA);
	assert_int_equal(usage(&q, q.b).used, 3 * BLK);
	assert_int_equal(usage(&q, c).used, 4 * BLK);
	assert_int_equal(usage(&q, c).pending, BLK);
	assert_string_equal(usage(&q, c).name, "gamma");
	assert_int_equal(dir_check(q.f.d), 0);
	assert_int_equal(dir_release(q.f.d, q.f.s2, at.ino), 0);
	assert_int_equal(dir_publish(q.f.d, q.f.s2, ino, BLK, 0, NULL, NULL), 0);
	assert_int_equal(usage(&q, c).used, 5 * BLK);
	assert_int_equal(dir_check(q.f.d), 0);
	fx_close(&q.f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accounting),
		cmocka_unit_test(test_own_lru_order),
		cmocka_unit_test(test_enospc_own),
		cmocka_unit_test(test_pool_pressure),
		cmocka_unit_test(test_over_quota_first),
		cmocka_unit_test(test_rename_moves_charge),
		cmocka_unit_test(test_reserve_ahead),
		cmocka_unit_test(test_link_holder_moves),
		cmocka_unit_test(test_set_after_files),
		cmocka_unit_test(test_swap_roots),
	};

	return cmocka_run_group_tests_name("dir_quota", tests, NULL, NULL);
}
