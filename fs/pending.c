/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pending.c: this mount's pending versions and their state machine. A
 * struct pending is one pending version (a maru_file being written), shared
 * by every handle writing the same name and found through the pending table
 * by (parent, name), or through the inode table by the kernel's inode. It is
 * published when its last active writer flushes after data was written (so
 * close() returns after the name moved) or, failing that, at the last
 * writer's release; a failed write marks it failed so nothing partial is
 * ever published; an unlinked name, a killed writer or an untouched rewrite
 * copy abandon it. Handles still attached keep reading what it holds until
 * the last of them goes. What a pending reads, how big it is and whether it
 * is readable at all are decided here and nowhere else.
 *
 * Locks, outermost first: p->rw (rdlock: I/O on p->file; wrlock: a state
 * change that publishes or closes the file), then pt->lock (the name table,
 * names, and the handle counts of every pending), then inode.c's table
 * lock. refs is atomic. No libmaru call is made under pt->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dattr.h"
#include "failpoint.h"
#include "log.h"
#include "notify.h"
#include "fileio.h"
#include "lcache.h"
#include "pending.h"
#include "ratelog.h"

#include "pending_priv.h"

int ptab_new(struct ptab **out)
{
	struct ptab *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return -ENOMEM;
	pthread_mutex_init(&pt->lock, NULL);
	*out = pt;
	return 0;
}

/* Every pending is gone by now: the inode table dropped its links. */
void ptab_free(struct ptab *pt)
{
	if (!pt)
		return;
	pthread_mutex_destroy(&pt->lock);
	free(pt);
}

/* ---- references and the name table ---- */

static struct pending **bucket(struct ptab *pt, uint64_t parent, const char *name)
{
	return &pt->b[name_hash(parent, name) & (PEND_BUCKETS - 1)];
}

static struct pending *lookup_locked(struct ptab *pt, uint64_t parent, const char *name)
{
	struct pending *p = *bucket(pt, parent, name);

	while (p && !(p->parent == parent && strcmp(p->name, name) == 0))
		p = p->hnext;
	return p;
}

static void unlink_locked(struct ptab *pt, struct pending *p)
{
	struct pending **pp;

	if (!p->in_table)
		return;
	pp = bucket(pt, p->parent, p->name);
	while (*pp && *pp != p)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = p->hnext;
	p->hnext = NULL;
	p->in_table = 0;
	pt->count--;
}

static void link_locked(struct ptab *pt, struct pending *p)
{
	struct pending **b = bucket(pt, p->parent, p->name);

	p->hnext = *b;
	*b = p;
	p->in_table = 1;
	pt->count++;
}

