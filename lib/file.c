/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/file.c: struct maru_file, a lease on a published version or the
 * ownership of a pending one. Opening calls (create, rewrite, open,
 * open_ino) return a handle holding the version's attributes and extents;
 * I/O checks the handle (stale generation, pending, bounds), reserves room
 * for a write, makes sure the session is alive before a direct data path
 * touches pool memory, and only then hands the transfer to the client's
 * data path (dp/datapath.h); publish and close are plain requests. These
 * decisions are made here, once per call, and never inside a data path,
 * and so is what follows every transfer: the hole a direct path leaves
 * before a write or a truncate past the size is zero-filled (fill_gap),
 * the size moves, the bytes are counted per path (count_io), and what a
 * path keeps on the handle is dropped at publish and close (file_forget).
 *
 * Size: with a direct path (shm, rdma) the handle is authoritative for a
 * pending version's size until publish (bytes go straight into pool
 * memory; marud learns the size from PUBLISH); in tcp mode marud tracks it
 * and the handle follows its replies. Reservations grow geometrically
 * (file_grow) so that a chunk written in many small pieces costs few
 * round trips.
 *
 * Poison: the first failed transfer to a pending version (a write, a
 * zero fill, a sync, or a frame a data path wrote behind the caller,
 * dp/tcp_wb.c) is kept in f->poison. Every later write, sync and publish
 * returns it, and publish abandons the version instead of publishing it
 * (a line names the version and the error): nothing partial is visible.
 *
 * Hash: file_hash.c keeps the digest PUBLISH carries of a version written
 * in order through a data path that hashes; file.c tells it of each write,
 * of a shrinking truncate and of extents handed out (which drop it).
 *
 * Locking: f->lock is a rwlock, read for pread/attr/extents (a lease's
 * extents never change), write for everything that changes the handle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attr.h"
#include "client_priv.h"
#include "dp/datapath.h"
#include "file.h"
#include "file_hash.h"
#include "frame.h"
#include "hash.h"
#include "session.h"
#include "transport.h"
#include "route.h"

#define GROW_MIN	(64u * 1024)

/* ---- handle state ---- */

static int file_check(struct maru_file *f, int want_pending)
{
	int rc;

	if (f->dead)
		return -EIO;
	rc = session_held_check(f->c, f->epoch, f->generation);
	if (rc)
		return rc;
	if (want_pending && !f->pending)
		return -EBADF;
	return 0;
}

/*
 * A call that failed because the session was lost under it (marud ended it
 * after the grace period; the retry reconnected into a new one) reports
 * that, -EIO or -ESTALE as file_check() would, rather than what the new
 * session said of a version it never held (-EPERM, -ENOENT).
 */
static ssize_t lost_session(struct maru_file *f, ssize_t rc)
{
	if (rc < 0 && !f->dead &&
	    f->epoch != __atomic_load_n(&f->c->s.epoch, __ATOMIC_ACQUIRE))
		return file_check(f, 0);
	return rc;
}

/*
 * A write or sync to a pending version: its poison, or the handle check.
 * A session lost since the poison outranks it: the version went with the
 * session, and the error that poisoned it (-ETIMEDOUT while marud was
 * away) would tell the caller a later call may still succeed.
 */
static int pending_check(struct maru_file *f)
{
	int rc = atomic_load(&f->poison);

	if (!rc)
		return file_check(f, 1);
	return f->dead ? rc : (int)lost_session(f, rc);
}

/* Take attributes and extents from a proto_attr(+extents) reply. */
static int file_take_reply(struct maru_file *f, const struct req *r, int take_size)
{
	const struct proto_attr *a = r->rep;
	struct proto_extent *ext = NULL;
	size_t n, i;

	if (r->rlen < sizeof(*a))
		return -EIO;
	n = a->nextents;
	if (r->rlen != sizeof(*a) + n * sizeof(*ext) || n > PROTO_MAX_EXTENTS)
		return -EIO;
	if (n) {
		ext = malloc(n * sizeof(*ext));
		if (!ext)
			return -ENOMEM;
		memcpy(ext, (const uint8_t *)r->rep + sizeof(*a), n * sizeof(*ext));
	}
	for (i = 0; i < n; i++) {
		if (ext[i].off + ext[i].len < ext[i].off ||
		    ext[i].off + ext[i].len > f->c->s.pool_size) {
			free(ext);
			return -EIO;
		}
	}
	f->attr = *a;
	f->reserved = a->reserved;
	if (take_size)
		f->size = a->size;
	free(f->ext);
	f->ext = ext;
	f->next = (uint32_t)n;
	return 0;
}

