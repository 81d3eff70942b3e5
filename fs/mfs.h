/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/mfs.h: the life of one mount context (mfs.c), in the order main.c
 * calls it: the command line, the log, the tables, the client, the
 * session's mount and loop, and the teardown in reverse.
 */
#ifndef MARUFS_MFS_H
#define MARUFS_MFS_H

#include <stdarg.h>
#include <stddef.h>

#include "mount.h"

/* Leases libmaru keeps for reopening (opts.lease_cache). */
#define MFS_LEASE_CACHE		4096

/*
 * The command line into m->o and co: -1 to go on mounting (m->o.mountpoint
 * set), else main()'s exit code: 0 after --help or --version, 2 on a
 * wrong command line (the usage said on stderr).
 */
int mfs_cmdline(struct mfs *m, struct fuse_args *args, struct fuse_cmdline_opts *co);

/* The log sink for m (-o logfile or not); 0 or -1 (said on stderr). */
int mfs_log_start(struct mfs *m, int foreground, int debug);
/* Forget the log file's path (main()'s end). */
void mfs_log_end(void);
/* path as an absolute path into *out (malloc'd): fuse_daemonize() changes
 * to "/". 0 or -errno. */
int mfs_logfile_path(const char *path, char **out);
/* libfuse's messages, into marufs's sink (fuse_set_log_func). */
void mfs_fuse_log_sink(enum fuse_log_level level, const char *fmt, va_list ap);

/* Every table of m (inode, pending, caches, notifier, ...); 0 or -ENOMEM. */
int mfs_tables_new(struct mfs *m);
/* Handles, pins and inode links close pending files: before the client. */
void mfs_tables_drop_files(struct mfs *m);
void mfs_tables_free(struct mfs *m);

/*
 * libmaru's client options for m's -o options; name (len bytes) holds the
 * client's name, co points at it. 0, or -EINVAL for a word or value out of
 * range (logged).
 */
int mfs_client_opts(struct mfs *m, struct maru_client_opts *co, char *name, size_t len);
/* A client connected with those options; 0 or -errno (logged). */
int mfs_connect(struct mfs *m, struct maru_client **out);
/*
 * libmaru's generation callback: m's generation and epoch move on (every
 * handle and pending of the old epoch fails), the kernel's caches are
 * dropped, and the change is counted once that ran.
 */
void mfs_on_generation(void *arg, uint64_t old_gen, uint64_t new_gen);

/*
 * Mount m->se at co->mountpoint, daemonize unless foreground, connect
 * again if c is NULL (the fork lost it), start the threads and run the FUSE
 * loop until unmount; then stop, unmount and free c. main()'s exit code.
 */
int mfs_serve(struct mfs *m, struct fuse_cmdline_opts *co, struct maru_client *c);

#endif