/* A ref on a pending found in the table, unless its last one is going. */
static int get_unless_zero(struct pending *p)
{
	int n = __atomic_load_n(&p->refs, __ATOMIC_ACQUIRE);

	while (n > 0)
		if (__atomic_compare_exchange_n(&p->refs, &n, n + 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 1;
	return 0;
}

static void pend_free(struct pending *p)
{
	if (p->file)
		maru_file_close(p->file);
	pthread_rwlock_destroy(&p->rw);
	free(p->name);
	free(p);
}

void pend_get(struct pending *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
}

void pend_put(struct pending *p)
{
	struct ptab *pt = p->m->pt;

	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_mutex_lock(&pt->lock);
	unlink_locked(pt, p);
	pthread_mutex_unlock(&pt->lock);
	pend_free(p);
}

static void payload_hold(void *obj)
{
	pend_get(obj);
}

static void payload_drop(void *obj)
{
	pend_put(obj);
}

const struct itab_payload_ops pend_payload_ops = {
	.hold = payload_hold,
	.drop = payload_drop,
};

static void unregister(struct pending *p)
{
	pthread_mutex_lock(&p->m->pt->lock);
	unlink_locked(p->m->pt, p);
	pthread_mutex_unlock(&p->m->pt->lock);
}

struct pending *pend_new(struct mfs *m, struct maru_file *f, uint64_t parent,
			 const char *name, uint64_t src_ino)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->name = name ? strdup(name) : NULL;
	if (name && !p->name) {
		free(p);
		return NULL;
	}
	pthread_rwlock_init(&p->rw, NULL);
	p->m = m;
	p->file = f;
	p->ino = maru_file_ino(f);
	p->src_ino = src_ino;
	p->parent = parent;
	p->epoch = mfs_epoch(m);
	p->state = PEND_PENDING;
	p->refs = 1;
	return p;
}

/* 1 with the live pending already holding the name in *out (ref taken). */
static int insert(struct pending *p, struct pending **out)
{
	struct ptab *pt = p->m->pt;
	struct pending *cur;

	*out = p;
	if (!p->name)
		return 0;
	pthread_mutex_lock(&pt->lock);
	cur = lookup_locked(pt, p->parent, p->name);
	if (cur && pend_live(cur) && get_unless_zero(cur)) {
		*out = cur;
		pthread_mutex_unlock(&pt->lock);
		return 1;
	}
	if (cur)
		unlink_locked(pt, cur);	/* stale: a newer one takes the name */
	link_locked(pt, p);
	pthread_mutex_unlock(&pt->lock);
	return 0;
}

struct pending *pend_adopt(struct mfs *m, struct maru_file *f, uint64_t parent,
			   const char *name, uint64_t src_ino, int modified)
{
	struct pending *p = pend_new(m, f, parent, name, src_ino), *cur;

	if (!p) {
		maru_file_close(f);
		return NULL;
	}
	p->modified = modified;
	if (insert(p, &cur) == 1) {
		pend_put(p);
		p = cur;
	}
	return p;
}

struct pending *pend_find(struct mfs *m, uint64_t parent, const char *name)
{
	struct ptab *pt = m->pt;
	struct pending *p;

	pthread_mutex_lock(&pt->lock);
	p = lookup_locked(pt, parent, name);
	if (p && !(pend_live(p) && get_unless_zero(p)))
		p = NULL;
	pthread_mutex_unlock(&pt->lock);
	return p;
}

struct pending *pend_of_ino(struct mfs *m, uint64_t ino, int live)
{
	struct pending *p = itab_payload(m->tab, ino);

	if (p && live && !pend_live(p)) {
		pend_put(p);
		p = NULL;
	}
	return p;
}

void pend_link_ino(struct mfs *m, uint64_t ino, struct pending *p)
{
	itab_link(m->tab, ino, p);
}

void pend_rename(struct mfs *m, uint64_t op, const char *on, uint64_t np, const char *nn)
{
	struct ptab *pt = m->pt;
	struct pending *p;
	char *copy = strdup(nn);

	if (!copy)
		return;
	pthread_mutex_lock(&pt->lock);
	p = lookup_locked(pt, op, on);
	if (p) {
		unlink_locked(pt, p);
		free(p->name);
		p->name = copy;
		copy = NULL;
		p->parent = np;
		link_locked(pt, p);
	}
	pthread_mutex_unlock(&pt->lock);
	free(copy);
}

void pend_detach_name(struct mfs *m, uint64_t parent, const char *name)
{
	struct ptab *pt = m->pt;
	struct pending *p;

	pthread_mutex_lock(&pt->lock);
	p = lookup_locked(pt, parent, name);
	if (p) {
		__atomic_store_n(&p->unlinked, 1, __ATOMIC_RELEASE);
		unlink_locked(pt, p);
	}
	pthread_mutex_unlock(&pt->lock);
}

size_t pend_count(struct mfs *m)
{
	size_t n;

	pthread_mutex_lock(&m->pt->lock);
	n = m->pt->count;
	pthread_mutex_unlock(&m->pt->lock);
	return n;
}

int pend_where(struct pending *p, uint64_t *parent, char *name, size_t len)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&p->m->pt->lock);
	if (p->name && strlen(p->name) < len) {
		*parent = p->parent;
		memcpy(name, p->name, strlen(p->name) + 1);
		rc = 0;
	}
	pthread_mutex_unlock(&p->m->pt->lock);
	return rc;
}

uint64_t pend_ino(const struct pending *p)
{
	return p->ino;
}

int pend_has_name(struct pending *p)
{
	int named;

	pthread_mutex_lock(&p->m->pt->lock);
	named = p->name != NULL;
	pthread_mutex_unlock(&p->m->pt->lock);
	return named;
}

/* ---- state ---- */

int pend_stale(const struct pending *p)
{
	return p->epoch != mfs_epoch(p->m);
}

int pend_live(struct pending *p)
{
	return !pend_stale(p) &&
	       __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PEND_PENDING;
}

/*
 * Readable: whatever became of p (published, failed, abandoned), its bytes
 * stay readable while its file is open, as an unlinked local file's do for
 * the descriptors that hold it. Under p->rw.
 */
int pend_readable_locked(const struct pending *p)
{
	return p->file && !pend_stale(p);
}

