// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route_io.c: the file calls of a routed client (route.h):
 * create and open go to the name's owner (open also asks where the name
 * was placed before), calls by id to the id's pool; readdir merges the
 * pools (its cookie: the pool's slot + 1 in the top 8 bits, that pool's
 * cookie below; files from every pool, directories from the first that
 * answers; a pool out of reach lists nothing), and
 * rename, one pool's atomic rename when both names have one owner, else a
 * move: the version's bytes are copied into a new version under the new
 * name on the new owner, published, and only then is the old name
 * unlinked, so a reader sees the old name or the new one, never neither
 * and never a partial file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client_priv.h"
#include "route_priv.h"

#define MOVE_CHUNK	(1u << 20)

int route_file_create(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
		      uint64_t size_hint, struct maru_file **out)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	struct maru_client *sub;
	uint64_t l;
	int rc, slot = -1, again = 1;

	rc = route_name_path(r, parent, name, dir, path);
	do {
		if (!rc)
			rc = route_new_at(r, parent, path, &slot, &sub, &l);
		if (!rc)
			rc = r->ops->file_create(sub, l, name, mode, uid, gid, flags, size_hint,
						 out);
		/* the pool restarted: its id of parent is old; walk there again */
		if (rc != -ESTALE || slot < 0 || !again--)
			return rc;
		route_dir_local_set(r, parent, (unsigned int)slot, 0);
		rc = 0;
	} while (1);
}

static int open_at(struct route *r, int slot, uint64_t parent, const char *name,
		   struct maru_file **out)
{
	struct maru_client *sub;
	uint64_t l;
	int rc = route_at(r, slot, parent, &sub, &l);

	if (!rc)
		rc = r->ops->file_open(sub, l, name, out);
	if (rc == -ESTALE) {	/* the pool restarted: walk to parent again */
		route_dir_local_set(r, parent, (unsigned int)slot, 0);
		rc = route_at(r, slot, parent, &sub, &l);
		if (!rc)
			rc = r->ops->file_open(sub, l, name, out);
	}
	return rc == -ENOTDIR ? -ENOENT : rc;
}

int route_file_open(struct maru_client *c, uint64_t parent, const char *name,
		    struct maru_file **out)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], path[MARU_PATH_MAX];
	int o, p, rc;

	rc = route_name_path(r, parent, name, dir, path);
	if (!rc)
		rc = route_owner(r, path, &o, &p);
	if (!rc)
		rc = open_at(r, o, parent, name, out);
	if (rc == -ENOENT && p != o) {
		rc = open_at(r, p, parent, name, out);
		if (!rc)
			atomic_fetch_add(&r->prev_hits, 1);
	}
	return rc;
}

int route_file_rewrite(struct maru_client *c, uint64_t ino, unsigned int flags,
		       uint64_t size_hint, struct maru_file **out)
{
	struct route *r = c->route;
	struct maru_client *sub;
	int slot = route_slot_of(ino), rc;

	if (slot < 0)
		return -EISDIR;
	rc = route_sub(r, (unsigned int)slot, &sub);
	return rc ? rc : r->ops->file_rewrite(sub, ino & ROUTE_LOCAL_MASK, flags, size_hint, out);
}

int route_file_open_ino(struct maru_client *c, uint64_t ino, struct maru_file **out)
{
	struct route *r = c->route;
	struct maru_client *sub;
	int slot = route_slot_of(ino), rc;

	if (slot < 0)
		return -EISDIR;
	rc = route_sub(r, (unsigned int)slot, &sub);
	return rc ? rc : r->ops->file_open_ino(sub, ino & ROUTE_LOCAL_MASK, out);
}

int route_pin(struct maru_client *c, uint64_t ino, uint32_t seconds, int query)
{
	struct route *r = c->route;
	struct maru_client *sub;
	int slot = route_slot_of(ino), rc;

	if (slot < 0)
		return -EISDIR;
	rc = route_sub(r, (unsigned int)slot, &sub);
	if (rc)
		return rc;
	return query ? r->ops->pin_get(sub, ino & ROUTE_LOCAL_MASK)
		     : r->ops->pin_set(sub, ino & ROUTE_LOCAL_MASK, seconds);
}

/*
 * A lease a pool's client kept is found there by its (tagged) id; count,
 * clear and expire go to every pool connected.
 */
int route_lease_cache(struct maru_client *c, int what, uint64_t ino, struct maru_file **out)
{
	struct route *r = c->route;
	unsigned int s[ROUTE_POOLS];
	struct maru_client *sub;
	int slot = route_slot_of(ino), n, i, sum = 0;

	if (what == ROUTE_LC_TAKE || what == ROUTE_LC_DROP) {
		if (slot < 0 || route_sub(r, (unsigned int)slot, &sub))
			return -ENOENT;
		/* kept by maru_file_ino(), the tagged id */
		if (what == ROUTE_LC_DROP) {
			r->ops->lc_drop(sub, ino);
			return 0;
		}
		return r->ops->lc_take(sub, ino, out);
	}
	n = route_members(r, s, ROUTE_POOLS);
	for (i = 0; i < n; i++) {
		if (route_sub(r, s[i], &sub))
			continue;
		if (what == ROUTE_LC_CLEAR)
			r->ops->lc_clear(sub);
		else if (what == ROUTE_LC_EXPIRE)
			r->ops->lc_expire(sub);
		else
			sum += (int)r->ops->lc_count(sub);
	}
	return sum;
}

