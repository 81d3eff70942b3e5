/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/check_test.c: the accounting (daemon/dir/check.c)
 * under random operations: dir_check() recounts everything after every call
 * while allocations fail at random, so a half-applied operation shows; a
 * threaded variant hammers the one lock, out-of-lock fills included; and
 * a broken counter is caught; and thousands of names through the name and
 * id tables' incremental doublings against a model.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "dir_priv.h"
#include "fixture.h"


/* ---- random operations ---- */

struct rng {
	uint64_t x;
};


static uint64_t rnd(struct rng *r, uint64_t n)
{
	r->x ^= r->x << 13;
	r->x ^= r->x >> 7;
	r->x ^= r->x << 17;
	return r->x % n;
}


static const char *const fz_names[] = { "a", "b", "c.tmp", "dd", "x", "y" };
#define FZ_NAMES (sizeof(fz_names) / sizeof(fz_names[0]))

/* Ids a session may act on; stale ids are fine (the call just fails). */
struct fz_sess {
	struct dir_session *s;
	uint64_t ids[16];	/* ring of versions created or opened */
	unsigned int head;
};


struct fz {
	struct dir *d;
	uint8_t *pool;
	uint64_t dirs[8];
	struct fz_sess ss[3];
	int shared;		/* sessions used by several threads: never end them */
	int fills;		/* also the *_ext and out-of-lock fill calls */
};


static const char *fz_name(struct rng *r)
{
	return fz_names[rnd(r, FZ_NAMES)];
}


static uint64_t fz_dir(struct fz *z, struct rng *r)
{
	return z->dirs[rnd(r, 8)];
}


static void fz_remember(struct fz_sess *fs, int rc, uint64_t ino)
{
	if (!rc)
		fs->ids[fs->head++ % 16] = ino;
}


/* Mostly one of the last few versions, so many get published. */
static uint64_t fz_ino(struct fz_sess *fs, struct rng *r)
{
	if (rnd(r, 4))
		return fs->ids[(fs->head - 1 - rnd(r, 3)) % 16];
	return fs->ids[rnd(r, 16)];
}


static void fz_ns_op(struct fz *z, struct rng *r, struct fz_sess *fs, int op)
{
	struct dir_setattr sa = { SETATTR_MODE | SETATTR_MTIME, 0600, 0, 0, 0, 5 };
	const char *n = fz_name(r), *m = fz_name(r);
	struct dir_attr at;
	int rc;

	switch (op) {
	case 0:
		rc = dir_mkdir(z->d, fz_dir(z, r), n, strlen(n), 0755, 0, 0, &at);
		if (!rc)
			z->dirs[rnd(r, 8)] = at.ino;
		break;
	case 1:
		dir_rmdir(z->d, fz_dir(z, r), n, strlen(n));
		break;
	case 2:
		dir_unlink(z->d, fs->s, fz_dir(z, r), n, strlen(n));
		break;
	case 3:
		dir_rename(z->d, fs->s, fz_dir(z, r), n, strlen(n), fz_dir(z, r), m,
			   strlen(m), (uint32_t)rnd(r, 2));
		break;
	case 4:
		dir_setattr(z->d, fs->s, fz_ino(fs, r), &sa, &at);
		break;
	default:
		dir_lookup(z->d, fs->s, fz_dir(z, r), n, strlen(n), &at);
		break;
	}
}


static int fz_count(void *arg, const struct dir_dirent *de)
{
	return ++*(int *)arg > 1000;
}


