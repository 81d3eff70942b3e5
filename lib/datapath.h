/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/datapath.h: the ops table behind which libmaru moves chunk bytes. file.c
 * checks the handle (stale, pending, bounds) and holds its lock; a data path
 * only transfers. dp_shm.c copies in the shared pool mapping, dp_tcp.c sends
 * READ/WRITE frames, dp_rdma.c only probes for a device (no transfers yet).
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
	/* f->lock held for reading; len > 0, off < size, clamped by the caller. */
	ssize_t (*read)(struct maru_file *f, void *buf, size_t len, uint64_t off);
	/* f->lock held for writing; f is pending. All or nothing on -ENOSPC. */
	ssize_t (*write)(struct maru_file *f, const void *buf, size_t len, uint64_t off);
	int (*truncate)(struct maru_file *f, uint64_t size);
	/* Make written bytes durable/visible per the coherence mode. */
	int (*sync)(struct maru_file *f);
};

extern const struct dp_ops dp_shm_ops;
extern const struct dp_ops dp_tcp_ops;

/*
 * Map the pool a HELLO described (path, size, uuid) here. -ENODEV with a
 * reason in *why when it cannot be opened, mapped or its superblock differs.
 */
int shm_map_open(const struct session *s, struct shm_map **out, const char **why);
void shm_map_close(struct shm_map *m);
/* 0 if an RDMA device exists here, else -ENODEV (reason in *why). */
int rdma_probe(const char **why);

#endif