/* A reply that keeps the known extents when it carries none (PUBLISH). */
static int file_take_attr(struct maru_file *f, const struct req *r)
{
	const struct proto_attr *a = r->rep;

	if (r->rlen < sizeof(*a))
		return -EIO;
	if (a->nextents)
		return file_take_reply(f, r, 1);
	f->attr = *a;
	f->size = a->size;
	f->reserved = a->reserved;
	return 0;
}

/* The client's list of open handles, closed by maru_client_free. */
static void file_link(struct maru_client *c, struct maru_file *f)
{
	pthread_mutex_lock(&c->lock);
	f->prev = NULL;
	f->next_file = c->files;
	if (c->files)
		c->files->prev = f;
	c->files = f;
	pthread_mutex_unlock(&c->lock);
}

static void file_unlink(struct maru_client *c, struct maru_file *f)
{
	pthread_mutex_lock(&c->lock);
	if (f->prev)
		f->prev->next_file = f->next_file;
	else
		c->files = f->next_file;
	if (f->next_file)
		f->next_file->prev = f->prev;
	pthread_mutex_unlock(&c->lock);
}

/* What a data path keeps on f (rdma: its rkeys) is dropped through it. */
static void file_forget(struct maru_file *f)
{
	if (f->held && f->held->forget)
		f->held->forget(f);
	f->held = NULL;
}

static void file_free(struct maru_file *f)
{
	file_forget(f);
	hash_stream_free(f->hs);
	pthread_rwlock_destroy(&f->lock);
	free(f->ext);
	free(f);
}

/* Build a handle from an opening call's reply (file_open.c). */
int file_new(struct maru_client *c, struct req *r, struct maru_file **out)
{
	struct maru_file *f;
	int rc;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->c = c;
	pthread_rwlock_init(&f->lock, NULL);
	rc = file_take_reply(f, r, 1);
	if (rc) {
		file_free(f);
		return rc;
	}
	f->ino = f->attr.ino;
	f->pending = f->attr.state == MARU_STATE_PENDING;
	f->generation = r->gen;
	f->epoch = __atomic_load_n(&c->s.epoch, __ATOMIC_ACQUIRE);
	f->dirty_lo = UINT64_MAX;
	file_link(c, f);
	*out = f;
	return 0;
}

/* ---- facts ---- */

uint64_t maru_file_ino(const struct maru_file *f)
{
	return f ? client_ino(f->c, f->ino) : 0;
}

int maru_file_is_pending(const struct maru_file *f)
{
	return f ? f->pending : 0;
}

uint64_t maru_file_size(struct maru_file *f)
{
	uint64_t size;

	if (!f)
		return 0;
	pthread_rwlock_rdlock(&f->lock);
	size = f->size;
	pthread_rwlock_unlock(&f->lock);
	return size;
}

static int lease_refresh(struct maru_file *f)
{
	struct proto_ino_req q = { .ino = f->ino };
	struct req r = { .op = OP_GETATTR, .p1 = &q, .n1 = sizeof(q) };
	int rc = transport_call(f->c, &r);

	if (rc)
		return rc;
	if (r.rlen < sizeof(struct proto_attr)) {
		frame_req_done(&r);
		return -EIO;
	}
	/* a lease's size and extents never change: only refresh the rest */
	memcpy(&f->attr, r.rep, offsetof(struct proto_attr, nextents));
	f->attr.size = f->size;
	frame_req_done(&r);
	return 0;
}

int maru_file_attr(struct maru_file *f, struct maru_attr *out)
{
	int rc;

	if (!f || !out)
		return -EINVAL;
	pthread_rwlock_wrlock(&f->lock);
	rc = file_check(f, 0);
	if (!rc && !f->pending)
		rc = lease_refresh(f);
	if (!rc) {
		attr_from_proto(&f->attr, out);
		out->size = f->size;
		out->reserved = f->reserved;
		/* a pool of a routed client: its ids, its directory's not known */
		out->ino = client_ino(f->c, out->ino);
		if (f->c->up)
			out->parent = 0;
	}
	pthread_rwlock_unlock(&f->lock);
	return rc;
}

