/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pending.c: the pending version, marufs's one open-file object. A
 * struct pending is one new version of a file being written (a maru_file
 * still pending), shared by every handle that writes the same name, found
 * by (parent, name) in this mount's table or by the kernel's inode through
 * the inode table. This file holds its references, its name, its state and
 * the one test of whether its bytes are readable. The rest of the object:
 * pendlife.c (handles attached, finish, publish, close), pendio.c (I/O on
 * its file), rewrite.c (where a version comes from) and pendslot.c (the
 * seat of one handle on it, which is all handle.c sees).
 *
 * Its states (enum pend_state), moved only by pend_move():
 *
 *       open, create, copy-on-write
 *                 |
 *                 v          name unlinked or renamed over
 *   +--------- WRITING ---------------------------------> ORPHANED
 *   |             |   \  a write fails       a write fails  /    |
 *   |             |    `------------> FAILED <-------------'     |
 *   |             |                     |                        |
 *   | finish:     | finish: killed,     | finish or              | finish or
 *   | marud       | stale, untouched    | last handle gone       | last handle
 *   | published   | rewrite, publish    |                        | gone
 *   | it          | refused; last       v                        |
 *   |             `--------------> ABANDONED <-------------------'
 *   v
 * PUBLISHED <------ (*) from FAILED or ORPHANED too
 *
 * (*) a publish already under way (p->rw held for writing) when the name
 * went, or a dying handle failed it, wins: marud published it, and what the
 * name holds is what the state must say. Names and handle failures move
 * the state under pt->lock or no lock at all, never under p->rw.
 *
 * PUBLISHED and ABANDONED are final. In either, handles still attached
 * read the bytes until the last goes (the file closes then, or its lease
 * is kept in libmaru's lease cache for a new file). Any state can be stale:
 * made before the marud of its file's pool restarted (mfs_id_epoch() moved;
 * on a cluster mount only that pool's), every use fails with EIO.
 *
 * Locks, outermost first: p->rw (rdlock: I/O on p->file; wrlock: a state
 * change that publishes or closes the file), then pt->lock (the name table,
 * names, and the handle counts of every pending), then inode.c's table
 * lock. refs, state and marks are atomic. No libmaru call is made under
 * pt->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pending_priv.h"
#include "ratelog.h"

/* The name table's hash of a pending: of the name it is in the table by. */
static uint32_t pend_name_hash(uintptr_t item)
{
	const struct pending *p = (const struct pending *)item;

	return (uint32_t)name_hash(p->parent, p->name);
}

int ptab_new(struct ptab **out)
{
	struct ptab *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return -ENOMEM;
	if (htab_init(&pt->names, PTAB_MIN, pend_name_hash, HTAB_BULK)) {
		free(pt);
		return -ENOMEM;
	}
	pthread_mutex_init(&pt->lock, NULL);
	*out = pt;
	return 0;
}

/* Every pending is gone by now: the inode table dropped its links. */
void ptab_free(struct ptab *pt)
{
	if (!pt)
		return;
	htab_fini(&pt->names);
	pthread_mutex_destroy(&pt->lock);
	free(pt);
}

/* ---- states ---- */

#define EDGE(to)	(1u << (to))

/* The diagram above, edge by edge: legal[from] has a bit per target. */
static const unsigned int legal[PEND_NSTATES] = {
	[PEND_WRITING] = EDGE(PEND_ORPHANED) | EDGE(PEND_FAILED) | EDGE(PEND_PUBLISHED) |
			 EDGE(PEND_ABANDONED),
	[PEND_ORPHANED] = EDGE(PEND_FAILED) | EDGE(PEND_ABANDONED) | EDGE(PEND_PUBLISHED),
	[PEND_FAILED] = EDGE(PEND_ABANDONED) | EDGE(PEND_PUBLISHED),
	[PEND_PUBLISHED] = 0,
	[PEND_ABANDONED] = 0,
};

static const char *const state_names[PEND_NSTATES] = {
	"writing", "orphaned", "failed", "published", "abandoned",
};

const char *pend_state_name(int state)
{
	return state >= 0 && state < PEND_NSTATES ? state_names[state] : "?";
}

int pend_move_legal(int from, int to)
{
	if (from < 0 || from >= PEND_NSTATES || to < 0 || to >= PEND_NSTATES)
		return 0;
	return (legal[from] & EDGE(to)) != 0;
}

int pend_move(struct pending *p, int to)
{
	int from = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);

	/* a failed compare reloads from: the check runs on what is there */
	do {
		if (!pend_move_legal(from, to)) {
			log_debug("version %" PRIu64 ": no move %s -> %s", p->ino,
				  pend_state_name(from), pend_state_name(to));
			return -EINVAL;
		}
	} while (!__atomic_compare_exchange_n(&p->state, &from, to, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return 0;
}

int pend_state_of(const struct pending *p)
{
	return __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
}

void pend_mark(struct pending *p, unsigned int marks)
{
	__atomic_or_fetch(&p->marks, marks, __ATOMIC_ACQ_REL);
}

void pend_unmark(struct pending *p, unsigned int marks)
{
	__atomic_and_fetch(&p->marks, ~marks, __ATOMIC_ACQ_REL);
}

int pend_marked(const struct pending *p, unsigned int mark)
{
	return (__atomic_load_n(&p->marks, __ATOMIC_ACQUIRE) & mark) != 0;
}

int pend_stale(const struct pending *p)
{
	return p->epoch != mfs_id_epoch(p->m, p->ino);
}

int pend_live(struct pending *p)
{
	int st = pend_state_of(p);

	return !pend_stale(p) && (st == PEND_WRITING || st == PEND_ORPHANED);
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

void pend_fail(struct pending *p, int err, const char *what)
{
	/* err first: a writer that sees FAILED reads it (pend_io_begin) */
	int expect = 0, was = pend_state_of(p);
	char name[MARU_NAME_MAX + 1];
	uint64_t parent = 0;

	/* an interrupted call says EINTR; the close of what it cut says EIO */
	if (err == -EINTR)
		err = -EIO;
	__atomic_compare_exchange_n(&p->err, &expect, err, 0, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	if (pend_move(p, PEND_FAILED) || was == PEND_FAILED)
		return;
	/* once per version: the file, what failed and why; close says it too */
	if (pend_where(p, &parent, name, sizeof(name)))
		snprintf(name, sizeof(name), "(unlinked)");
	RATELOG_WARN("%s (version %" PRIu64 ", directory %" PRIu64 "): %s failed: %s; "
		     "the version is abandoned, never published, and its close and "
		     "fsync return the error", name, p->ino, parent, what,
		     maru_strerror(err));
}

int pend_failed_err(const struct pending *p)
{
	int err = __atomic_load_n(&p->err, __ATOMIC_ACQUIRE);

	if (pend_state_of(p) != PEND_FAILED)
		return 0;
	return err ? err : -EIO;
}

int pend_err_poisons(int err)
{
	/* a refusal marud gave before touching the version leaves it whole */
	return err != -EINVAL && err != -EFBIG && err != -EPERM && err != -EBADF &&
	       err != -EOPNOTSUPP && err != 0;
}

uint64_t pend_ino(const struct pending *p)
{
	return p->ino;
}

/* ---- references and the name table ---- */

struct pend_key {
	uint64_t parent;
	const char *name;
};

static int pend_is(uintptr_t item, const void *key)
{
	const struct pending *p = (const struct pending *)item;
	const struct pend_key *k = key;

	return p->parent == k->parent && strcmp(p->name, k->name) == 0;
}

static struct pending *lookup_locked(struct ptab *pt, uint64_t parent, const char *name)
{
	struct pend_key k = { parent, name };

	return (struct pending *)htab_find(&pt->names, (uint32_t)name_hash(parent, name),
					   pend_is, &k);
}

static void unlink_locked(struct ptab *pt, struct pending *p)
{
	if (!p->in_table)
		return;
	htab_del(&pt->names, (uintptr_t)p);
	p->in_table = 0;
	pt->count--;
}

/*
 * Give p its name in the table. Out of memory, p stays out of it: still a
 * working pending, only not shared with a later open of the name (as one
 * with no name). After an unlink_locked() there is always room.
 */
static void link_locked(struct ptab *pt, struct pending *p)
{
	if (htab_reserve(&pt->names))
		return;
	htab_place(&pt->names, (uintptr_t)p, (uint32_t)name_hash(p->parent, p->name));
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

void pend_unregister(struct pending *p)
{
	pthread_mutex_lock(&p->m->pt->lock);
	unlink_locked(p->m->pt, p);
	pthread_mutex_unlock(&p->m->pt->lock);
}

void pend_get(struct pending *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
}

void pend_put(struct pending *p)
{
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pend_unregister(p);
	if (p->file)
		maru_file_close(p->file);
	pthread_rwlock_destroy(&p->rw);
	free(p->name);
	free(p);
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
	p->epoch = mfs_id_epoch(m, p->ino);
	p->state = PEND_WRITING;
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
	if (modified)
		pend_mark(p, PM_MODIFIED);
	if (insert(p, &cur) == 1) {
		pend_put(p);
		p = cur;
	}
	return p;
}

struct pending *pend_of_name(struct mfs *m, uint64_t parent, const char *name)
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

/* Name unlinked (or renamed over): its pending must never be published. */
static void detach_name_locked(struct ptab *pt, uint64_t parent, const char *name)
{
	struct pending *p = lookup_locked(pt, parent, name);

	if (p) {
		pend_move(p, PEND_ORPHANED);	/* refused unless still writing */
		unlink_locked(pt, p);
	}
}

void pend_unlinked(struct mfs *m, uint64_t parent, const char *name)
{
	pthread_mutex_lock(&m->pt->lock);
	detach_name_locked(m->pt, parent, name);
	pthread_mutex_unlock(&m->pt->lock);
}

void pend_renamed(struct mfs *m, uint64_t op, const char *on, uint64_t np, const char *nn)
{
	struct ptab *pt = m->pt;
	struct pending *p;
	char *copy = strdup(nn);

	pthread_mutex_lock(&pt->lock);
	/* whatever this mount was writing at the target lost its name */
	detach_name_locked(pt, np, nn);
	p = copy ? lookup_locked(pt, op, on) : NULL;
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

int pend_has_name(struct pending *p)
{
	int named;

	pthread_mutex_lock(&p->m->pt->lock);
	named = p->name != NULL;
	pthread_mutex_unlock(&p->m->pt->lock);
	return named;
}

/* ---- attributes ---- */

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
		if (rc < 0 && pend_state_of(p) == PEND_PUBLISHED)
			ino = p->ino;
		pend_put(p);
		if (rc == 0)
			return 0;
	}
	return maru_getattr(m->c, ino, a);
}

struct pending *pend_lookup(struct mfs *m, uint64_t parent, const char *name,
			    struct maru_attr *a)
{
	struct pending *p = pend_of_name(m, parent, name);

	if (p)
		pend_attr(p, a);
	return p;
}

uint64_t pend_live_version(struct mfs *m, uint64_t ino)
{
	struct pending *p = pend_of_ino(m, ino, 1);
	uint64_t v = 0;

	if (p) {
		v = p->ino;
		pend_put(p);
	}
	return v;
}