static void fz_file_op(struct fz *z, struct rng *r, struct fz_sess *fs, int op)
{
	uint64_t ino = fz_ino(fs, r), len = rnd(r, 3 * BLK);
	const char *n = fz_name(r);
	struct extent_list l;
	struct dir_attr at;
	int rc, cnt = 0, eof;

	switch (op) {
	case 0:
		rc = dir_create(z->d, fs->s, fz_dir(z, r), n, strlen(n), 0,
				(uint32_t)rnd(r, 4), 0644, 0, 0, rnd(r, 4) * BLK, &at);
		fz_remember(fs, rc, at.ino);
		break;
	case 1:
		dir_reserve(z->d, fs->s, ino, len, &at);
		dir_wrote(z->d, fs->s, ino, rnd(r, len + 1), len, &at);
		break;
	case 2:
		dir_truncate(z->d, fs->s, ino, len, &at);
		break;
	case 3:
		rc = dir_getattr(z->d, fs->s, ino, &at);
		dir_publish(z->d, fs->s, ino, rc ? 0 : at.size, 1, &at, NULL);
		break;
	case 4:
		dir_abandon(z->d, fs->s, ino);
		break;
	case 5:
		rc = dir_open(z->d, fs->s, fz_dir(z, r), n, strlen(n), 0, &at);
		fz_remember(fs, rc, at.ino);
		break;
	case 6:
		dir_release(z->d, fs->s, ino);
		break;
	case 7:
		if (!dir_extents(z->d, fs->s, ino, (int)rnd(r, 2), &l, &at))
			alloc_extent_list_free(&l);
		dir_touch(z->d, ino);
		break;
	default:
		dir_readdir(z->d, fs->s, fz_dir(z, r), rnd(r, 40), 8, fz_count, &cnt, &eof);
		break;
	}
}


/* The one-lock-hold and out-of-lock calls, each begin ended at once. */
static void fz_fill_op(struct fz *z, struct rng *r, struct fz_sess *fs, int op)
{
	uint64_t ino = fz_ino(fs, r), len = rnd(r, 3 * BLK);
	const char *n = fz_name(r);
	struct extent_list l;
	struct dir_fill fl;
	struct dir_attr at;
	int rc;

	switch (op) {
	case 0:
		rc = dir_create_begin(z->d, fs->s, fz_dir(z, r), n, strlen(n), 0,
				      (uint32_t)rnd(r, 4), 0644, 0, 0, rnd(r, 4) * BLK,
				      &at, &fl);
		break;
	case 1:
		rc = dir_truncate_begin(z->d, fs->s, ino, len, &at, &fl);
		break;
	case 2:
		dir_reserve(z->d, fs->s, ino, len, &at);
		rc = dir_wrote_begin(z->d, fs->s, ino, rnd(r, len + 1), len, &at, &fl);
		break;
	case 3:
		if (!dir_open_ext(z->d, fs->s, fz_dir(z, r), n, strlen(n), 0, &at, &l)) {
			alloc_extent_list_free(&l);
			fz_remember(fs, 0, at.ino);
		}
		return;
	default:
		if (!dir_reserve_ext(z->d, fs->s, ino, len, &at, &l))
			alloc_extent_list_free(&l);
		if (!dir_read_extents(z->d, fs->s, ino, &l, &at))
			alloc_extent_list_free(&l);
		return;
	}
	if (rc)
		return;
	fz_remember(fs, 0, fl.ino);
	dir_fill_run(z->d, &fl);
	dir_fill_done(z->d, fs->s, &fl, rnd(r, 8) ? 0 : -EIO, &at, NULL);
}

static void fz_step(struct fz *z, struct rng *r)
{
	struct fz_sess *fs = &z->ss[rnd(r, 3)];
	uint64_t k = rnd(r, 100);

	if (k < 30)
		fz_ns_op(z, r, fs, (int)rnd(r, 6));
	else if (k < 99 && k >= 90 && z->fills)
		fz_fill_op(z, r, fs, (int)rnd(r, 5));
	else if (k < 99)
		fz_file_op(z, r, fs, (int)rnd(r, 9));
	else if (!fail_countdown && !z->shared) {
		dir_session_end(z->d, fs->s);
		assert_int_equal(dir_session_new(z->d, &fs->s), 0);
	}
}


static void fz_run(struct fz *z, struct rng *r, int steps, int inject, int check)
{
	int i;

	for (i = 0; i < steps; i++) {
		if (inject && !rnd(r, 4))
			fail_countdown = 1 + rnd(r, 6);
		fz_step(z, r);
		fail_countdown = 0;
		if (check && dir_check(z->d))
			fail_msg("dir_check failed after step %d", i);
	}
}


static void fz_open(struct fx *f, struct fz *z)
{
	int i;

	fx_open(f, 64, DIR_EVICT_LRU, 32);
	memset(z, 0, sizeof(*z));
	z->d = f->d;
	for (i = 0; i < 8; i++)
		z->dirs[i] = ROOT;
	z->ss[0].s = f->s1;
	z->ss[1].s = f->s2;
	assert_int_equal(dir_session_new(f->d, &z->ss[2].s), 0);
}


