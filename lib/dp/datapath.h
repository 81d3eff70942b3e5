/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/datapath.h: the ops table behind which libmaru moves chunk bytes.
 * Everything around a transfer is decided above it, once: file.c checks
 * the handle (stale, pending, bounds), reserves room before a write, checks
 * the session is alive before a direct path touches pool memory, fills the
 * hole before a write or a truncate past the size, moves the size, counts
 * the bytes, drops what a path keeps on a handle (forget) and holds the
 * handle's lock; session.c chooses a path (probe, open) and drops it
 * (close); stats.c asks each path for its own lines (stats). A data path
 * only moves bytes: what it needs from above (the control call, the
 * session's facts) it is handed as a value at open or reaches through the
 * callbacks of c->env, so it never calls back up. shm.c copies in the
 * shared pool mapping, tcp.c sends READ/WRITE frames, rdma.c (with
 * rdma_qp.c and rdma_keys.c) posts RDMA READs and WRITEs on a QP of its own.
 */
#ifndef MARU_DATAPATH_H
#define MARU_DATAPATH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "client_priv.h"

struct prom;

struct dp_ops {
	enum maru_data_path kind;
	const char *name;
	/*
	 * 1: bytes go straight to pool memory, without marud: the handle owns
	 * the pending size and reservation (file.c grows it before a write or
	 * a truncate, fills holes through zero and moves the size), and the
	 * session must be known alive before each call.
	 */
	int direct;
	/*
	 * 1: write feeds f->hs (when set) with the bytes it copies, in
	 * cache-sized pieces, so PUBLISH can carry the digest.
	 */
	int hashes;
	/*
	 * Can this path serve session s from here at all (a device, an
	 * offer)? 0, or -ENODEV with the reason in *why. NULL: always.
	 */
	int (*probe)(const struct session *s, const char **why);
	/*
	 * Make the path ready for session s (again after the pool moved): 0,
	 * or -errno with the reason in *why, leaving nothing behind. c->dp_lock
	 * held for writing. NULL: nothing to open.
	 */
	int (*open)(struct maru_client *c, const struct session *s, const char **why);
	/* Drop what open made (another path is chosen, or the client goes). */
	void (*close)(struct maru_client *c);
	/*
	 * Drop what this path keeps on f (f->held names the path): the handle
	 * is closed, or its rights at marud ended (publish). f->lock held for
	 * writing. NULL: it keeps nothing.
	 */
	void (*forget)(struct maru_file *f);
	/* Its own Prometheus families, written with lib/common/prom into t. */
	void (*stats)(const struct maru_client *c, struct prom *t);
	/*
	 * f->lock held for reading; len > 0, off < size, clamped by the caller.
	 * The bytes read (short only at the version's end) or -errno.
	 */
	ssize_t (*read)(struct maru_file *f, void *buf, size_t len, uint64_t off);
	/*
	 * f->lock held for writing; f is pending; room reserved for off+len and,
	 * for a direct path, [size, off) already zero-filled. len or -errno.
	 */
	ssize_t (*write)(struct maru_file *f, const void *buf, size_t len, uint64_t off);
	/* Direct paths: zeros over [off, off+len), a hole file.c fills. */
	int (*zero)(struct maru_file *f, uint64_t off, uint64_t len);
	/*
	 * Paths whose sizes marud keeps (tcp): truncate there, the handle
	 * following the reply. NULL: file.c zero-fills and moves the size.
	 */
	int (*truncate)(struct maru_file *f, uint64_t size);
	/* Make written bytes durable/visible per the coherence mode. */
	int (*sync)(struct maru_file *f);
};

extern const struct dp_ops dp_shm_ops;
extern const struct dp_ops dp_tcp_ops;
extern const struct dp_ops dp_rdma_ops;

/* The table of path p; NULL for MARU_DATA_AUTO. */
static inline const struct dp_ops *dp_of(enum maru_data_path p)
{
	switch (p) {
	case MARU_DATA_SHM: return &dp_shm_ops;
	case MARU_DATA_RDMA: return &dp_rdma_ops;
	case MARU_DATA_TCP: return &dp_tcp_ops;
	default: return NULL;
	}
}

/* The facts of s a path may ask for again later (struct dp_env). */
static inline void dp_facts_of(const struct session *s, struct dp_facts *out)
{
	out->epoch = s->epoch;
	out->generation = s->generation;
	memcpy(out->token, s->token, sizeof(out->token));
	out->send_max = s->send_max;
	out->rdma_port = s->rdma_port;
	out->rdma_flags = s->rdma_flags;
	memcpy(out->rdma_host, s->rdma_host, sizeof(out->rdma_host));
}

/*
 * Tests only (not exported by libmaru.so): key i cached for f, and one raw
 * READ/WRITE of len bytes at (addr, rkey) on the client's current QP, with
 * no reconnect: 0, -errno, or > 0 the failed completion's ibv_wc_status
 * (the QP is dropped then, as after any error).
 */
int dp_rdma_test_key(struct maru_file *f, uint32_t i, uint64_t *addr, uint32_t *rkey,
		     uint64_t *len);
int dp_rdma_test_post(struct maru_client *c, int write, uint64_t addr, uint32_t rkey,
		      uint32_t len, void *buf);

#endif
