/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * marufs_ioctl.h: the ioctl ABI of an open marufs file (marufs-design(7) §5). It hands
 * out where the file's bytes live in the pool memory so that a process on a
 * host that shares that memory (the memory node itself, or a CXL-attached
 * node) can map them directly instead of reading through FUSE. libmaru's
 * maru_map() and libmaru-preload.so are its users; scripts get the same
 * extents from the user.maru.extent extended attribute.
 *
 * FUSE forwards only "restricted" ioctls on regular files: the kernel copies
 * _IOC_SIZE(cmd) bytes in and out, so the argument is one fixed-size struct
 * (well under the 14-bit _IOC_SIZE limit of 16 KiB). It is _IOWR rather than
 * _IOR because a file may have more extents than fit in one reply: the
 * caller says which extent to start at (first) and calls again until it
 * has all nextents.
 *
 * The open descriptor is the lease: the extents stay valid (not evicted,
 * not reused) while it is open, also after unlink or rename-over of the
 * name. A reply is only good for the pool generation it names: a mapping
 * must check that the pool superblock carries that generation.
 *
 * Self-contained: it may be included without libmaru.h.
 */
#ifndef MARU_MARUFS_IOCTL_H
#define MARU_MARUFS_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

#define MARUFS_IOC_TYPE		0xCE
#define MARUFS_EXT_MAGIC	0x4d415255u	/* "MARU" */
#define MARUFS_EXT_VERSION	1u
#define MARUFS_EXT_MAX		256	/* extents per call */
#define MARUFS_POOL_PATH_MAX	512

/* flags (in) */
#define MARUFS_EXT_WANT_WRITE	(1u << 0)	/* caller will write through a mapping */
/* flags (out) */
#define MARUFS_EXT_PENDING	(1u << 8)	/* a pending version of this mount */
#define MARUFS_EXT_WRITABLE	(1u << 9)	/* fd may write it: pending + open for write */
#define MARUFS_EXT_HELD		(1u << 10)	/* WANT_WRITE accepted: publish waits for
						   MARUFS_IOC_UNHOLD */

/* coherence (out); same values as enum maru_coherence */
#define MARUFS_COHERENCE_HW	0u
#define MARUFS_COHERENCE_FLUSH	1u

struct marufs_extent {
	uint64_t off;		/* byte offset in the pool mapping (superblock at 0) */
	uint64_t len;
};

struct marufs_extents {
	/* in */
	uint32_t magic;		/* MARUFS_EXT_MAGIC */
	uint32_t version;	/* MARUFS_EXT_VERSION */
	uint32_t first;		/* index of the first extent wanted */
	uint32_t flags;		/* in: MARUFS_EXT_WANT_WRITE; out: the rest */
	/* out */
	uint8_t uuid[16];	/* pool UUID (also in the pool superblock) */
	uint64_t generation;	/* pool generation the extents belong to */
	uint64_t ino;		/* version id */
	uint64_t size;		/* file bytes (<= the sum of the extents) */
	uint64_t pool_size;	/* bytes of the pool mapping */
	uint64_t align;		/* pool alignment (devdax: mapping granularity) */
	uint64_t data_off;	/* first data byte of the pool */
	uint32_t coherence;	/* MARUFS_COHERENCE_* of this mount */
	uint32_t nextents;	/* extents of the file in all */
	uint32_t count;		/* extents in ext[] from index first */
	uint32_t reserved;
	char pool_path[MARUFS_POOL_PATH_MAX];	/* as marud sees it; NUL-terminated */
	struct marufs_extent ext[MARUFS_EXT_MAX];
};

/* C++ spells it static_assert: the header is included from both */
#ifdef __cplusplus
#define MARUFS_STATIC_ASSERT static_assert
#else
#define MARUFS_STATIC_ASSERT _Static_assert
#endif
MARUFS_STATIC_ASSERT(sizeof(struct marufs_extents) == 608 + 16 * MARUFS_EXT_MAX,
		     "marufs_extents layout");
MARUFS_STATIC_ASSERT(sizeof(struct marufs_extents) < (1 << 14), "fits _IOC_SIZE");

/*
 * Errors: ENOTTY not a marufs file; EOPNOTSUPP the mount does not map the
 * pool (data=tcp: the isolated mode hands out no pool addresses); EIO the
 * descriptor belongs to an older pool generation; EINVAL bad magic, version
 * or first; EBADF WANT_WRITE on a descriptor that cannot write the version.
 */
#define MARUFS_IOC_EXTENTS	_IOWR(MARUFS_IOC_TYPE, 1, struct marufs_extents)
/*
 * Ends one WANT_WRITE hold (the writable mapping is gone): the next close
 * of the file publishes as usual. A descriptor released while still held
 * publishes nothing (its writer died with the mapping).
 */
#define MARUFS_IOC_UNHOLD	_IO(MARUFS_IOC_TYPE, 2)

#endif /* MARU_MARUFS_IOCTL_H */