static void fz_close(struct fx *f, struct fz *z)
{
	f->s1 = z->ss[0].s;
	f->s2 = z->ss[1].s;
	dir_session_end(f->d, z->ss[2].s);
	fx_close(f);
}


static void test_random_ops(void **state)
{
	struct rng r = { 0x9e3779b97f4a7c15ULL };
	struct fx f;
	struct fz z;
	struct dir_stats st;
	void *(*volatile mallocp)(size_t) = malloc;
	void *probe;

	/* Under valgrind malloc is replaced and cannot fail on demand. */
	fail_countdown = 1;
	probe = mallocp(8);
	fail_countdown = 0;
	free(probe);
	fz_open(&f, &z);
	fz_run(&z, &r, 100000, probe == NULL, 1);
	st = stats(&f);
	print_message("random ops: %lu allocation failures injected; %llu creates, "
		      "%llu publishes, %llu replaces, %llu unlinks, %llu evictions, "
		      "%llu abandons, %llu enospc\n", fail_injected,
		      (unsigned long long)st.creates, (unsigned long long)st.publishes,
		      (unsigned long long)st.replaces, (unsigned long long)st.unlinks,
		      (unsigned long long)st.evictions, (unsigned long long)st.abandons,
		      (unsigned long long)st.enospc);
	/* The run must have reached the interesting paths. */
	assert_true(st.publishes > 100 && st.replaces > 10 && st.evictions > 10);
	fz_close(&f, &z);
}


/*
 * The same with the one-hold and out-of-lock calls mixed in, allocation
 * failures off: freeing bytes can itself need a node from malloc in the
 * allocator (alloc.c logs "lost"), which the run above happens to avoid.
 */
static void test_random_fill_ops(void **state)
{
	struct rng r = { 0x2545f4914f6cdd1dULL };
	struct dir_stats st;
	struct fx f;
	struct fz z;

	fz_open(&f, &z);
	z.fills = 1;
	fz_run(&z, &r, 50000, 0, 1);
	st = stats(&f);
	assert_true(st.publishes > 100 && st.replaces > 10 && st.evictions > 10);
	assert_true(st.abandons > 10);
	fz_close(&f, &z);
}

/* Each thread keeps its own bookkeeping; dir and sessions are shared. */
struct fz_thread {
	struct fz z;
	uint64_t seed;
};


static void *fz_thread(void *arg)
{
	struct fz_thread *t = arg;
	struct rng r = { t->seed };

	fz_run(&t->z, &r, 20000, 0, 0);
	return NULL;
}


static void test_threads(void **state)
{
	struct fz_thread t[3];
	pthread_t th[3];
	struct fx f;
	struct fz z;
	int i;

	fz_open(&f, &z);
	z.shared = 1;
	z.fills = 1;
	/* Sessions are shared by threads here: the dir must not care. */
	for (i = 0; i < 3; i++) {
		t[i].z = z;
		t[i].seed = 0x1234567ULL * (i + 1);
		assert_int_equal(pthread_create(&th[i], NULL, fz_thread, &t[i]), 0);
	}
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(dir_check(z.d), 0);
	fz_close(&f, &z);
}


/* dir_check sees a counter that no longer matches the records. */
/* ---- many names while the tables double (htab.c's migration) ---- */

#define MG_NAMES 3000

struct mg {
	struct fx f;
	uint64_t dir;
	uint8_t st[MG_NAMES];	/* 0 absent, 1 published, 2 pending (s1) */
	uint64_t ino[MG_NAMES];
};

static int mg_name(char *buf, size_t cap, uint64_t i)
{
	return snprintf(buf, cap, "%016llx.kv", (unsigned long long)(i * 0x9e3779b97f4a7c15ULL));
}

static void mg_publish(struct mg *m, uint64_t i)
{
	struct dir_attr at;

	assert_int_equal(dir_publish(m->f.d, m->f.s1, m->ino[i], 0, 0, &at, NULL), 0);
	assert_int_equal(dir_release(m->f.d, m->f.s1, m->ino[i]), 0);
	m->st[i] = 1;
}

