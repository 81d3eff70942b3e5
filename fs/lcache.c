/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/lcache.c: the leases of small published files this mount closed
 * lately, kept for the next open of the same inode, so that open+read+close
 * of a file just written or read costs marud neither an OPEN nor a RELEASE.
 * A held lease keeps its version's bytes (marud neither evicts nor frees
 * them), so the cache is bounded every way: files of at most LCACHE_FILE_MAX
 * bytes, at most LC_SLOTS of them within a byte budget (1/LC_POOL_SHARE of
 * the pool, at most LC_BYTES_MAX), each for LC_TTL_MS. An entry also goes
 * when the kernel forgets its inode (as it does once the name was replaced
 * or removed and the entry invalidated), at a new pool generation (its
 * epoch), and at exit. Only inodes the kernel holds are put here: a reader's
 * or a new file's close, which the kernel sends before that inode's FORGET.
 *
 * A NULL cache keeps nothing (put closes, take finds nothing).
 *
 * Lock: lc->lock, a leaf. Leases are closed after it is dropped.
 */
#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "lcache.h"

#define LC_BUCKETS	1024
#define LC_SLOTS	4096
#define LC_BYTES_MAX	(64ull << 20)
#define LC_POOL_SHARE	32
#define LC_TTL_MS	5000

struct lent {
	uint64_t ino, bytes, epoch, deadline;
	struct maru_file *f;
	struct lent *hnext;		/* bucket chain */
	struct lent *older, *newer;	/* age list */
};

struct lcache {
	pthread_mutex_t lock;
	struct lent *b[LC_BUCKETS];
	struct lent *oldest, *newest;
	unsigned int n;		/* read unlocked as a hint */
	uint64_t bytes, budget;
};

int lcache_new(struct lcache **out)
{
	struct lcache *lc = calloc(1, sizeof(*lc));

	if (!lc)
		return -ENOMEM;
	pthread_mutex_init(&lc->lock, NULL);
	*out = lc;
	return 0;
}

void lcache_free(struct lcache *lc)
{
	if (!lc)
		return;
	lcache_drop_all(lc);
	pthread_mutex_destroy(&lc->lock);
	free(lc);
}

void lcache_set_budget(struct lcache *lc, uint64_t pool_size)
{
	uint64_t b = pool_size / LC_POOL_SHARE;

	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	lc->budget = b < LC_BYTES_MAX ? b : LC_BYTES_MAX;
	pthread_mutex_unlock(&lc->lock);
}

static struct lent **bucket(struct lcache *lc, uint64_t ino)
{
	return &lc->b[(ino * 0x9e3779b97f4a7c15ull) >> 54];	/* 2^10 buckets */
}

/* Unhook e from both lists; lock held. */
static void unhook_locked(struct lcache *lc, struct lent *e)
{
	struct lent **pp = bucket(lc, e->ino);

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	if (e->older)
		e->older->newer = e->newer;
	else
		lc->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		lc->newest = e->older;
	__atomic_sub_fetch(&lc->n, 1, __ATOMIC_RELAXED);
	lc->bytes -= e->bytes;
	e->hnext = e->older = e->newer = NULL;
}

/* Move e to the caller's list of entries to close. */
static void evict_locked(struct lcache *lc, struct lent *e, struct lent **drop)
{
	unhook_locked(lc, e);
	e->hnext = *drop;
	*drop = e;
}

static void close_all(struct lent *drop)
{
	struct lent *next;

	for (; drop; drop = next) {
		next = drop->hnext;
		maru_file_close(drop->f);
		free(drop);
	}
}

static struct lent *find_locked(struct lcache *lc, uint64_t ino)
{
	struct lent *e;

	for (e = *bucket(lc, ino); e && e->ino != ino; e = e->hnext)
		;
	return e;
}

/* Make room for bytes more (lock held); 0 when they can never fit. */
static int room_locked(struct lcache *lc, uint64_t bytes, struct lent **drop)
{
	if (bytes > lc->budget)
		return 0;
	while (lc->oldest && (lc->n >= LC_SLOTS || lc->bytes + bytes > lc->budget))
		evict_locked(lc, lc->oldest, drop);
	return 1;
}

void lcache_put(struct lcache *lc, uint64_t ino, uint64_t epoch, struct maru_file *f)
{
	uint64_t bytes = maru_file_size(f);	/* a lease's size never changes */
	struct lent *e = NULL, *drop = NULL, *old;

	if (lc && bytes <= LCACHE_FILE_MAX && !maru_file_is_pending(f))
		e = calloc(1, sizeof(*e));
	if (!e) {
		maru_file_close(f);
		return;
	}
	*e = (struct lent){ .ino = ino, .bytes = bytes, .epoch = epoch, .f = f,
			    .deadline = mono_ns() + (uint64_t)LC_TTL_MS * 1000000 };
	pthread_mutex_lock(&lc->lock);
	old = find_locked(lc, ino);
	if (old)
		evict_locked(lc, old, &drop);
	if (!room_locked(lc, bytes, &drop)) {
		e->hnext = drop;
		drop = e;
	} else {
		e->hnext = *bucket(lc, ino);
		*bucket(lc, ino) = e;
		e->older = lc->newest;
		if (lc->newest)
			lc->newest->newer = e;
		else
			lc->oldest = e;
		lc->newest = e;
		__atomic_add_fetch(&lc->n, 1, __ATOMIC_RELAXED);
		lc->bytes += bytes;
	}
	pthread_mutex_unlock(&lc->lock);
	close_all(drop);
}

struct maru_file *lcache_take(struct lcache *lc, uint64_t ino, uint64_t epoch)
{
	struct maru_file *f = NULL;
	struct lent *e;

	if (!lc || !__atomic_load_n(&lc->n, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&lc->lock);
	e = find_locked(lc, ino);
	if (e)
		unhook_locked(lc, e);
	pthread_mutex_unlock(&lc->lock);
	/* of this pool generation, and of the session that is alive now
	 * (a session marud ended meanwhile took the lease with it; no call) */
	if (e && e->epoch == epoch && maru_file_extents(e->f, NULL, 0) >= 0)
		f = e->f;
	else if (e)
		maru_file_close(e->f);
	free(e);
	return f;
}

void lcache_drop(struct lcache *lc, uint64_t ino)
{
	struct maru_file *f = lcache_take(lc, ino, 0);

	if (f)
		maru_file_close(f);
}

void lcache_expire(struct lcache *lc)
{
	struct lent *drop = NULL;
	uint64_t now;

	if (!lc || !__atomic_load_n(&lc->n, __ATOMIC_RELAXED))
		return;
	now = mono_ns();
	pthread_mutex_lock(&lc->lock);
	while (lc->oldest && lc->oldest->deadline <= now)
		evict_locked(lc, lc->oldest, &drop);
	pthread_mutex_unlock(&lc->lock);
	close_all(drop);
}

void lcache_drop_all(struct lcache *lc)
{
	struct lent *drop = NULL;

	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	while (lc->oldest)
		evict_locked(lc, lc->oldest, &drop);
	pthread_mutex_unlock(&lc->lock);
	close_all(drop);
}

unsigned int lcache_count(struct lcache *lc)
{
	return lc ? __atomic_load_n(&lc->n, __ATOMIC_RELAXED) : 0;
}
