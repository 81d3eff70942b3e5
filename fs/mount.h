/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/mount.h: the mount context of one marufs, struct mfs: its options, the
 * libmaru client, the FUSE session, the pool generation and epoch, the
 * counters .maru/stats shows, and one pointer to each subsystem's state.
 * mfs.c builds it (for main.c); libfuse hands it to every request as
 * fuse_req_userdata(), and each handler passes it down. Nothing else here:
 * each subsystem's interface is in its own header.
 */
#ifndef MARUFS_MOUNT_H
#define MARUFS_MOUNT_H

#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <maru/libmaru.h>

#include "hist.h"

/* Counted FUSE request types, for .maru/stats. */
enum op_type {
	OP_LOOKUP, OP_FORGET, OP_GETATTR, OP_SETATTR, OP_MKNOD, OP_MKDIR,
	OP_UNLINK, OP_RMDIR, OP_RENAME, OP_OPEN, OP_CREATE, OP_READ, OP_WRITE,
	OP_FLUSH, OP_RELEASE, OP_FSYNC, OP_OPENDIR, OP_READDIR, OP_RELEASEDIR,
	OP_STATFS, OP_SETXATTR, OP_GETXATTR, OP_LISTXATTR, OP_REMOVEXATTR,
	OP_ACCESS, OP_FALLOCATE, OP_POLL, OP_IOCTL, OP_SYMLINK, OP_READLINK,
	OP_LINK,
	OP_COUNT
};

enum hint_type { HINT_READ, HINT_READ_END, HINT_PROMOTE, HINT_WRITE, HINT_COUNT };

struct counters {
	uint64_t ops[OP_COUNT];
	uint64_t publishes;
	uint64_t publish_failures;
	uint64_t abandons;
	uint64_t cow_rewrites;
	uint64_t stale_opens;
	uint64_t lease_cache_hits;	/* opens served by a kept lease */
	uint64_t inval_entry;
	uint64_t inval_inode;
	uint64_t cache_stores;		/* direct writes put into the page cache */
	uint64_t dir_attr_hits;		/* directory GETATTRs answered here (dattr.c) */
	uint64_t events_own;		/* ... of this mount's own publishes (not acked) */
	uint64_t lookup_pos;
	uint64_t lookup_neg;
	uint64_t events;
	uint64_t events_current;	/* ... whose entry the kernel had right */
	uint64_t event_waits;		/* own changes waited for on the stream */
	uint64_t event_wait_timeouts;	/* ... whose event did not come in time */
	uint64_t generations;
	uint64_t hints[HINT_COUNT];
	/* Issue 25: each FUSE op's time in marufs (ops.c), and from a publish
	 * by another mount to its event here (events.c). */
	struct hist lat[OP_COUNT];
	struct hist publish_visible;
};

#define CNT_INC(m, field) __atomic_add_fetch(&(m)->cnt.field, 1, __ATOMIC_RELAXED)

struct mfs_opts {
	char *pool;		/* POOL URI from the command line */
	char *mountpoint;
	char *data;		/* auto|shm|tcp|rdma */
	char *coherence;	/* hw|flush */
	char *key_file;
	char *tls_ca, *tls_cert, *tls_key;	/* TLS 1.3 to marud over tcp */
	char *logfile;		/* daemonized: log here instead of syslog */
	unsigned int timeout_ms;
	unsigned int max_conns;
	size_t stream_bytes;		/* maru_client_opts.stream_bytes; 0: its default */
	int spin_us;			/* maru_client_opts.spin_us; 0 here */
	double entry_timeout;
	double attr_timeout;
	double negative_timeout;
	char *lookup_hints;	/* on|off */
	char *metrics;		/* ADDR:PORT of the /metrics endpoint, NULL none */
	int metrics_remote;	/* a non-loopback metrics address allowed */
	int histograms;		/* 0: no latency histograms (default 1) */
	unsigned int readahead_kb;	/* the mount's read_ahead_kb; 0: the kernel's */
	int show_help;
	int show_version;
};

struct itab;
struct ptab;
struct notifier;
struct events;
struct evring;
struct dcache;
struct pins;
struct hreg;
struct hintq;
struct lookup_hints;
struct httpd;

struct mfs {
	struct mfs_opts o;
	struct maru_client *c;
	struct fuse_session *se;
	struct maru_pool_info info;
	struct timespec mounted;	/* times of the .maru/ entries */
	struct itab *tab;		/* inode.c */
	struct ptab *pt;		/* pending.c */
	struct notifier *nt;		/* notify.c */
	struct events *ev;		/* events.c */
	struct evring *ring;		/* evring.c */
	struct dcache *dc;		/* dcache.c */
	struct dattr *da;		/* dattr.c */
	struct away *aw;		/* away.c */
	struct pins *pins;		/* pin.c */
	/* c while libmaru's lease cache is on (opts.lease_cache), else NULL */
	struct maru_client *lc;
	struct hreg *hr;		/* handle.c */
	struct hintq *hq;		/* hints.c */
	struct lookup_hints *lh;	/* lookup_hints.c, NULL when off */
	struct httpd *http;		/* metrics.c: the /metrics endpoint, or NULL */
	/* Bumped on every pool generation change: cached names of an older
	 * epoch are dropped (handles compare mfs_id_epoch() instead). */
	uint64_t epoch;
	uint64_t generation;
	uint64_t overflows;	/* events.c: overflow and generation events applied */
	struct counters cnt;
};

static inline uint64_t mfs_epoch(const struct mfs *m)
{
	return __atomic_load_n(&m->epoch, __ATOMIC_ACQUIRE);
}

/*
 * The epoch of id's pool: a handle or pending keeps it and fails with EIO
 * once it moved (that pool's marud restarted). On a cluster mount only
 * the restarted pool's files go stale, not the other pools'.
 */
static inline uint64_t mfs_id_epoch(const struct mfs *m, uint64_t id)
{
	return maru_client_epoch(m->c, id);
}

static inline struct mfs *req_mfs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* libmaru errors as FUSE replies: ESTALE on an open handle -> EIO. */
static inline int io_errno(int rc)
{
	if (rc == -ESTALE)
		return EIO;	/* the handle predates a marud restart */
	return rc < 0 ? -rc : rc;
}

#endif