int pend_attr(struct pending *p, struct maru_attr *a)
{
	int rc = -ENOENT;

	pthread_rwlock_rdlock(&p->rw);
	/* marud does not know the size a shm writer reached: the file does */
	if (pend_readable_locked(p))
		rc = maru_file_attr(p->file, a);
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

int pend_ino_attr(struct mfs *m, uint64_t ino, struct maru_attr *a)
{
	struct pending *p = pend_of_ino(m, ino, 0);
	int rc;

	if (p) {
		rc = pend_attr(p, a);
		/* closed once published: the name's inode holds p's version
		 * now (the old one may live on under a lease, old size) */
		if (rc < 0 && __atomic_load_n(&p->published, __ATOMIC_ACQUIRE))
			ino = p->ino;
		pend_put(p);
		if (rc == 0)
			return 0;
	}
	return maru_getattr(m->c, ino, a);
}

/* ---- handle counts ---- */

static void attach(struct pending *p, int writer, int direct, int *h_active)
{
	pend_get(p);
	pthread_mutex_lock(&p->m->pt->lock);
	if (!direct)
		p->cached++;
	if (writer) {
		p->writers++;
		p->active++;
		*h_active = 1;
	} else {
		p->readers++;
		*h_active = 0;
	}
	pthread_mutex_unlock(&p->m->pt->lock);
}

/* Returns the handles left; *writers_left. The ref is the caller's to drop. */
static int detach(struct pending *p, int writer, int direct, int *h_active,
		  int *writers_left)
{
	int left;

	pthread_mutex_lock(&p->m->pt->lock);
	if (!direct)
		p->cached--;
	if (writer) {
		p->writers--;
		if (*h_active)
			p->active--;
		*h_active = 0;
	} else {
		p->readers--;
	}
	*writers_left = p->writers;
	left = p->writers + p->readers;
	pthread_mutex_unlock(&p->m->pt->lock);
	return left;
}

static int users(struct pending *p)
{
	int n;

	pthread_mutex_lock(&p->m->pt->lock);
	n = p->writers + p->readers;
	pthread_mutex_unlock(&p->m->pt->lock);
	return n;
}

static void counts(struct pending *p, int *writers, int *active)
{
	pthread_mutex_lock(&p->m->pt->lock);
	*writers = p->writers;
	*active = p->active;
	pthread_mutex_unlock(&p->m->pt->lock);
}

void pend_direct_wrote(struct pending *p)
{
	__atomic_store_n(&p->direct, 1, __ATOMIC_RELEASE);
}

int pend_cached_users(struct pending *p)
{
	int n;

	pthread_mutex_lock(&p->m->pt->lock);
	n = p->cached;
	pthread_mutex_unlock(&p->m->pt->lock);
	return n;
}

int pend_set_active(struct pending *p, int *h_active, int on)
{
	int active;

	pthread_mutex_lock(&p->m->pt->lock);
	if (on && !*h_active)
		p->active++;
	else if (!on && *h_active)
		p->active--;
	*h_active = on;
	active = p->active;
	pthread_mutex_unlock(&p->m->pt->lock);
	return active;
}

/* The rw lock orders these against close_file(), which closes a file only
 * when no handle is attached. */
int pend_attach_writer(struct pending *p, int direct, int *h_active)
{
	int rc = -EAGAIN;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p)) {
		attach(p, 1, direct, h_active);
		rc = 0;
	}
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

int pend_attach_reader(struct pending *p, int *h_active)
{
	int rc = -EAGAIN;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_readable_locked(p)) {
		attach(p, 0, 0, h_active);
		rc = 0;
	}
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

/* ---- publish, abandon, close ---- */

/* Never publish p; handles still attached keep reading it (close_file). */
static void abandon_locked(struct pending *p)
{
	if (p->file && users(p) == 0) {
		maru_file_close(p->file);
		p->file = NULL;
	}
	__atomic_store_n(&p->state, PEND_DEAD, __ATOMIC_RELEASE);
	CNT_INC(p->m, abandons);
}

