/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/datapath.h: the ops table behind which libmaru moves chunk bytes.
 * file.c checks the handle (stale, pending, bounds), reserves room before a
 * write, checks the session is alive before a direct path touches pool
 * memory, and holds the handle's lock; a data path only transfers and never
 * calls back up. shm.c copies in the shared pool mapping, tcp.c sends
 * READ/WRITE frames, rdma.c only probes for a device (no transfers yet).
 */
#ifndef MARU_DATAPATH_H
#define MARU_DATAPATH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client_priv.h"

struct dp_ops {
	enum maru_data_path kind;
	const char *name;
	/*
	 * 1: bytes go straight to pool memory, without marud: the handle owns
	 * the pending size and reservation (file.c grows it before a write or
	 * a truncate), and the session must be known alive before each call.
	 */
	int direct;
	/*
	 * 1: write feeds f->hs (when set) with the bytes it copies, in
	 * cache-sized pieces, so PUBLISH can carry the digest.
	 */
	int hashes;
	/* f->lock held for reading; len > 0, off < size, clamped by the caller. */
	ssize_t (*read)(struct maru_file *f, void *buf, size_t len, uint64_t off);
	/* f->lock held for writing; f is pending; room reserved for off+len. */
	ssize_t (*write)(struct maru_file *f, const void *buf, size_t len, uint64_t off);
	int (*truncate)(struct maru_file *f, uint64_t size);
	/* Make written bytes durable/visible per the coherence mode. */
	int (*sync)(struct maru_file *f);
};

extern const struct dp_ops dp_shm_ops;
extern const struct dp_ops dp_tcp_ops;
extern const struct dp_ops dp_rdma_ops;

/* 0 if an RDMA device exists here, else -ENODEV (reason in *why). */
int rdma_probe(const char **why);
/*
 * Make the client's rdma QP for the session s (marud's rdma listener from
 * HELLO): 0, or -errno with the reason in *why. dp_rdma_ops connects again
 * by itself after an error or a new session.
 */
int rdma_dp_open(struct maru_client *c, const char **why);
void rdma_dp_close(struct maru_client *c);
/* The handle is going away: drop its cached rkeys. */
void rdma_file_forget(struct maru_file *f);
/* The Prometheus lines of the rdma counters (c->st.rdma) into buf; length. */
size_t rdma_dp_stats(const struct maru_client *c, char *buf, size_t cap);
/*
 * Tests only (not exported by libmaru.so): key i cached for f, and one raw
 * READ/WRITE of len bytes at (addr, rkey) on the client's current QP, with
 * no reconnect: 0, -errno, or > 0 the failed completion's ibv_wc_status
 * (the QP is dropped then, as after any error).
 */
int rdma_test_key(struct maru_file *f, uint32_t i, uint64_t *addr, uint32_t *rkey,
		  uint64_t *len);
int rdma_test_post(struct maru_client *c, int write, uint64_t addr, uint32_t rkey,
		   uint32_t len, void *buf);

#endif
