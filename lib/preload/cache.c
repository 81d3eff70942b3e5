// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/preload/cache.c: the shim's read cache. A table of entries keyed by
 * (fd, st_dev, st_ino) caches, per descriptor, either a read-only mapping
 * of the file or the verdict "not ours"; the mapping is made (and the
 * extents asked) once per open, borrowing the descriptor as its lease
 * (MARU_MAP_BORROW), and a descriptor's close waits for the reads in
 * flight on it. The mappings of recently closed descriptors are kept for
 * the next open of the same version, and whether a device is a FUSE mount
 * is remembered. close, fclose, dup2 and dup3 drop a descriptor's entries
 * before the call goes on. A fork child drops its inherited entries
 * lazily, on its next call (libmaru's own fork handlers have not run when
 * ours do).
 * pl_tab_lock guards every table here; it is never held across a libmaru
 * call.
 */
/* the off_t of the interposed calls, as in preload.c */
#undef _FILE_OFFSET_BITS
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "preload_priv.h"

#define FUSE_SUPER_MAGIC	0x65735546
#define TAB_SIZE		256
#define KEPT_MAX		32	/* mappings kept for reopens */

pthread_mutex_t pl_tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t readers_done = PTHREAD_COND_INITIALIZER;	/* a dropping entry's */
static struct ent *tab[TAB_SIZE];
static struct ent *purge;	/* dropped in a fork child, freed on the next call */

/* ---- mappings kept across opens ---- */

/*
 * The mappings of the last KEPT_MAX descriptors closed, by (st_dev, st_ino):
 * a marufs inode is one published version, immutable, so a new descriptor
 * of it is a new lease on the same bytes at the same extents, and its reads
 * need not ask marufs for them again (MARUFS_IOC_EXTENTS, a FUSE round trip
 * per open). A kept mapping is only taken by a descriptor of its version
 * (which holds the lease while it reads), and is checked against marud's
 * generation like any other. Size and mtime are part of the key: a device
 * number reused by another mount (of another pool) would also need a
 * version of the same number, size and time to the nanosecond. A fork
 * child unmaps what it inherited.
 */
static struct {
	struct kkey k;
	struct maru_map *m;
} kept[KEPT_MAX];
static unsigned int kept_next;
static int kept_stale;		/* a fork child's: unmap them all */

void pl_unmap_quiet(struct maru_map *m)
{
	if (!m)
		return;
	pl_in_shim++;
	maru_unmap(m);
	pl_in_shim--;
}

