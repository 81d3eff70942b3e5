/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/main.c: the marufs command, `marufs [options] POOL MOUNTPOINT` (also
 * as mount.fuse3 runs it from fstab). main() owns the mount context
 * (struct mfs, mount.h) and calls mfs.c's steps in order: command line,
 * log, tables, a first connection (so that a wrong URI fails the mount
 * command itself), the session, then mfs_serve(); teardown in reverse.
 */
#include <stdlib.h>
#include <string.h>

#include "mfs.h"
#include "ops.h"
#include "opts.h"

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct fuse_lowlevel_ops ops;
	struct maru_client *c = NULL;
	struct mfs m;
	int ret;

	memset(&m, 0, sizeof(m));
	memset(&co, 0, sizeof(co));
	ret = mfs_cmdline(&m, &args, &co);
	if (ret >= 0)
		goto out_args;
	ret = 1;
	if (mfs_log_start(&m, co.foreground, co.debug) < 0)
		goto out_args;
	fuse_set_log_func(mfs_fuse_log_sink);
	if (mfs_tables_new(&m) < 0 || mfs_connect(&m, &c) < 0)
		goto out_tables;
	if (!co.foreground) {
		/* the fork in fuse_daemonize() would lose libmaru's threads */
		maru_client_free(c);
		c = NULL;
	}
	ops_init(&ops);
	m.se = fuse_session_new(&args, &ops, sizeof(ops), &m);
	if (!m.se)
		goto out_client;
	if (fuse_set_signal_handlers(m.se) != 0)
		goto out_session;
	ret = mfs_serve(&m, &co, c);
	c = NULL;
	fuse_remove_signal_handlers(m.se);
out_session:
	fuse_session_destroy(m.se);
	m.se = NULL;
out_client:
	mfs_tables_drop_files(&m);
	if (c)
		maru_client_free(c);
out_tables:
	mfs_tables_free(&m);
out_args:
	free(co.mountpoint);
	mfs_log_end();
	opts_free(&m.o);
	fuse_opt_free_args(&args);
	return ret;
}
