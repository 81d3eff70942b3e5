// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fs/nsdir.c: the FUSE handlers that list a directory (readdir, with the
 * ".maru" entry at the root) and tell the pool's space (statfs), mapping
 * them onto libmaru. While marud cannot be reached, both answer what it
 * last said (away.c): the names this mount last saw in the directory, the
 * space last reported; a listing is never cut to "." and "..". No lock of
 * its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "away.h"
#include "ns.h"
#include "vdir.h"

#define DIR_OFF_FIRST	3	/* ".", "..", ".maru" come first */
#define STAT_BLOCK	4096

/* ---- directories ---- */

struct rd_state {
	fuse_req_t req;
	char *buf;
	size_t size, pos;
	uint64_t dir;
	uint64_t skip, n;	/* away: names before the offset asked, names seen */
};

static int rd_add(struct rd_state *rd, const char *name, uint64_t ino, uint32_t mode,
		  off_t next)
{
	struct stat st;
	size_t n;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = mode & S_IFMT;
	n = fuse_add_direntry(rd->req, rd->buf + rd->pos, rd->size - rd->pos, name, &st, next);
	if (n > rd->size - rd->pos)
		return 1;	/* full */
	rd->pos += n;
	return 0;
}

static int rd_cb(void *arg, const struct maru_dirent *de)
{
	struct rd_state *rd = arg;
	char name[MARU_NAME_MAX + 1];
	size_t len = de->namelen > MARU_NAME_MAX ? MARU_NAME_MAX : de->namelen;

	memcpy(name, de->name, len);
	name[len] = '\0';
	if (de->state == MARU_STATE_PUBLISHED || de->state == MARU_STATE_DIR)
		away_put_listed(req_mfs(rd->req)->aw, rd->dir, name, de->ino, de->mode);
	return rd_add(rd, name, de->ino, de->mode, (off_t)(de->cookie + DIR_OFF_FIRST));
}

/* The names away.c knows in the directory, their offsets their order there. */
static int rd_away_cb(void *arg, const char *name, const struct maru_attr *a)
{
	struct rd_state *rd = arg;

	if (rd->n++ < rd->skip)
		return 0;
	return rd_add(rd, name, a->ino, a->mode, (off_t)(DIR_OFF_FIRST + rd->n));
}

/*
 * marud could not be reached (rc) before it listed anything: what it said
 * before, from the cookie-th name on, or the error (a listing cut short by
 * marud's absence is no listing: never just "." and "..").
 */
static int rd_away(struct rd_state *rd, uint64_t cookie, int rc)
{
	int found;

	rd->skip = cookie;
	found = away_list(req_mfs(rd->req)->aw, rd->dir, rd_away_cb, rd);
	if (!found && !rd->n)
		found = -ENOENT;
	if (away_answer(rc, "readdir", found) == 0)
		return 0;
	rd->pos = 0;
	return rc;
}

void ns_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct rd_state rd = { .req = req, .size = size, .dir = ino };
	uint64_t cookie;
	size_t dots;
	int rc = 0;

	(void)fi;
	rd.buf = malloc(size ? size : 1);
	if (!rd.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off < 1 && rd_add(&rd, ".", ino, S_IFDIR, 1))
		goto out;
	if (off < 2 && rd_add(&rd, "..", FUSE_ROOT_ID, S_IFDIR, 2))
		goto out;
	if (off < 3 && ino == FUSE_ROOT_ID &&
	    rd_add(&rd, VIRT_DIR_NAME, VIRT_INO_DIR, S_IFDIR, 3))
		goto out;
	cookie = off < DIR_OFF_FIRST ? 0 : (uint64_t)off - DIR_OFF_FIRST;
	dots = rd.pos;
	rc = maru_readdir(req_mfs(req)->c, ino, cookie, rd_cb, &rd);
	if (rc < 0 && away_err(rc) && rd.pos == dots)
		rc = rd_away(&rd, cookie, rc);
out:
	if (rc < 0 && rd.pos == 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, rd.buf, rd.pos);
	free(rd.buf);
}

void ns_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct maru_statfs s;
	struct statvfs st;
	int rc;

	(void)ino;
	rc = maru_statfs(req_mfs(req)->c, &s);
	if (rc == 0)
		away_put_statfs(req_mfs(req)->aw, &s);
	else if (away_err(rc))
		rc = away_answer(rc, "statfs", away_get_statfs(req_mfs(req)->aw, &s));
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.f_bsize = STAT_BLOCK;
	st.f_frsize = STAT_BLOCK;
	st.f_blocks = s.capacity / STAT_BLOCK;
	st.f_bfree = s.free / STAT_BLOCK;
	st.f_bavail = (s.free + s.evictable) / STAT_BLOCK;
	/* every file needs at least a block, so free inodes track free blocks;
	 * the total counts both so that df -i shows used = names + dirs */
	st.f_ffree = st.f_bavail;
	st.f_favail = st.f_bavail;
	st.f_files = s.names + s.dirs + st.f_ffree;
	st.f_namemax = MARU_NAME_MAX;
	fuse_reply_statfs(req, &st);
}
