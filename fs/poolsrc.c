/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/poolsrc.c: the pool file as the source of a read's reply. One
 * read-only descriptor of the pool file per process (one mount per
 * process), checked against marud's generation, and the fuse_bufs that name
 * its pages at a version's extents, so that the kernel splices the pool's
 * pages into the reply with no copy through marufs (handle.c decides when).
 *
 * Lock: pool_src.lock guards the descriptor, a leaf.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "poolsrc.h"
#include "superblock.h"

/*
 * The pool file, read-only, for the generation it was checked for (one
 * mount per process). Reopened when marud's generation changes; -1 when
 * the pool cannot be opened here or is not the one the session maps.
 */
static struct {
	pthread_mutex_t lock;
	int fd;
	uint64_t gen;
} pool_src = { PTHREAD_MUTEX_INITIALIZER, -1, 0 };

/* The superblock at fd says pool uuid, generation gen. */
int poolsrc_is(int fd, const struct maru_pool_info *pi, uint64_t gen)
{
	struct pool_superblock sb;

	if (pread(fd, &sb, sizeof(sb), 0) != (ssize_t)sizeof(sb) || pool_sb_check(&sb))
		return 0;
	return !memcmp(sb.uuid, pi->uuid, sizeof(sb.uuid)) &&
	       __atomic_load_n(&sb.generation, __ATOMIC_RELAXED) == gen;
}

static int pool_src_open(struct mfs *m, uint64_t gen)
{
	struct maru_pool_info *pi = malloc(sizeof(*pi));
	int fd = -1;

	if (!pi)
		return -1;
	if (maru_client_pool_info(m->c, pi) == 0 && pi->generation == gen &&
	    pi->data_path == MARU_DATA_SHM && pi->coherence == MARU_COHERENCE_HW)
		fd = open(pi->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0 && !poolsrc_is(fd, pi, gen)) {
		close(fd);
		fd = -1;
	}
	free(pi);
	return fd;
}

int poolsrc_fd(struct mfs *m, uint64_t gen)
{
	int fd;

	pthread_mutex_lock(&pool_src.lock);
	if (pool_src.gen != gen) {
		if (pool_src.fd >= 0)
			close(pool_src.fd);
		pool_src.fd = pool_src_open(m, gen);
		pool_src.gen = gen;
	}
	fd = pool_src.fd;
	pthread_mutex_unlock(&pool_src.lock);
	return fd;
}

int poolsrc_bufs(struct fuse_bufvec *bv, size_t max, int fd, const struct maru_extent *ext,
		 ssize_t n, uint64_t off, uint64_t len)
{
	uint64_t pos = 0, k;
	ssize_t i;

	bv->count = 0;
	bv->idx = 0;
	bv->off = 0;
	for (i = 0; i < n && len; pos += ext[i].len, i++) {
		if (off >= pos + ext[i].len)
			continue;
		if (bv->count == max)
			return -EAGAIN;
		k = pos + ext[i].len - off < len ? pos + ext[i].len - off : len;
		bv->buf[bv->count++] = (struct fuse_buf){
			.size = k, .flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK,
			.fd = fd, .pos = (off_t)(ext[i].off + off - pos) };
		off += k;
		len -= k;
	}
	return len ? -EAGAIN : 0;
}
