/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pendio.c: I/O on a pending version (pending.c draws its states):
 * writes, reads, truncates, reservations and fsync of its maru_file under
 * p->rw held for reading, which a publish or a close (pendlife.c, wrlock)
 * waits for; the marks a write leaves (PM_MODIFIED, PM_WROTE, PM_MAPPED,
 * PM_DIRECT) that decide what publishing it means; and the zero-copy pin
 * of its file for ioctl.c. A failed write moves the whole version to
 * FAILED: nothing partial is published.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "failpoint.h"
#include "fileio.h"
#include "notify.h"
#include "ratelog.h"

#include "pending_priv.h"

int pend_io_begin(struct pending *p)
{
	int st, err;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p))
		return 0;
	st = pend_state_of(p);
	err = p->err ? p->err : -EIO;
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
	pend_mark(p, PM_MAPPED | PM_MODIFIED | PM_WROTE);
}

void pend_direct_wrote(struct pending *p)
{
	pend_mark(p, PM_DIRECT);
}

static void touched(struct pending *p, int wrote)
{
	pend_mark(p, PM_MODIFIED | (wrote ? PM_WROTE : 0));
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
		char what[96];

		/* never publish a file a write failed in */
		snprintf(what, sizeof(what), "a write of %zu bytes at %lld (after %zu)", size,
			 (long long)off, done);
		pend_fail(p, n < 0 ? (int)n : -EIO, what);
		return n < 0 ? n : -EIO;
	}
	touched(p, 1);
	return (ssize_t)done;
}

/* A truncate or reservation that failed in transfer leaves the version unknown. */
static void resize_failed(struct pending *p, const char *what, uint64_t size, int rc)
{
	char buf[64];

	if (pend_err_poisons(rc) && rc != -ENOSPC && rc != -EDQUOT) {
		snprintf(buf, sizeof(buf), "%s to %" PRIu64, what, size);
		pend_fail(p, rc, buf);
	} else {
		RATELOG_WARN("%s of version %" PRIu64 " to %" PRIu64 ": %s", what, p->ino,
			     size, maru_strerror(rc));
	}
}

int pend_truncate_held(struct pending *p, uint64_t size, struct maru_attr *a)
{
	int rc = maru_file_truncate(p->file, size);

	if (rc == 0) {
		touched(p, 1);
		rc = maru_file_attr(p->file, a);
	}
	if (rc < 0)
		resize_failed(p, "truncate", size, rc);
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
			touched(p, 1);
	}
	if (rc < 0)
		resize_failed(p, "fallocate", end, rc);
	return rc;
}

int pend_truncate(struct pending *p, uint64_t size, int wrote)
{
	int rc = -ESTALE;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_live(p)) {
		rc = maru_file_truncate(p->file, size);
		if (rc == 0)
			touched(p, wrote);
		else
			resize_failed(p, "truncate", size, rc);
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

/*
 * fsync: the bytes written so far reached the pool, else the error that
 * kept them from it (the version fails: what is there is not what the
 * writer wrote). A version a write failed in answers that write's error,
 * every time, as its close does.
 */
int pend_sync(struct pending *p)
{
	int rc = 0;

	pthread_rwlock_rdlock(&p->rw);
	if (pend_stale(p)) {
		rc = -EIO;
		RATELOG_WARN("fsync of version %" PRIu64 ": made before marud's pool "
			     "generation changed (EIO)", p->ino);
	} else if (pend_live(p)) {
		rc = maru_file_sync(p->file);
		if (rc < 0)
			pend_fail(p, rc, "an fsync");
	} else {
		rc = pend_failed_err(p);
	}
	pthread_rwlock_unlock(&p->rw);
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
	if (!killed) {
		pend_unmark(p, PM_KILLED);
		return;
	}
	pend_mark(p, PM_KILLED);
	if (p->src_ino && pend_marked(p, PM_WROTE))
		notify_inval_data(p->m->nt, p->src_ino);
}

int pend_zc_begin(struct pending *p, int writer, struct maru_file **f, int *pending,
		  int *writable)
{
	int st;

	pthread_rwlock_rdlock(&p->rw);
	st = pend_state_of(p);
	if (pend_readable_locked(p) && st != PEND_ABANDONED) {
		*f = p->file;
		*pending = st != PEND_PUBLISHED;
		*writable = writer && (st == PEND_WRITING || st == PEND_ORPHANED);
		return 0;
	}
	pthread_rwlock_unlock(&p->rw);
	return pend_stale(p) ? -EIO : -ENOENT;
}
