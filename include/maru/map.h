/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * maru/map.h: zero-copy mappings of marufs files, part of libmaru's
 * public API (included by <maru/libmaru.h>; see libmaru(3)).
 */
#ifndef MARU_MAP_H
#define MARU_MAP_H

#include <maru/libmaru.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- zero-copy mappings of marufs files (marufs-design(7) §5) ----
 *
 * On a host that can map the pool memory (the memory node, or a CXL host
 * sharing the device), a file of a marufs mount can be mapped straight from
 * the pool instead of read through FUSE. These calls need no maru_client:
 * they ask the mount (MARUFS_IOC_EXTENTS, <maru/marufs_ioctl.h>) where the
 * bytes are. A mapping can read and write the whole pool's memory, not only
 * its file (see libmaru(3), SECURITY): mount with data=tcp to hand out none.
 */
#include <maru/marufs_ioctl.h>

struct maru_map;

enum maru_map_flags {
	/* in */
	MARU_MAP_WRITE = 1u << 0,	/* writable: a pending file open for write */
	MARU_MAP_POPULATE = 1u << 1,	/* prefault the whole range now */
	MARU_MAP_BORROW = 1u << 2,	/* fd is the lease, kept open by the caller */
	/* out, from maru_map_flags() */
	MARU_MAP_PENDING = 1u << 8,	/* the version is pending (not published) */
	MARU_MAP_COHERENCE_FLUSH = 1u << 9,	/* the mount runs coherence=flush */
};

/*
 * Map the bytes of a marufs file. path NULL: fd is the open file; else path
 * is opened relative to fd as openat(2) does (AT_FDCWD allowed), read-only,
 * or O_RDWR with MARU_MAP_WRITE (a new pending version, a copy of the
 * current bytes, published by maru_unmap()). The mapping keeps a duplicate
 * of the descriptor, the lease: the bytes stay valid while it lives, also
 * after the name is unlinked or replaced. MARU_MAP_BORROW (read-only, path
 * NULL) takes no duplicate: fd itself is the lease, and the caller keeps it
 * open until maru_unmap(), which leaves it open (this saves the round trip
 * to marufs that closing a duplicate costs).
 *
 * A published file maps read-only. MARU_MAP_WRITE maps this mount's pending
 * version writable, [0, size) as the file is now (size it first with
 * ftruncate or fallocate); publishing waits until maru_unmap(), and then
 * happens on the next close as usual.
 *
 * Errors: -ENOTTY not a marufs file; -EOPNOTSUPP the mount hands out no pool
 * addresses (data=tcp); -ENODEV the pool memory cannot be mapped on this
 * host (not found, another pool UUID there); -ESTALE the pool belongs to
 * another marud generation than the descriptor; -EBADF MARU_MAP_WRITE on a
 * descriptor that cannot write the file; -EINVAL the extents cannot be put
 * side by side at the pool's mapping granularity (devdax); -EACCES no right
 * to open the pool memory.
 */
int maru_map(int fd, const char *path, unsigned int flags, struct maru_map **out);
/* File byte 0 (NULL for an empty file), and the file size mapped. */
void *maru_map_addr(const struct maru_map *m);
uint64_t maru_map_size(const struct maru_map *m);
unsigned int maru_map_flags(const struct maru_map *m);
/*
 * 0 while the pool belongs to the marud generation the mapping was made
 * under; -ESTALE after a marud restart: the bytes may belong to another
 * file now. Check after reading to trust what was read.
 */
int maru_map_check(const struct maru_map *m);
/*
 * coherence=flush: write the mapping's cache lines back (writable mapping,
 * before others read it) or drop them (read-only: the next load comes from
 * memory). A no-op with coherence=hw. Returns maru_map_check().
 */
int maru_map_sync(struct maru_map *m);
/*
 * Unmap and close the lease. A writable mapping is synced first, and its
 * publish is released: the close (this one, if the caller's descriptors are
 * already closed) publishes, and its error is returned. Only the process
 * that made a writable mapping releases its publish; a process that exits
 * holding one publishes nothing.
 */
int maru_unmap(struct maru_map *m);

#ifdef __cplusplus
}
#endif
#endif /* MARU_MAP_H */