/* ---- readdir ---- */

struct merge {
	struct route *r;
	unsigned int slot;
	int first;		/* this pool lists the directories */
	int any;		/* this pool listed an entry */
	const char *dir;	/* the directory's path */
	maru_readdir_cb cb;
	void *arg;
	int stopped;
};

static int merge_one(void *arg, const struct maru_dirent *de)
{
	struct merge *m = arg;
	struct maru_dirent d = *de;
	char name[MARU_NAME_MAX + 1], path[MARU_PATH_MAX];

	if ((de->mode & S_IFMT) == S_IFDIR) {
		if (!m->first)
			return 0;
		memcpy(name, de->name, de->namelen);
		name[de->namelen] = '\0';
		if (route_join(m->dir, name, path, sizeof(path)))
			return 0;
		d.ino = route_dir_intern(m->r, path);
		if (!d.ino)
			return 0;
	} else {
		d.ino = route_tag(m->slot, de->ino);
	}
	d.cookie = route_tag(m->slot, de->cookie & ROUTE_LOCAL_MASK);
	m->any = 1;
	m->stopped = m->cb(m->arg, &d);
	return m->stopped;
}

/* errors of a pool that cannot be reached (or lacks the directory) */
static int away(int rc)
{
	return rc == -ENOENT || rc == -ETIMEDOUT || rc == -ECONNREFUSED || rc == -EHOSTUNREACH ||
	       rc == -ENETUNREACH || rc == -ECONNRESET || rc == -ESTALE || rc == -EIO;
}

int route_readdir(struct maru_client *c, uint64_t dir, uint64_t cookie,
		  maru_readdir_cb cb, void *arg)
{
	struct route *r = c->route;
	struct merge m = { .r = r, .cb = cb, .arg = arg };
	char path[MARU_PATH_MAX];
	unsigned int s[ROUTE_POOLS];
	int from = route_slot_of(cookie), n, i, rc, dirs_done = 0;
	struct maru_client *sub;
	uint64_t l;

	rc = route_dir_path(r, dir, path, sizeof(path));
	if (rc)
		return rc;
	m.dir = path;
	n = route_members(r, s, ROUTE_POOLS);
	for (i = 0; i < n && !m.stopped; i++) {
		rc = route_dir_on(r, dir, s[i], 0, &l);
		if (!rc)
			rc = route_sub(r, s[i], &sub);
		/* a pool before the cookie's listed the directories if it could */
		if ((int)s[i] < from) {
			dirs_done |= !rc;
			continue;
		}
		m.slot = s[i];
		m.first = !dirs_done;
		m.any = 0;
		if (!rc)
			rc = r->ops->readdir(sub, l, (int)s[i] == from ? cookie & ROUTE_LOCAL_MASK : 0,
					     merge_one, &m);
		dirs_done |= !rc || m.any;
		/* a pool out of reach lists nothing: its names are misses */
		if (rc && !away(rc))
			return rc;
	}
	return 0;
}

/* ---- rename ---- */

/* Copy the bytes of lease f into pending w. */
static int copy_bytes(struct maru_file *f, struct maru_file *w, uint64_t size)
{
	char *buf = malloc(MOVE_CHUNK);
	uint64_t off = 0;
	ssize_t n, k;

	if (!buf)
		return -ENOMEM;
	while (off < size) {
		n = maru_file_pread(f, buf, MOVE_CHUNK, off);
		if (n <= 0) {
			free(buf);
			return n < 0 ? (int)n : -EIO;
		}
		k = maru_file_pwrite(w, buf, (size_t)n, off);
		if (k != n) {
			free(buf);
			return k < 0 ? (int)k : -EIO;
		}
		off += (uint64_t)n;
	}
	free(buf);
	return 0;
}

struct move {
	int from, to;
	uint64_t odir, ndir;	/* the directories on those pools */
	const char *on, *nn;
	unsigned int flags;
};

/* A file's version to another pool, published under the new name. */
static int move_file(struct route *r, const struct move *mv, const struct maru_attr *a)
{
	struct maru_client *src, *dst;
	struct maru_file *f, *w;
	int rc;

	rc = route_sub(r, (unsigned int)mv->from, &src);
	if (!rc)
		rc = route_sub(r, (unsigned int)mv->to, &dst);
	if (!rc)
		rc = r->ops->file_open(src, mv->odir, mv->on, &f);
	if (rc)
		return rc;
	rc = r->ops->file_create(dst, mv->ndir, mv->nn, a->mode, a->uid, a->gid,
				 mv->flags & MARU_RENAME_NOREPLACE ? MARU_CREATE_EXCL : 0,
				 maru_file_size(f), &w);
	if (!rc) {
		rc = copy_bytes(f, w, maru_file_size(f));
		if (!rc)
			rc = maru_file_publish(w);
		maru_file_close(w);
	}
	if (!rc)
		atomic_fetch_add(&r->bytes_moved, maru_file_size(f));
	maru_file_close(f);
	return rc;
}