ssize_t maru_file_extents(struct maru_file *f, struct maru_extent *ext, size_t max)
{
	ssize_t n;
	size_t i;

	if (!f || (max && !ext))
		return -EINVAL;
	pthread_rwlock_rdlock(&f->lock);
	n = file_check(f, 0);
	/* the bytes may now change behind the handle's back: marud hashes */
	if (n == 0 && f->pending)
		f->hash_off = 1;
	if (n == 0) {
		for (i = 0; i < f->next && i < max; i++) {
			ext[i].off = f->ext[i].off;
			ext[i].len = f->ext[i].len;
		}
		n = (ssize_t)f->next;
	}
	pthread_rwlock_unlock(&f->lock);
	return n;
}

int maru_file_recheck(struct maru_file *f)
{
	struct proto_ino_req q = { .ino = f ? f->ino : 0 };
	struct req r = { .op = OP_EXTENTS, .p1 = &q, .n1 = sizeof(q) };
	int rc;

	if (!f)
		return -EINVAL;
	pthread_rwlock_rdlock(&f->lock);
	rc = file_check(f, 0);
	pthread_rwlock_unlock(&f->lock);
	if (rc)
		return rc;
	rc = transport_call(f->c, &r);
	if (rc == 0)
		frame_req_done(&r);
	return (int)lost_session(f, rc);
}

/* ---- I/O ---- */

/* OP_RESERVE to `size` bytes; f->lock held for writing. */
static int reserve_req(struct maru_file *f, uint64_t size)
{
	struct proto_size_req q = { .ino = f->ino, .size = size };
	struct req r = { .op = OP_RESERVE, .p1 = &q, .n1 = sizeof(q) };
	int rc = transport_call(f->c, &r);

	if (rc)
		return rc;
	/* the handle, not marud, knows the size a direct path wrote */
	rc = file_take_reply(f, &r, 0);
	frame_req_done(&r);
	return rc;
}

/*
 * Room for need bytes, asked for before any byte moves so that -ENOSPC
 * leaves nothing written. Grows geometrically: few round trips for a chunk
 * written in many small pieces; the part ahead of need is asked for
 * with PROTO_RESERVE_AHEAD (granted from free room only: nothing of this
 * tenant's or the pool's is evicted for a guess), then need alone if that
 * fails. Eightfold where marud moves the bytes
 * (tcp): each RESERVE there is a round trip over a network that the
 * writes streamed behind it wait for (an 8 MiB chunk: 4, not 8), and
 * publish gives what was not written back.
 */
static int file_grow(struct maru_file *f, const struct dp_ops *dp, uint64_t need)
{
	uint64_t want, grown;
	int rc;

	if (need <= f->reserved)
		return 0;
	grown = f->reserved * (dp->direct ? 2 : 8);
	want = grown > need ? grown : need;
	if (want < GROW_MIN)
		want = GROW_MIN;
	/* The bytes ahead only from free room: never evict for a guess. */
	rc = reserve_req(f, want > need ? want | PROTO_RESERVE_AHEAD : want);
	if ((rc == -ENOSPC || rc == -EDQUOT) && want > need)
		rc = reserve_req(f, need);
	return rc;
}

/*
 * The checks of one I/O call, made once before the data path runs. A direct
 * path copies without asking marud, and a session marud ended (its grace
 * period ran out while we could not reach it) no longer holds these extents:
 * they may be another client's bytes by now. So copy only while the session
 * is known alive; after a reconnect the handle check says -EIO (session
 * lost) or -ESTALE (new generation).
 */
static int io_check(struct maru_file *f, const struct dp_ops *dp, int want_pending)
{
	int rc = 0;

	if (dp->direct)
		rc = (int)lost_session(f, transport_live(f->c));
	return rc ? rc : file_check(f, want_pending);
}

/* The first failed transfer to a pending version: it will not be published. */
static void file_poison(struct maru_file *f, int err)
{
	int none = 0;

	if (err >= 0)
		err = -EIO;
	if (atomic_compare_exchange_strong(&f->poison, &none, err))
		clog_warn(f->c, -err, "%s: a write to pending version %llu failed: it will "
			  "not be published", f->c->uri, (unsigned long long)f->ino);
}

/* A transfer's bytes, one op and its time (from t0, hist_start()) on the
 * path's counters (stats.c). */
