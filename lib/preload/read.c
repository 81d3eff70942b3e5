// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/preload/read.c: the shim's reads. read, pread, readv, preadv, their
 * 64 and fortified (_chk) forms: a read of at least MARU_PRELOAD_MIN bytes
 * of a descriptor the read cache (cache.c) has a mapping for is a memcpy
 * out of that mapping, bracketed by maru_map_check() (after a marud
 * restart the read falls through to FUSE, which answers EIO, and the
 * descriptor is not served again); read/readv keep the file offset with
 * lseek under the entry's pos_lock. Anything else goes to the next
 * definition unchanged.
 */
/* the off_t of the interposed calls, as in preload.c */
#undef _FILE_OFFSET_BITS
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "preload_priv.h"

/* glibc's fortified entry points: declared here, their headers do not */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t len, off64_t off, size_t buflen);

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (t + iov[i].iov_len < t)
			return 0;
		t += iov[i].iov_len;
	}
	return t;
}

static void copy_out(const struct iovec *iov, int n, const uint8_t *src, size_t len)
{
	size_t k;
	int i;

	for (i = 0; i < n && len; i++) {
		k = iov[i].iov_len < len ? iov[i].iov_len : len;
		memcpy(iov[i].iov_base, src, k);
		src += k;
		len -= k;
	}
}

/* Copy file bytes [pos, ...) of e into iov; -1 if it must fall through. */
static ssize_t ent_copy(struct ent *e, const struct iovec *iov, int n, size_t total, off_t pos)
{
	uint64_t size = maru_map_size(e->m);
	size_t len;

	if (pos < 0)
		return -1;
	if ((uint64_t)pos >= size)
		return 0;
	len = size - (uint64_t)pos < total ? (size_t)(size - (uint64_t)pos) : total;
	if (maru_map_check(e->m))
		return -1;
	copy_out(iov, n, (const uint8_t *)maru_map_addr(e->m) + pos, len);
	/* a marud restart during the copy: FUSE will say EIO, never these bytes */
	if (maru_map_check(e->m))
		return -1;
	return (ssize_t)len;
}

/*
 * Serve a read from the mapping: 1 with *res set, or 0 to fall through.
 * use_pos: read/readv at the file offset (updated), else pread at off.
 */
static int serve(int fd, const struct iovec *iov, int n, off_t off, int use_pos, ssize_t *res)
{
	size_t total = iov_total(iov, n);
	struct ent *e;
	ssize_t got;
	off_t pos = off;

	if (!pl_enabled || pl_in_shim || total < pl_min_read || fd < 0)
		return 0;
	pl_in_shim++;
	e = pl_ent_get(fd);
	if (!e || __atomic_load_n(&e->neg, __ATOMIC_ACQUIRE)) {
		if (e)
			pl_ent_put(e);
		pl_in_shim--;
		return 0;
	}
	if (use_pos) {
		pthread_mutex_lock(&e->pos_lock);
		pos = lseek(fd, 0, SEEK_CUR);
	}
	got = ent_copy(e, iov, n, total, pos);
	if (got > 0 && use_pos && lseek(fd, pos + got, SEEK_SET) < 0)
		got = -1;
	if (use_pos)
		pthread_mutex_unlock(&e->pos_lock);
	if (got < 0) {
		__atomic_store_n(&e->neg, 1, __ATOMIC_RELEASE);	/* after an error: FUSE */
		plog("fd %d: read at %lld: falling through to FUSE", fd, (long long)pos);
	} else {
		plog("read fd %d off %lld len %zu -> %zd (zero-copy)", fd, (long long)pos,
		     total, got);
	}
	pl_ent_put(e);
	pl_in_shim--;
	if (got < 0)
		return 0;
	*res = got;
	return 1;
}

static int serve1(int fd, void *buf, size_t len, off_t off, int use_pos, ssize_t *res)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return serve(fd, &v, 1, off, use_pos, res);
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	ssize_t r;

	pl_setup();
	if (len >= pl_min_read && serve1(fd, buf, len, 0, 1, &r))
		return r;
	return pl_real.read(fd, buf, len);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	ssize_t r;

	pl_setup();
	if (len <= buflen && len >= pl_min_read && serve1(fd, buf, len, 0, 1, &r))
		return r;
	return pl_real.read_chk(fd, buf, len, buflen);
}

EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t r;

	pl_setup();
	if (len >= pl_min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return pl_real.pread(fd, buf, len, off);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t len, off64_t off)
{
	ssize_t r;

	pl_setup();
	if (len >= pl_min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return pl_real.pread64(fd, buf, len, off);
}

EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	ssize_t r;

	pl_setup();
	if (len <= buflen && len >= pl_min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return pl_real.pread_chk(fd, buf, len, off, buflen);
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off64_t off, size_t buflen)
{
	ssize_t r;

	pl_setup();
	if (len <= buflen && len >= pl_min_read && serve1(fd, buf, len, off, 0, &r))
		return r;
	return pl_real.pread64_chk(fd, buf, len, off, buflen);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	ssize_t r;

	pl_setup();
	if (n > 0 && n <= IOV_MAX && serve(fd, iov, n, 0, 1, &r))
		return r;
	return pl_real.readv(fd, iov, n);
}

EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	ssize_t r;

	pl_setup();
	if (n > 0 && n <= IOV_MAX && serve(fd, iov, n, off, 0, &r))
		return r;
	return pl_real.preadv(fd, iov, n, off);
}

EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off64_t off)
{
	ssize_t r;

	pl_setup();
	if (n > 0 && n <= IOV_MAX && serve(fd, iov, n, off, 0, &r))
		return r;
	return pl_real.preadv64(fd, iov, n, off);
}