/*
 * A symlink to another pool: made under a name of its own there, then
 * renamed onto the new name, which it replaces as rename(2) does (a
 * symlink is never made over a bound name).
 */
static int move_link(struct route *r, const struct move *mv, const struct maru_attr *a)
{
	struct maru_client *src, *dst;
	char target[MARU_PATH_MAX], tmp[64];
	struct timespec ts;
	int rc;

	rc = route_sub(r, (unsigned int)mv->from, &src);
	if (!rc)
		rc = route_sub(r, (unsigned int)mv->to, &dst);
	if (!rc)
		rc = r->ops->readlink(src, a->ino, target, sizeof(target));
	if (rc < 0)
		return rc;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(tmp, sizeof(tmp), ".maru-mv.%d.%llx.%lx", (int)getpid(),
		 (unsigned long long)ts.tv_sec, (long)ts.tv_nsec);
	rc = r->ops->symlink(dst, mv->ndir, tmp, target, a->uid, a->gid, NULL);
	if (rc)
		return rc;
	rc = r->ops->rename_seq(dst, mv->ndir, tmp, mv->ndir, mv->nn,
				 mv->flags & MARU_RENAME_NOREPLACE, NULL);
	if (rc)
		r->ops->unlink(dst, mv->ndir, tmp);
	return rc;
}

/* The names have different owners: move, then unlink the old name. */
static int rename_across(struct route *r, const struct move *mv, const struct maru_attr *a)
{
	struct maru_client *src;
	int rc;

	if (S_ISREG(a->mode))
		rc = move_file(r, mv, a);
	else if (S_ISLNK(a->mode))
		rc = move_link(r, mv, a);
	else
		rc = -EXDEV;
	if (rc)
		return rc;
	atomic_fetch_add(&r->renames_moved, 1);
	rc = route_sub(r, (unsigned int)mv->from, &src);
	if (!rc)
		rc = r->ops->unlink(src, mv->odir, mv->on);
	return rc == -ENOENT ? 0 : rc;
}

/*
 * The new name replaced what it named at its owner; while placement
 * settles after a join or a drain, the name may also be bound where it was
 * placed before, which would list it twice: that binding goes too.
 */
static void drop_shadow(struct route *r, uint64_t np, const char *nn, const char *npath,
			int to)
{
	struct maru_client *sub;
	int o, p;
	uint64_t l;

	if (route_owner(r, npath, &o, &p) || p == o || p == to)
		return;
	if (!route_dir_on(r, np, (unsigned int)p, 0, &l) && !route_sub(r, (unsigned int)p, &sub))
		r->ops->unlink(sub, l, nn);
}

int route_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
		     const char *nn, unsigned int flags, uint64_t *seq)
{
	struct route *r = c->route;
	char dir[MARU_PATH_MAX], opath[MARU_PATH_MAX], npath[MARU_PATH_MAX];
	struct move mv = { .on = on, .nn = nn, .flags = flags };
	struct maru_client *dst;
	struct maru_attr a;
	int rc;

	if (seq)
		*seq = 0;
	rc = route_name_path(r, op, on, dir, opath);
	if (!rc)
		rc = route_name_path(r, np, nn, dir, npath);
	if (!rc)
		rc = route_find(r, op, on, opath, &mv.from, &a);
	if (rc)
		return rc;
	/* a directory's names are placed by its path: mv(1) copies on EXDEV */
	if (a.state == MARU_STATE_DIR)
		return -EXDEV;
	rc = route_dir_on(r, op, (unsigned int)mv.from, 0, &mv.odir);
	if (!rc)
		rc = route_new_at(r, np, npath, &mv.to, &dst, &mv.ndir);
	if (rc)
		return rc;
	if (mv.to != mv.from && a.state == MARU_STATE_PENDING) {
		/* its bytes are still being written here: a copy now would
		 * publish part of them, and the writer's close would publish
		 * into a name that went */
		clog_warnx(r->self, "rename of %s to %s refused (EBUSY): the file is still "
			   "open for writing and the new name belongs to another pool; "
			   "close it first", opath, npath);
		return -EBUSY;
	}
	if (mv.to != mv.from) {
		rc = rename_across(r, &mv, &a);
	} else {
		atomic_fetch_add(&r->renames_local, 1);
		rc = r->ops->rename_seq(dst, mv.odir, on, mv.ndir, nn, flags, NULL);
	}
	if (!rc)
		drop_shadow(r, np, nn, npath, mv.to);
	return rc;
}