static void count_io(struct maru_file *f, const struct dp_ops *dp, int write, ssize_t rc,
		     uint64_t t0)
{
	struct dp_counters *d = &f->c->st.dp[dp->kind];

	if (rc < 0)
		return;
	hist_done(&f->c->st.dp_lat[dp->kind][write], t0);
	atomic_fetch_add(write ? &d->wr_bytes : &d->rd_bytes, (uint64_t)rc);
	atomic_fetch_add(write ? &d->wr_ops : &d->rd_ops, 1);
}

ssize_t maru_file_pread(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	const struct dp_ops *dp;
	ssize_t rc;

	if (!f || (len && !buf))
		return -EINVAL;
	dp = session_dp(f->c);
	pthread_rwlock_rdlock(&f->lock);
	rc = file_check(f, 0);
	if (rc == 0 && off < f->size && len) {
		if (len > f->size - off)
			len = f->size - off;
		rc = io_check(f, dp, 0);
		if (rc == 0) {
			uint64_t t0 = hist_start();

			rc = dp->read(f, buf, len, off);
			count_io(f, dp, 0, rc, t0);
			rc = lost_session(f, rc);
		}
	}
	pthread_rwlock_unlock(&f->lock);
	if (rc == -ESTALE)
		transport_ping(f->c);
	return rc;
}

/*
 * Zeros over [f->size, end) through a direct path, so that a hole reads as
 * zeros (the pool bytes there may be an older version's); marud fills them
 * itself for tcp. f->lock held for writing, room reserved up to end.
 */
static int fill_gap(struct maru_file *f, const struct dp_ops *dp, uint64_t end)
{
	if (!dp->zero || end <= f->size)
		return 0;
	return dp->zero(f, f->size, end - f->size);
}

static ssize_t write_locked(struct maru_file *f, const struct dp_ops *dp, const void *buf,
			    size_t len, uint64_t off)
{
	ssize_t rc = file_grow(f, dp, off + len);

	if (rc == 0)
		rc = io_check(f, dp, 1);
	if (rc == 0) {
		uint64_t t0 = hist_start();

		file_hash_before_write(f, dp, off);
		rc = fill_gap(f, dp, off);
		if (rc == 0)
			rc = dp->write(f, buf, len, off);
		if (rc < 0)
			file_poison(f, (int)rc);
		file_hash_after_write(f, rc);
		count_io(f, dp, 1, rc, t0);
		if (rc > 0 && off + (uint64_t)rc > f->size)
			f->size = off + (uint64_t)rc;
	}
	rc = lost_session(f, rc);
	if (rc > 0)
		f->attr.mtime_ns = now_ns();
	return rc;
}

ssize_t maru_file_pwrite(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	const struct dp_ops *dp;
	ssize_t rc;

	if (!f || (len && !buf))
		return -EINVAL;
	if (off + len < off)
		return -EFBIG;
	dp = session_dp(f->c);
	pthread_rwlock_wrlock(&f->lock);
	rc = pending_check(f);
	if (rc == 0 && len)
		rc = write_locked(f, dp, buf, len, off);
	pthread_rwlock_unlock(&f->lock);
	if (rc == -ESTALE)
		transport_ping(f->c);
	return rc;
}

/* marud's truncate (tcp), or the hole filled and the size moved here. */
static int truncate_locked(struct maru_file *f, const struct dp_ops *dp, uint64_t size)
{
	int rc;

	if (dp->truncate)
		return dp->truncate(f, size);
	rc = fill_gap(f, dp, size);
	if (!rc)
		f->size = size;
	return rc;
}

int maru_file_truncate(struct maru_file *f, uint64_t size)
{
	const struct dp_ops *dp;
	int rc;

	if (!f)
		return -EINVAL;
	dp = session_dp(f->c);
	pthread_rwlock_wrlock(&f->lock);
	rc = file_check(f, 1);
	/* a direct path's grown part is zero-filled here: room first */
	if (!rc && dp->direct)
		rc = file_grow(f, dp, size);
	if (!rc)
		rc = io_check(f, dp, 1);
	if (!rc && f->hs && size < f->hashed)
		file_hash_drop(f);
	if (!rc)
		rc = truncate_locked(f, dp, size);
	if (!rc)
		f->attr.mtime_ns = now_ns();
	pthread_rwlock_unlock(&f->lock);
	return rc;
}