void pend_fail(struct pending *p, int err)
{
	int expect = PEND_PENDING;

	if (__atomic_compare_exchange_n(&p->state, &expect, PEND_FAILED, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		p->err = err;
}

/*
 * A new file (no version it replaces) whose bytes all came through the
 * kernel: the inode its create handed the kernel is the version published,
 * and the pages the kernel cached are its bytes. Nothing on this mount to
 * invalidate but the attributes publishing changed (blocks, times), and no
 * event to wait for: the other mounts acknowledged it before marud answered
 * (and events.c leaves the entry alone when it comes back).
 */
static int fresh_file(struct pending *p)
{
	return !p->src_ino && !__atomic_load_n(&p->mapped, __ATOMIC_ACQUIRE);
}

/* No handle uses p any more: drop its lease (or abandon it, if pending). */
static void close_file(struct pending *p)
{
	pthread_rwlock_wrlock(&p->rw);
	if (users(p) > 0) {
		/* a handle attached after the caller counted */
		pthread_rwlock_unlock(&p->rw);
		return;
	}
	if (p->file) {
		if (p->state == PEND_PENDING || p->state == PEND_FAILED)
			CNT_INC(p->m, abandons);
		/* a new file's lease on what it published: for the next open
		 * of the inode the kernel has (fresh_file()) */
		if (p->state == PEND_PUBLISHED && fresh_file(p) && !pend_stale(p))
			lcache_put(p->m->lc, p->ino, p->epoch, p->file);
		else
			maru_file_close(p->file);
		p->file = NULL;
	}
	__atomic_store_n(&p->state, PEND_DEAD, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&p->rw);
	unregister(p);
}

/*
 * Nothing to do at this finish: a writer attached after the caller counted
 * (it finishes the version when done), or the state does not publish. A
 * flush before any data arrived is most likely the shell closing the fd it
 * dup2()ed to stdout: publishing now would show an empty file first.
 * Release publishes a file nothing was written to. An unlinked file is
 * dropped at release too: a dup'd descriptor may still write and read it.
 */
static int finish_not_due(struct pending *p, int at_flush)
{
	int writers, active, st = p->state;

	counts(p, &writers, &active);
	if (at_flush ? active > 0 : writers > 0)
		return 1;
	if (st != PEND_PENDING && st != PEND_FAILED)
		return 1;
	return at_flush && st == PEND_PENDING && (!p->wrote || p->unlinked) &&
	       !pend_stale(p);
}

/*
 * Publish p (wrlock held); 1 when published, else abandoned with *rc.
 * marud's reply holds the directory as the publish left it: kept for the
 * kernel's next GETATTR of it (dattr.h), which every create there makes.
 */
static int publish_locked(struct pending *p, int *rc)
{
	struct dattr *da = p->m->da;
	uint64_t parent = p->parent, gen = dattr_gen(da, parent);
	struct maru_attr dir;

	/* tests: stop or fail marufs with the last writer's close in hand */
	*rc = FAILPOINT("marufs.flush.before_publish");
	if (*rc == 0)
		*rc = maru_file_publish_dir(p->file, &dir);
	/* a failed publish may have happened all the same: drop what is kept */
	if (*rc == 0 && dir.ino == parent)
		dattr_put(da, &dir, gen);
	else
		dattr_changed(da, *rc == 0 && dir.ino ? dir.ino : parent);
	if (*rc == 0) {
		__atomic_store_n(&p->published, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&p->state, PEND_PUBLISHED, __ATOMIC_RELEASE);
		CNT_INC(p->m, publishes);
		return 1;
	}
	CNT_INC(p->m, publish_failures);
	if (*rc == -ENOENT)
		log_debug("publish of version %" PRIu64 ": %s", p->ino, maru_strerror(*rc));
	else
		RATELOG_WARN("publish of version %" PRIu64 " failed, not published: %s%s",
			     p->ino, maru_strerror(*rc), *rc == -ESTALE ? " (EIO)" : "");
	abandon_locked(p);
	/* Name or directory removed while pending: like a local unlinked
	 * file, close() succeeds and nothing appears. */
	if (*rc == -ENOENT)
		*rc = 0;
	return 0;
}

/*
 * A new file written through direct_io descriptors left the kernel none of
 * its pages. If it is small, put its bytes there now, as the write-through
 * cache would have, so that reading it back here costs no READ: at publish,
 * when every write of the closing descriptor has returned (a store during a
 * WRITE would be dropped by the kernel as that write ends). FLUSH and
 * RELEASE hold no lock that storing pages takes.
 */
static void store_small(struct pending *p)
{
	uint64_t size = 0;
	char *buf = NULL;
	ssize_t n = -ENOENT;

	/* under p->rw: a reader's release may close the file meanwhile */
	pthread_rwlock_rdlock(&p->rw);
	if (pend_readable_locked(p))
		size = maru_file_size(p->file);
	if (size > 0 && size <= LCACHE_FILE_MAX && (buf = malloc(size)))
		n = file_read_full(p->file, buf, size, 0);
	pthread_rwlock_unlock(&p->rw);
	if (n > 0 && (uint64_t)n == size)
		notify_store(p->m->nt, p->ino, 0, buf, size);
	free(buf);
}

int pend_finish(struct pending *p, int at_flush)
{
	struct notifier *nt = p->m->nt;
	char name[MARU_NAME_MAX + 1];
	struct ev_expect *w = NULL;
	uint64_t parent;
	int rc = 0, published = 0, named, fresh;

	named = pend_where(p, &parent, name, sizeof(name)) == 0;
	fresh = named && fresh_file(p);
	pthread_rwlock_wrlock(&p->rw);
	if (finish_not_due(p, at_flush)) {
		pthread_rwlock_unlock(&p->rw);
		return 0;
	}
	if (pend_stale(p)) {
		rc = -EIO;
		RATELOG_WARN("close of version %" PRIu64 ": made before marud's pool "
			     "generation changed, not published: EIO", p->ino);
		abandon_locked(p);
	} else if (p->state == PEND_FAILED) {
		rc = p->err;
		RATELOG_WARN("close of version %" PRIu64 ": a write in it failed (%s), "
			     "not published", p->ino, maru_strerror(rc));
		abandon_locked(p);
	} else if (p->unlinked || p->killed || (p->src_ino && !p->modified)) {
		abandon_locked(p);
	} else {
		if (named && !fresh)
			w = notify_expect(nt, parent, name);
		published = publish_locked(p, &rc);
	}
	pthread_rwlock_unlock(&p->rw);
	unregister(p);
	if (!published) {
		notify_expect_cancel(nt, w);
		/* bytes a failed rewrite wrote sit in the old version's pages */
		if (p->src_ino && __atomic_load_n(&p->wrote, __ATOMIC_ACQUIRE))
			notify_inval_data(nt, p->src_ino);
		return rc == -ESTALE ? -EIO : rc;
	}
	/* a write made the kernel drop the size, times and blocks it had
	 * from the create: only a file never written keeps them */
	if (fresh) {
		if (!__atomic_load_n(&p->wrote, __ATOMIC_ACQUIRE))
			notify_inval_attr(nt, p->ino, 1);
		else if (__atomic_load_n(&p->direct, __ATOMIC_ACQUIRE))
			store_small(p);
		return 0;
	}
	/* Close-to-open: return once the publish event was applied here (and
	 * so, very nearly, on every mount). Without the event stream, at least
	 * this mount must drop the old inode a rewrite replaced. */
	if (!notify_expect_wait(nt, w, 1) && p->src_ino && named)
		notify_inval_entry(nt, parent, name, 1);
	return 0;
}

void pend_release(struct pending *p, int writer, int direct, int *h_active, int failed)
{
	int left, wl;

	if (failed)
		pend_fail(p, -EIO);
	left = detach(p, writer, direct, h_active, &wl);
	/* an unlinked file stays readable until its last reader closes */
	if (writer && wl == 0 && !(left > 0 && __atomic_load_n(&p->unlinked, __ATOMIC_ACQUIRE)))
		pend_finish(p, 0);
	if (left == 0)
		close_file(p);
	pend_put(p);
}

/*
 * Attach to p first, then leave old: a writer that stays on old (p was
 * published under us) never left it, so no other handle's close can find
 * old without users meanwhile and close its file, the bytes the writer's
 * private copy (rewrite.c) is made of.
 */
int pend_switch_writer(struct pending *old, struct pending *p, int direct, int *h_active)
{
	int active = 0, left, wl;

	if (pend_attach_writer(p, direct, &active) < 0)
		return -EAGAIN;	/* stay on old: the caller retries */
	left = detach(old, 1, direct, h_active, &wl);
	*h_active = active;
	return left;
}

void pend_let_go(struct pending *old, int left)
{
	if (left == 0)
		close_file(old);
	pend_put(old);
}

void pend_unpin(struct pending *p)
{
	int active = 0, wl;

	if (detach(p, 0, 0, &active, &wl) == 0)
		close_file(p);
	pend_put(p);
}

struct pending *pend_new_detached(struct mfs *m, struct maru_file *f, uint64_t parent,
				  uint64_t src_ino)
{
	struct pending *p = pend_new(m, f, parent, NULL, src_ino);

	if (p) {
		p->unlinked = 1;
		p->modified = 1;
	}
	return p;
}
