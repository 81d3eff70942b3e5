/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/preload/preload_priv.h: what the files of libmaru-preload.so share:
 * the next definitions of the calls it interposes (preload.c finds them),
 * its settings from the environment, the thread-local "our own call" flag,
 * the per-descriptor read cache (cache.c) that read.c serves from, and the
 * one lock, pl_tab_lock, that guards the cache's tables and mmap.c's
 * regions. The shim is built with hidden visibility: only its interposed
 * calls (EXPORT) leave the library.
 */
#ifndef MARU_PRELOAD_PRIV_H
#define MARU_PRELOAD_PRIV_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "maru/libmaru.h"

#define EXPORT __attribute__((visibility("default")))

/* The next definition of every interposed call (dlsym RTLD_NEXT). */
struct pl_real {
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*pread)(int, void *, size_t, off_t);
	ssize_t (*pread64)(int, void *, size_t, off64_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*preadv)(int, const struct iovec *, int, off_t);
	ssize_t (*preadv64)(int, const struct iovec *, int, off64_t);
	ssize_t (*read_chk)(int, void *, size_t, size_t);
	ssize_t (*pread_chk)(int, void *, size_t, off_t, size_t);
	ssize_t (*pread64_chk)(int, void *, size_t, off64_t, size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	void *(*mmap64)(void *, size_t, int, int, int, off64_t);
	int (*munmap)(void *, size_t);
	int (*close)(int);
	int (*fclose)(FILE *);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
};

/* ---- preload.c: setup and settings ---- */

extern struct pl_real pl_real;
extern int pl_enabled;			/* MARU_PRELOAD not 0/off/no */
extern size_t pl_min_read;		/* MARU_PRELOAD_MIN */
extern long pl_page_size;
extern __thread int pl_in_shim;		/* our own (and libmaru's) calls pass through */

/* Find the next definitions and read the environment (pl_setup: once). */
extern pthread_once_t pl_init_once;
void pl_init(void);

static inline void pl_setup(void)
{
	pthread_once(&pl_init_once, pl_init);
}
/* One line to stderr when MARU_PRELOAD_LOG is set; errno kept. */
void plog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- cache.c: the read cache and the mappings kept across opens ---- */

/* Guards the cache's tables, entry refcounts and mmap.c's regions. */
extern pthread_mutex_t pl_tab_lock;

/* A version as fstat tells it, the key of a kept mapping. */
struct kkey {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* A descriptor's read cache: a mapping, or neg = "not served here". */
struct ent {
	struct ent *next;
	int fd;
	int refs;		/* the table's, plus one per reader */
	int dropping;		/* unlinked by a close: it waits for the readers */
	int neg;
	struct maru_map *m;
	struct kkey key;	/* the file's version: the table's key, m's when kept */
	pthread_mutex_t pos_lock;	/* read/readv: offset read-modify-write */
};

/* The entry of a read-only descriptor, with a reference, or NULL. */
struct ent *pl_ent_get(int fd);
void pl_ent_put(struct ent *e);
/* Is the filesystem of st_dev a FUSE mount (remembered per device)? */
int pl_is_fuse(int fd, dev_t dev);
/* maru_unmap() as the shim's own call. */
void pl_unmap_quiet(struct maru_map *m);

#endif
