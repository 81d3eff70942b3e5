/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pending_priv.h: the layout of a pending version and of this mount's
 * table of them, for pending.c, which owns every field (see its header for
 * what they mean and the locks that guard them), and pendio.c, which does
 * I/O on the file of one under p->rw.
 */
#ifndef MARUFS_PENDING_PRIV_H
#define MARUFS_PENDING_PRIV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mount.h"

#define PEND_BUCKETS	4096

enum pend_state {
	PEND_PENDING = 0,	/* file is a pending version */
	PEND_PUBLISHED,		/* file is now a lease on the published version */
	PEND_FAILED,		/* a write failed: never publish, abandon */
	PEND_DEAD,		/* abandoned or publish refused; file may be NULL */
};

/*
 * refs counts handles, pins and inode-table links; writers and readers
 * count the handles attached; active counts writer handles not flushed
 * since they last opened or wrote.
 */
struct pending {
	struct mfs *m;
	pthread_rwlock_t rw;
	struct maru_file *file;
	uint64_t ino;		/* the pending version id */
	uint64_t src_ino;	/* version rewritten (0 for a new file) */
	uint64_t epoch;
	int state;		/* enum pend_state, under rw (read racily ok) */
	int err;		/* -errno that failed it */
	int modified;		/* content differs from what it started as */
	int wrote;		/* data came through a handle (not just O_TRUNC) */
	int unlinked;		/* name removed: never publish */
	int killed;		/* last flush came from a task dying of a signal */
	int mapped;		/* a zero-copy mapping wrote bytes the kernel never saw */
	int direct;		/* a direct_io write did: the kernel cached none of them */
	int published;		/* ino became the published version (stays set) */
	int refs;
	/* under pt->lock: */
	uint64_t parent;
	char *name;
	int writers, readers, active;
	int cached;		/* handles that go through the kernel's page cache
				 * of the inode: readers, writers not direct_io */
	int in_table;
	struct pending *hnext;
};

struct ptab {
	pthread_mutex_t lock;
	struct pending *b[PEND_BUCKETS];
	size_t count;
};

/* p's bytes are readable (its file open, its generation current); p->rw held. */
int pend_readable_locked(const struct pending *p);

#endif
