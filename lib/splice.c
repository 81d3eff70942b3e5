/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/splice.c: a lease's bytes named as (descriptor, offset), so that a
 * caller (marufs's read replies) has the kernel splice the pool's pages
 * with no copy through it: maru_file_splice_src(). Only the shm data path
 * with coherent memory maps the pool file here; the bytes then are the
 * file's pages at the extents marud gave the lease.
 *
 * The descriptor is the client's own, one number for the client's life:
 * it is pointed (dup3) at the pool file the data path maps now, and a
 * remap after a marud restart only repoints it, so a number a caller got
 * never names an unrelated file while the client lives.
 *
 * Lock order: maru_file.lock (read) -> maru_client.dp_lock (read) ->
 * splice_src.lock, a leaf.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "client_priv.h"
#include "session.h"
#include "extent.h"
#include "pool_locate.h"
#include "splice.h"
#include "superblock.h"

struct splice_src {
	pthread_mutex_t lock;
	int fd;			/* -1 until the first call that can use it */
	uint64_t dev, ino;	/* the pool file fd names */
};

int splice_src_new(struct maru_client *c)
{
	struct splice_src *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->fd = -1;
	c->splice = s;
	return 0;
}

void splice_src_free(struct maru_client *c)
{
	struct splice_src *s = c->splice;

	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
	c->splice = NULL;
}

/* The client's descriptor of the file m maps, or -errno. */
static int src_fd(struct splice_src *s, const struct pool_map *m)
{
	int fd = -EOPNOTSUPP;

	if (m->rofd < 0)
		return fd;	/* a device-DAX: no read() to splice from */
	pthread_mutex_lock(&s->lock);
	if (s->fd >= 0 && s->dev == m->dev && s->ino == m->ino) {
		fd = s->fd;
	} else if (s->fd < 0) {
		s->fd = fcntl(m->rofd, F_DUPFD_CLOEXEC, 0);
		fd = s->fd < 0 ? -errno : s->fd;
	} else {
		fd = dup3(m->rofd, s->fd, O_CLOEXEC) < 0 ? -errno : s->fd;
	}
	if (fd >= 0) {
		s->dev = m->dev;
		s->ino = m->ino;
	}
	pthread_mutex_unlock(&s->lock);
	return fd;
}

/*
 * The handle may still be used, without a round trip (as file.c checks
 * before a read): -EIO once marud dropped it or the session expired,
 * -ESTALE under a new generation; a pending handle's bytes still move.
 */
static int lease_live(struct maru_file *f)
{
	int rc;

	if (f->dead)
		return -EIO;
	rc = session_held_check(f->c, f->epoch, f->generation);
	if (rc)
		return rc;
	return f->pending ? -EOPNOTSUPP : 0;
}

/* File byte off's piece in the pool file; f->lock held for reading. */
static int piece(struct maru_file *f, uint64_t off, int *fd, uint64_t *fd_off, size_t *len)
{
	struct maru_client *c = f->c;
	const struct pool_superblock *sb;
	uint64_t n, pool_off;
	int rc;

	pthread_rwlock_rdlock(&c->dp_lock);
	/* only the shm data path maps the pool here */
	if (!c->map) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	sb = (const void *)c->map->base;
	/* a restart since the extents were given would make them another's */
	if (__atomic_load_n(&sb->generation, __ATOMIC_ACQUIRE) != f->generation) {
		rc = -ESTALE;
		goto out;
	}
	n = extent_at((const struct extent *)f->ext, f->next, off, &pool_off);
	if (!n || pool_off + n > c->map->size) {
		rc = -EIO;
		goto out;
	}
	rc = src_fd(c->splice, c->map);
	if (rc < 0)
		goto out;
	*fd = rc;
	*fd_off = pool_off;
	n = n < f->size - off ? n : f->size - off;
	*len = n < SIZE_MAX ? (size_t)n : SIZE_MAX;
	rc = 0;
out:
	pthread_rwlock_unlock(&c->dp_lock);
	return rc;
}

int maru_file_splice_src(struct maru_file *f, uint64_t off, int *fd, uint64_t *fd_off,
			 size_t *len)
{
	int rc;

	if (!f || !fd || !fd_off || !len)
		return -EINVAL;
	*fd = -1;
	*fd_off = 0;
	*len = 0;
	/* the kernel's page cache of the pool file is coherent memory only */
	if (f->c->opts.coherence != MARU_COHERENCE_HW || !f->c->splice)
		return -EOPNOTSUPP;
	pthread_rwlock_rdlock(&f->lock);
	rc = lease_live(f);
	if (!rc && off < f->size)
		rc = piece(f, off, fd, fd_off, len);
	pthread_rwlock_unlock(&f->lock);
	return rc;
}