static int kkey_eq(const struct kkey *a, const struct kkey *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Keep m for the next open of its version; the slot's older mapping goes. */
static void kept_put(const struct kkey *k, struct maru_map *m)
{
	struct maru_map *old;

	pthread_mutex_lock(&pl_tab_lock);
	old = kept[kept_next].m;
	kept[kept_next].k = *k;
	kept[kept_next].m = m;
	kept_next = (kept_next + 1) % KEPT_MAX;
	pthread_mutex_unlock(&pl_tab_lock);
	pl_unmap_quiet(old);
}

/* The kept mapping of version k, now the caller's, or NULL. */
static struct maru_map *kept_take(const struct kkey *k)
{
	struct maru_map *m = NULL;
	unsigned int i;

	pthread_mutex_lock(&pl_tab_lock);
	for (i = 0; i < KEPT_MAX && !m; i++) {
		if (kept[i].m && kkey_eq(&kept[i].k, k)) {
			m = kept[i].m;
			kept[i].m = NULL;
		}
	}
	pthread_mutex_unlock(&pl_tab_lock);
	return m;
}

static void kept_purge(void)
{
	struct maru_map *m;
	unsigned int i;

	for (i = 0; i < KEPT_MAX; i++) {
		pthread_mutex_lock(&pl_tab_lock);
		m = kept[i].m;
		kept[i].m = NULL;
		pthread_mutex_unlock(&pl_tab_lock);
		pl_unmap_quiet(m);
	}
}

/* ---- the read cache ---- */

/* inherited: a fork child's entry, whose mapping is not kept */
static void ent_free(struct ent *e, int inherited)
{
	if (e->m && !inherited)
		kept_put(&e->key, e->m);
	else
		pl_unmap_quiet(e->m);
	if (!inherited)
		pthread_mutex_destroy(&e->pos_lock);
	free(e);
}

void pl_ent_put(struct ent *e)
{
	int last;

	pthread_mutex_lock(&pl_tab_lock);
	last = --e->refs == 0;
	if (e->dropping)
		pthread_cond_broadcast(&readers_done);
	pthread_mutex_unlock(&pl_tab_lock);
	if (last)
		ent_free(e, 0);
}

/*
 * Unlink every entry of fd and drop the table's references, after the reads
 * in flight on them: the descriptor about to be closed is their lease.
 */
static void ent_drop_fd(int fd)
{
	struct ent **pp, *e, *gone = NULL;

	if (fd < 0)
		return;
	pthread_mutex_lock(&pl_tab_lock);
	pp = &tab[(unsigned int)fd % TAB_SIZE];
	while ((e = *pp)) {
		if (e->fd == fd) {
			*pp = e->next;
			e->next = gone;
			e->dropping = 1;
			gone = e;
		} else {
			pp = &e->next;
		}
	}
	for (e = gone; e; e = e->next)
		while (e->refs > 1)
			pthread_cond_wait(&readers_done, &pl_tab_lock);
	pthread_mutex_unlock(&pl_tab_lock);
	while ((e = gone)) {
		gone = e->next;
		pl_ent_put(e);
	}
}

/* Entries a fork child inherited: freed here, outside the fork handlers. */
static void purge_run(void)
{
	struct ent *e, *list;

	if (__atomic_exchange_n(&kept_stale, 0, __ATOMIC_ACQ_REL))
		kept_purge();
	if (!__atomic_load_n(&purge, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&pl_tab_lock);
	list = purge;
	purge = NULL;
	pthread_mutex_unlock(&pl_tab_lock);
	while ((e = list)) {
		list = e->next;
		ent_free(e, 1);	/* its lock may be held by a thread that is gone */
	}
}

static struct ent *ent_find_locked(int fd, const struct stat *st)
{
	struct ent *e;

	for (e = tab[(unsigned int)fd % TAB_SIZE]; e; e = e->next)
		if (e->fd == fd && e->key.dev == st->st_dev && e->key.ino == st->st_ino)
			return e;
	return NULL;
}

/*
 * Is the filesystem of st_dev a FUSE mount? fstatfs on FUSE is a round trip
 * to the daemon (and marufs asks marud), so the answer is remembered per
 * device number; a device reused by another mount costs at most a failed
 * ioctl (FUSE) or a missed interception (not FUSE any more).
 */
#define DEVS_MAX	64
static struct {
	dev_t dev;
	int fuse;
} devs[DEVS_MAX];
static unsigned int ndevs;

int pl_is_fuse(int fd, dev_t dev)
{
	struct statfs sf;
	unsigned int i;
	int fuse;

	pthread_mutex_lock(&pl_tab_lock);
	for (i = 0; i < ndevs; i++) {
		if (devs[i].dev == dev) {
			fuse = devs[i].fuse;
			pthread_mutex_unlock(&pl_tab_lock);
			return fuse;
		}
	}
	pthread_mutex_unlock(&pl_tab_lock);
	fuse = fstatfs(fd, &sf) == 0 && sf.f_type == FUSE_SUPER_MAGIC;
	pthread_mutex_lock(&pl_tab_lock);
	devs[ndevs % DEVS_MAX].dev = dev;
	devs[ndevs % DEVS_MAX].fuse = fuse;
	if (ndevs < DEVS_MAX)
		ndevs++;
	pthread_mutex_unlock(&pl_tab_lock);
	return fuse;
}

/* A new entry for fd: its mapping if fd is a published marufs file read-only. */
static struct ent *ent_probe(int fd, const struct stat *st)
{
	struct ent *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return NULL;
	e->fd = fd;
	e->key = (struct kkey){ .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
				.mtime = st->st_mtim };
	e->neg = 1;
	pthread_mutex_init(&e->pos_lock, NULL);
	if (!S_ISREG(st->st_mode) || !pl_is_fuse(fd, st->st_dev))
		return e;
	e->m = kept_take(&e->key);
	if (e->m && maru_map_check(e->m) == 0) {
		e->neg = 0;
		plog("fd %d: mapping of inode %llu kept from an earlier open", fd,
		     (unsigned long long)st->st_ino);
		return e;
	}
	pl_unmap_quiet(e->m);
	e->m = NULL;
	pl_in_shim++;
	/* the descriptor is the lease: close waits for its readers (ent_drop_fd) */
	rc = maru_map(fd, NULL, MARU_MAP_POPULATE | MARU_MAP_BORROW, &e->m);
	pl_in_shim--;
	if (rc) {
		e->m = NULL;
		plog("fd %d: not mapped (%s): reads go through FUSE", fd, strerror(-rc));
	} else if (maru_map_flags(e->m) & MARU_MAP_PENDING) {
		plog("fd %d: pending file: reads go through FUSE", fd);
		pl_in_shim++;
		maru_unmap(e->m);
		pl_in_shim--;
		e->m = NULL;
	} else {
		e->neg = 0;
		plog("fd %d: mapped %llu bytes for reads", fd,
		     (unsigned long long)maru_map_size(e->m));
	}
	return e;
}

/* The entry of a read-only descriptor, with a reference, or NULL. */
struct ent *pl_ent_get(int fd)
{
	struct ent *e, *ne;
	struct stat st;
	int fl;

	purge_run();
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDONLY || fstat(fd, &st))
		return NULL;
	pthread_mutex_lock(&pl_tab_lock);
	e = ent_find_locked(fd, &st);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&pl_tab_lock);
	if (e)
		return e;
	ne = ent_probe(fd, &st);
	if (!ne)
		return NULL;
	pthread_mutex_lock(&pl_tab_lock);
	e = ent_find_locked(fd, &st);	/* another thread probed meanwhile */
	if (!e) {
		e = ne;
		ne = NULL;
		e->refs = 1;
		e->next = tab[(unsigned int)fd % TAB_SIZE];
		tab[(unsigned int)fd % TAB_SIZE] = e;
	}
	e->refs++;
	pthread_mutex_unlock(&pl_tab_lock);
	if (ne)
		ent_free(ne, 0);
	return e;
}