/* One random step on name i (and j, a rename's target). */
static void mg_step(struct mg *m, struct rng *r, uint64_t i, uint64_t j)
{
	char a[32], b[32];
	int na = mg_name(a, sizeof(a), i), nb = mg_name(b, sizeof(b), j);
	uint64_t c = rnd(r, 3);

	if (m->st[i] == 0) {
		m->ino[i] = do_create(&m->f, m->f.s1, m->dir, a, 0, 0);
		m->st[i] = 2;
		if (c)
			mg_publish(m, i);
	} else if (m->st[i] == 2) {
		if (c)
			mg_publish(m, i);
		else
			assert_int_equal(dir_abandon(m->f.d, m->f.s1, m->ino[i]), 0);
		m->st[i] = c ? 1 : 0;
	} else if (c == 0) {
		assert_int_equal(dir_unlink(m->f.d, NULL, m->dir, a, (size_t)na), 0);
		m->st[i] = 0;
	} else if (c == 1 && m->st[j] == 0) {
		assert_int_equal(dir_rename(m->f.d, NULL, m->dir, a, (size_t)na, m->dir, b,
					    (size_t)nb, 0), 0);
		m->st[j] = 1;
		m->ino[j] = m->ino[i];
		m->st[i] = 0;
	}
}

/* A lookup of name k answers as the model says. */
static void mg_lookup(struct mg *m, uint64_t k)
{
	struct dir_attr at;
	char a[32];
	int n = mg_name(a, sizeof(a), k);
	int rc = dir_lookup(m->f.d, NULL, m->dir, a, (size_t)n, &at);

	if (m->st[k] == 1) {
		assert_int_equal(rc, 0);
		assert_int_equal(at.ino, m->ino[k]);
	} else {
		assert_int_equal(rc, -ENOENT);
	}
}

static void test_many_names_migrating(void **state)
{
	struct rng r = { 0x2545f4914f6cdd1dULL };
	uint64_t step, k, names_mig = 0, ids_mig = 0;
	struct mg *m = calloc(1, sizeof(*m));
	struct dir_attr at;

	assert_non_null(m);
	fx_open(&m->f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(dir_mkdir(m->f.d, ROOT, "kv", 2, 0755, 0, 0, &at), 0);
	m->dir = at.ino;
	for (step = 0; step < 12 * MG_NAMES; step++) {
		/* names fill up to MG_NAMES, then churn */
		k = rnd(&r, step < 2 * MG_NAMES ? step / 2 + 1 : MG_NAMES);
		mg_step(m, &r, k, rnd(&r, MG_NAMES));
		mg_lookup(m, rnd(&r, MG_NAMES));
		names_mig += htab_migrating(&m->f.d->names);
		ids_mig += htab_migrating(&m->f.d->ids);
		if (htab_migrating(&m->f.d->names) || htab_migrating(&m->f.d->ids) ||
		    step % 500 == 0)
			assert_int_equal(dir_check(m->f.d), 0);
	}
	for (k = 0; k < MG_NAMES; k++)
		mg_lookup(m, k);
	/* the model ran through doublings of both tables */
	assert_true(names_mig > 0 && ids_mig > 0);
	fx_close(&m->f);
	free(m);
}

static void test_check_catches(void **state)
{
	struct fx f;

	fx_open(&f, 8, DIR_EVICT_LRU, 0);
	put_file(&f, f.s1, ROOT, "a", "a");
	assert_int_equal(dir_check(f.d), 0);
	f.d->used += BLK;
	assert_int_equal(dir_check(f.d), -EUCLEAN);
	f.d->used -= BLK;
	f.d->nnames++;
	assert_int_equal(dir_check(f.d), -EUCLEAN);
	f.d->nnames--;
	f.d->evictable = 0;
	assert_int_equal(dir_check(f.d), -EUCLEAN);
	f.d->evictable = BLK;
	assert_int_equal(dir_check(f.d), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_random_fill_ops),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_many_names_migrating),
		cmocka_unit_test(test_check_catches),
	};

	return cmocka_run_group_tests_name("check", tests, NULL, NULL);
}