int maru_file_reserve(struct maru_file *f, uint64_t size)
{
	int rc;

	if (!f)
		return -EINVAL;
	pthread_rwlock_wrlock(&f->lock);
	rc = file_check(f, 1);
	if (!rc && size > f->reserved)
		rc = reserve_req(f, size);
	pthread_rwlock_unlock(&f->lock);
	return rc;
}

int maru_file_sync(struct maru_file *f)
{
	int rc;

	if (!f)
		return -EINVAL;
	pthread_rwlock_wrlock(&f->lock);
	rc = pending_check(f);
	if (!rc) {
		rc = session_dp(f->c)->sync(f);
		if (rc)
			file_poison(f, rc);
	}
	pthread_rwlock_unlock(&f->lock);
	return rc;
}

/*
 * A poisoned version is abandoned at publish, never published; the
 * handle is dead then (close sends nothing more). The error it failed with.
 */
static int abandon_poisoned(struct maru_file *f)
{
	struct proto_ino_req q = { .ino = f->ino };
	struct req r = { .op = OP_ABANDON, .p1 = &q, .n1 = sizeof(q) };
	int err = atomic_load(&f->poison), rc;

	file_forget(f);
	rc = transport_call(f->c, &r);
	frame_req_done(&r);
	clog_warnx(f->c, "%s: pending version %llu abandoned, not published: a write to it "
		   "failed (%s)%s", f->c->uri, (unsigned long long)f->ino, strerror(-err),
		   rc ? "; marud drops it with the session" : "");
	atomic_fetch_add(&f->c->st.poisoned, 1);
	f->dead = 1;
	f->pending = 0;
	return err;
}

static int publish_locked(struct maru_file *f, struct maru_attr *dir)
{
	struct proto_publish_req q = { .ino = f->ino, .size = f->size };
	struct req r = { .op = OP_PUBLISH, .p1 = &q, .n1 = sizeof(q) };
	int rc;

	rc = session_dp(f->c)->sync(f);
	if (rc)
		file_poison(f, rc);
	if (atomic_load(&f->poison))
		return abandon_poisoned(f);
	q.xxh3 = file_hash_for_publish(f);
	rc = (int)lost_session(f, transport_call(f->c, &r));
	/* marud ends the rdma rights of a pending version before it hashes
	 * it, refused or not: its cached rkeys are dead either way */
	file_forget(f);
	if (rc)
		return rc;
	/* HELLO_F_DIRATTR: the directory's attr follows the version's */
	if (r.rlen == 2 * sizeof(struct proto_attr) && !((struct proto_attr *)r.rep)->nextents) {
		if (dir)
			attr_from_proto((struct proto_attr *)r.rep + 1, dir);
		r.rlen = sizeof(struct proto_attr);
	}
	rc = file_take_attr(f, &r);
	frame_req_done(&r);
	if (rc)
		return rc;
	f->pending = 0;
	file_hash_drop(f);
	return 0;
}

int maru_file_publish_dir(struct maru_file *f, struct maru_attr *dir)
{
	int rc;

	if (!f)
		return -EINVAL;
	if (dir)
		memset(dir, 0, sizeof(*dir));
	pthread_rwlock_wrlock(&f->lock);
	/* a poisoned version was abandoned: publishing it again says why */
	rc = f->dead ? atomic_load(&f->poison) : 0;
	if (!rc)
		rc = file_check(f, 1);
	if (!rc)
		rc = publish_locked(f, dir);
	pthread_rwlock_unlock(&f->lock);
	/* a pool of a routed client: that pool's directory is the merged
	 * one only when it is the first pool (route_publish_dir()) */
	if (dir && f->c->up)
		route_publish_dir(f->c->up, f->c, dir);
	return rc;
}

int maru_file_publish(struct maru_file *f)
{
	return maru_file_publish_dir(f, NULL);
}

void maru_file_close(struct maru_file *f)
{
	struct proto_ino_req q;
	struct req r = { .p1 = &q, .n1 = sizeof(q) };

	if (!f)
		return;
	pthread_rwlock_wrlock(&f->lock);
	if (file_check(f, 0) == 0) {
		q.ino = f->ino;
		r.op = f->pending ? OP_ABANDON : OP_RELEASE;
		/* nothing to do on failure: marud ends it with the session */
		transport_call(f->c, &r);
		frame_req_done(&r);
	}
	pthread_rwlock_unlock(&f->lock);
	file_unlink(f->c, f);
	file_free(f);
}
