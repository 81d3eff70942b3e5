/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pendio.c: I/O on a pending version (pending.c owns its state): writes,
 * reads, truncates, reservations and fsync of its maru_file under p->rw
 * held for reading, which a publish or a close (pending.c, wrlock) waits
 * for; the marks a write leaves (modified, wrote, mapped) that decide what
 * publishing it means; and the zero-copy pin of its file for ioctl.c.
 * A failed write fails the whole version: nothing partial is published.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "failpoint.h"
#include "fileio.h"
#include "notify.h"
#include "pending.h"
#include "ratelog.h"

#include "pending_priv.h"

int pend_io_begin(struct pending *p)
{
	int st, err;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p))
		return 0;
	st = p->state;
	err = p->err;
	pthread_rwlock_unlock(&p->rw);
	if (pend_stale(p)) {
		RATELOG_WARN("write to version %" PRIu64 ": made before marud's pool "
			     "generation changed: EIO", p->ino);
		return -EIO;
	}
	if (st != PEND_FAILED)
		return -EAGAIN;
	RATELOG_WARN("write to version %" PRIu64 " refused: an earlier write in it "
		     "failed (%s)", p->ino, maru_strerror(err));
	return err;
}

void pend_io_end(struct pending *p)
{
	pthread_rwlock_unlock(&p->rw);
}

struct maru_file *pend_file_held(struct pending *p)
{
	return p->file;
}

void pend_mapped(struct pending *p)
{
	__atomic_store_n(&p->mapped, 1, __ATOMIC_RELEASE);
	pend_touched(p, 1);
}

void pend_touched(struct pending *p, int wrote)
{
	__atomic_store_n(&p->modified, 1, __ATOMIC_RELEASE);
	if (wrote)
		__atomic_store_n(&p->wrote, 1, __ATOMIC_RELEASE);
}

ssize_t pend_write(struct pending *p, const char *buf, size_t size, off_t off)
{
	size_t done = 0;
	ssize_t n = 0;

	while (done < size) {
		n = maru_file_pwrite(p->file, buf + done, size - done, (uint64_t)off + done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	/* tests: the bytes are in the pending version, the writer not told yet */
	if (done == size) {
		int rc = FAILPOINT("marufs.write.mid");

		if (rc < 0)
			n = rc;
	}
	if (n < 0 || done < size) {
		/* never publish a file a write failed in */
		pend_fail(p, n < 0 ? (int)n : -EIO);
		RATELOG_WARN("write of %zu bytes at %lld to version %" PRIu64 " failed "
			     "after %zu: %s; it will not be published", size,
			     (long long)off, p->ino, done,
			     n < 0 ? maru_strerror((int)n) : "no progress (EIO)");
		return n < 0 ? n : -EIO;
	}
	pend_touched(p, 1);
	return (ssize_t)done;
}

int pend_truncate_held(struct pending *p, uint64_t size, struct maru_attr *a)
{
	int rc = maru_file_truncate(p->file, size);

	if (rc == 0) {
		pend_touched(p, 1);
		rc = maru_file_attr(p->file, a);
	}
	if (rc < 0)
		RATELOG_WARN("truncate of version %" PRIu64 " to %" PRIu64 ": %s", p->ino,
			     size, maru_strerror(rc));
	return rc;
}

int pend_fallocate_held(struct pending *p, uint64_t end)
{
	struct maru_attr a;
	int rc = maru_file_reserve(p->file, end);

	if (rc == 0)
		rc = maru_file_attr(p->file, &a);
	if (rc == 0 && a.size < end) {
		/* mode 0 extends the size, as POSIX requires */
		rc = maru_file_truncate(p->file, end);
		if (rc == 0)
			pend_touched(p, 1);
	}
	if (rc < 0)
		RATELOG_WARN("fallocate of version %" PRIu64 " to %" PRIu64 ": %s", p->ino,
			     end, maru_strerror(rc));
	return rc;
}

int pend_truncate(struct pending *p, uint64_t size, int wrote)
{
	int rc = -ESTALE;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p)) {
		rc = maru_file_truncate(p->file, size);
		if (rc == 0)
			pend_touched(p, wrote);
	}
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

int pend_reserve(struct pending *p, uint64_t bytes)
{
	int rc;

	pthread_rwlock_rdlock(&p->rw);
	rc = pend_live(p) ? maru_file_reserve(p->file, bytes) : -EPERM;
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

int pend_with_file(struct pending *p, int (*fn)(void *arg, struct maru_file *f), void *arg)
{
	int rc = -ENOENT;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_readable_locked(p))
		rc = fn(arg, p->file);
	pthread_rwlock_unlock(&p->rw);
	return rc;
}

ssize_t pend_read(struct pending *p, char *buf, size_t size, off_t off)
{
	ssize_t n = -ENOENT;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_readable_locked(p))
		n = file_read_full(p->file, buf, size, off);
	pthread_rwlock_unlock(&p->rw);
	return n;
}

int pend_sync(struct pending *p)
{
	int rc = 0;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p))
		rc = maru_file_sync(p->file);
	else if (pend_stale(p))
		rc = -EIO;
	pthread_rwlock_unlock(&p->rw);
	if (rc < 0)
		RATELOG_WARN("fsync of version %" PRIu64 ": %s", p->ino,
			     pend_stale(p) ? "made before marud's pool generation changed (EIO)" :
			     maru_strerror(rc));
	return rc;
}

/*
 * A writer killed mid-rewrite: its writes went through the page cache of the
 * inode it opened, the version it rewrites, which this mount keeps showing
 * (no FUSE_CAP_AUTO_INVAL_DATA). Drop those pages before its close returns,
 * so that a reader here never sees the half written bytes over the old ones.
 */
void pend_set_killed(struct pending *p, int killed)
{
	__atomic_store_n(&p->killed, killed, __ATOMIC_RELEASE);
	if (killed && p->src_ino && __atomic_load_n(&p->wrote, __ATOMIC_ACQUIRE))
		notify_inval_data(p->m->nt, p->src_ino);
}

int pend_zc_begin(struct pending *p, int writer, struct maru_file **f, int *pending,
		  int *writable)
{
	pthread_rwlock_rdlock(&p->rw);
	if (pend_readable_locked(p) && p->state != PEND_DEAD) {
		*f = p->file;
		*pending = p->state == PEND_PENDING || p->state == PEND_FAILED;
		*writable = writer && p->state == PEND_PENDING;
		return 0;
	}
	pthread_rwlock_unlock(&p->rw);
	return pend_stale(p) ? -EIO : -ENOENT;
}
