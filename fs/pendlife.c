/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pendlife.c: the life of a pending version (pending.c draws its
 * states) with handles on it: handles attach and leave; the last active
 * writer's flush, or else the last writer's release, finishes it: publish
 * once data was written, never after a failed write, for an orphaned name,
 * a killed writer or an untouched rewrite copy (abandon); the last handle
 * gone closes its file. Locks as pending.c says.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dattr.h"
#include "failpoint.h"
#include "fileio.h"
#include "log.h"
#include "notify.h"
#include "pending_priv.h"
#include "ratelog.h"

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
	pend_move(p, PEND_ABANDONED);
	CNT_INC(p->m, abandons);
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
	return !p->src_ino && !pend_marked(p, PM_MAPPED);
}

/* No handle uses p any more: drop its lease (or abandon it, if pending). */
static void close_file(struct pending *p)
{
	int st;

	pthread_rwlock_wrlock(&p->rw);
	if (users(p) > 0) {
		/* a handle attached after the caller counted */
		pthread_rwlock_unlock(&p->rw);
		return;
	}
	st = pend_state_of(p);
	if (p->file) {
		if (st != PEND_PUBLISHED && st != PEND_ABANDONED)
			CNT_INC(p->m, abandons);
		/* a new file's lease on what it published: for the next open
		 * of the inode the kernel has (fresh_file()) */
		if (st == PEND_PUBLISHED && fresh_file(p) && !pend_stale(p) && p->m->lc)
			maru_lease_cache_put(p->file);
		else
			maru_file_close(p->file);
		p->file = NULL;
	}
	if (st != PEND_PUBLISHED)
		pend_move(p, PEND_ABANDONED);	/* refused if abandoned already */
	pthread_rwlock_unlock(&p->rw);
	pend_unregister(p);
}

/*
 * Nothing to do at this finish: a writer attached after the caller counted
 * (it finishes the version when done), or the state does not publish. A
 * flush before any data arrived is most likely the shell closing the fd it
 * dup2()ed to stdout: publishing now would show an empty file first.
 * Release publishes a file nothing was written to. An orphaned file is
 * dropped at release too: a dup'd descriptor may still write and read it.
 */
static int finish_not_due(struct pending *p, int at_flush)
{
	int writers, active, st = pend_state_of(p);

	counts(p, &writers, &active);
	if (at_flush ? active > 0 : writers > 0)
		return 1;
	if (st == PEND_PUBLISHED || st == PEND_ABANDONED)
		return 1;
	return at_flush && (st == PEND_WRITING || st == PEND_ORPHANED) &&
	       (!pend_marked(p, PM_WROTE) || st == PEND_ORPHANED) && !pend_stale(p);
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
	/* a failed publish may have happened all the same: drop what is kept;
	 * attr_size 0: the directory as this mount shows it did not change
	 * (a cluster's, whose attributes another pool gives) */
	if (*rc == 0 && dir.ino == parent && dir.attr_size == 0)
		;
	else if (*rc == 0 && dir.ino == parent)
		dattr_put(da, &dir, gen);
	else
		dattr_changed(da, *rc == 0 && dir.ino ? dir.ino : parent);
	if (*rc == 0) {
		pend_move(p, PEND_PUBLISHED);
		CNT_INC(p->m, publishes);
		return 1;
	}
	CNT_INC(p->m, publish_failures);
	if (*rc == -ENOENT)
		log_debug("publish of version %" PRIu64 ": %s", p->ino, maru_strerror(*rc));
	else if (*rc == -ETIMEDOUT || *rc == -EINTR)
		/* libmaru asked again while the bound allowed: no answer at all */
		RATELOG_WARN("publish of version %" PRIu64 " (in directory %" PRIu64 "): "
			     "no answer from marud (%s); if the request reached it the file "
			     "is published, else not: look the name up", p->ino, parent,
			     maru_strerror(*rc));
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
	if (size > 0 && size <= MARU_LEASE_CACHE_FILE_MAX && (buf = malloc(size)))
		n = file_read_full(p->file, buf, size, 0);
	pthread_rwlock_unlock(&p->rw);
	if (n > 0 && (uint64_t)n == size)
		notify_store(p->m->nt, p->ino, 0, buf, size);
	free(buf);
}

/* Decide p's end (wrlock held): publish, or abandon with *rc; 1 if published. */
static int finish_locked(struct pending *p, struct ev_expect **w, uint64_t parent,
			 const char *name, int *rc)
{
	int st = pend_state_of(p);

	if (pend_stale(p)) {
		*rc = -EIO;
		RATELOG_WARN("close of version %" PRIu64 ": made before marud's pool "
			     "generation changed, not published: EIO", p->ino);
	} else if (st == PEND_FAILED) {
		*rc = p->err ? p->err : -EIO;
		RATELOG_WARN("close of version %" PRIu64 ": a write in it failed (%s), "
			     "not published", p->ino, maru_strerror(*rc));
	} else if (st == PEND_ORPHANED || pend_marked(p, PM_KILLED) ||
		   (p->src_ino && !pend_marked(p, PM_MODIFIED))) {
		*rc = 0;
	} else {
		if (name)
			*w = notify_expect(p->m->nt, parent, name);
		return publish_locked(p, rc);
	}
	abandon_locked(p);
	return 0;
}

int pend_finish(struct pending *p, int at_flush)
{
	struct notifier *nt = p->m->nt;
	char name[MARU_NAME_MAX + 1];
	struct ev_expect *w = NULL;
	uint64_t parent = 0;
	int rc = 0, published, named, fresh;

	named = pend_where(p, &parent, name, sizeof(name)) == 0;
	fresh = named && fresh_file(p);
	pthread_rwlock_wrlock(&p->rw);
	if (finish_not_due(p, at_flush)) {
		pthread_rwlock_unlock(&p->rw);
		return 0;
	}
	published = finish_locked(p, &w, parent, named && !fresh ? name : NULL, &rc);
	pthread_rwlock_unlock(&p->rw);
	pend_unregister(p);
	if (!published) {
		notify_expect_cancel(nt, w);
		/* bytes a failed rewrite wrote sit in the old version's pages */
		if (p->src_ino && pend_marked(p, PM_WROTE))
			notify_inval_data(nt, p->src_ino);
		return rc == -ESTALE ? -EIO : rc;
	}
	/* a write made the kernel drop the size, times and blocks it had
	 * from the create: only a file never written keeps them */
	if (fresh) {
		if (!pend_marked(p, PM_WROTE))
			notify_inval_attr(nt, p->ino, 1);
		else if (pend_marked(p, PM_DIRECT))
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
		pend_fail(p, -EIO, "the end of a handle (a writable mapping gone with it, or shutdown)");
	left = detach(p, writer, direct, h_active, &wl);
	/* an orphaned file stays readable until its last reader closes */
	if (writer && wl == 0 && !(left > 0 && pend_state_of(p) == PEND_ORPHANED))
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

struct pending *pend_pin_name(struct mfs *m, uint64_t parent, const char *name,
			      uint64_t ino)
{
	struct pending *p = pend_of_name(m, parent, name);
	int active = 0, rc = -ESTALE;

	/* a reader attached to this mount's pending keeps its bytes open */
	if (p && p->ino == ino)
		rc = pend_attach_reader(p, &active);
	if (p)
		pend_put(p);	/* the reader's ref stays */
	return rc == 0 ? p : NULL;
}
