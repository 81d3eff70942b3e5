/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/opts.h: the marufs command line (opts.c): the -o options into struct
 * mfs_opts, the help text, the arguments every mount passes on to libfuse,
 * the option words turned into libmaru's values, and sizes. mfs.c and
 * xattr.c call these; nothing here connects or mounts.
 */
#ifndef MARUFS_OPTS_H
#define MARUFS_OPTS_H

#include "mount.h"

#define DEFAULT_ENTRY_TIMEOUT	30.0
#define DEFAULT_ATTR_TIMEOUT	30.0
#define DEFAULT_NEG_TIMEOUT	30.0
/* a chunk read in 512 KiB READs: with its header one still fits a pipe of
 * the default pipe-max-size (1 MiB), so a reply from a mapped pool is still
 * spliced; 1 MiB READs would be copied by libfuse */
#define DEFAULT_READAHEAD_KB	512u

/*
 * The defaults, then marufs's options out of args (the first non-option
 * is the pool; the mountpoint and libfuse's own options stay in args,
 * fstab-only words are dropped). 0, or -1 as fuse_opt_parse() fails.
 */
int opts_parse(struct fuse_args *args, struct mfs_opts *o);
/* marufs's part of --help, on stdout. */
void opts_usage(const char *prog);
/* -o default_permissions, subtype=marufs and fsname=POOL (unless POOL
 * would need escaping) added to args; 0 or -ENOMEM. */
int opts_mount_args(const struct mfs_opts *o, struct fuse_args *args);
/* data= and coherence= as libmaru's values (NULL: the default); -EINVAL. */
int opts_data_path(const char *s, enum maru_data_path *out);
/* The data path's name as data= spells it ("tcp"), for the logs. */
const char *opts_data_path_name(enum maru_data_path p);
int opts_coherence(const char *s, enum maru_coherence *out);
void opts_free(struct mfs_opts *o);

#endif