/* ---- descriptors ---- */

EXPORT int close(int fd)
{
	pl_setup();
	if (!pl_in_shim)
		ent_drop_fd(fd);
	return pl_real.close(fd);
}

EXPORT int fclose(FILE *f)
{
	pl_setup();
	if (!pl_in_shim && f)
		ent_drop_fd(fileno(f));
	return pl_real.fclose(f);
}

EXPORT int dup2(int old, int new)
{
	pl_setup();
	if (!pl_in_shim && old != new)
		ent_drop_fd(new);
	return pl_real.dup2(old, new);
}

EXPORT int dup3(int old, int new, int flags)
{
	pl_setup();
	if (!pl_in_shim && old != new)
		ent_drop_fd(new);
	return pl_real.dup3(old, new, flags);
}

/* ---- fork ---- */

static void cache_fork_prepare(void)
{
	pthread_mutex_lock(&pl_tab_lock);
}

static void cache_fork_parent(void)
{
	pthread_mutex_unlock(&pl_tab_lock);
}

/* The child's descriptors are copies: its cache starts empty. */
static void cache_fork_child(void)
{
	struct ent *e;
	unsigned int i;

	for (i = 0; i < TAB_SIZE; i++) {
		while ((e = tab[i])) {
			tab[i] = e->next;
			e->next = purge;
			purge = e;
		}
	}
	kept_stale = 1;
	pthread_mutex_init(&pl_tab_lock, NULL);
	pthread_cond_init(&readers_done, NULL);
}

/* At load, as the shim's own constructor (preload.c) finds the calls. */
__attribute__((constructor)) static void cache_ctor(void)
{
	pthread_atfork(cache_fork_prepare, cache_fork_parent, cache_fork_child);
}
