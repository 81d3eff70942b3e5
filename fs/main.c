/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/main.c: the marufs command. Parses `marufs [options] POOL MOUNTPOINT`
 * (also as invoked by mount.fuse3 from fstab), connects the libmaru client,
 * mounts, daemonizes and runs the multi-threaded FUSE loop until unmount.
 *
 * The client is connected once before mounting, so that a wrong URI or an
 * unreachable marud fails the mount command itself; fuse_daemonize() forks
 * and threads do not survive a fork, so a daemonized marufs connects again
 * in the child.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "marufs.h"

#define DEFAULT_ENTRY_TIMEOUT	30.0
#define DEFAULT_ATTR_TIMEOUT	30.0
#define DEFAULT_NEG_TIMEOUT	30.0
#define DEFAULT_IDLE_THREADS	16
#define DEFAULT_MAX_THREADS	64

static struct mfs mfs_store;
struct mfs *mfs = &mfs_store;

enum { KEY_HELP, KEY_VERSION };

#define MOPT(t, p) { t, offsetof(struct mfs_opts, p), 1 }

static const struct fuse_opt mfs_optspec[] = {
	MOPT("data=%s", data),
	MOPT("coherence=%s", coherence),
	MOPT("key_file=%s", key_file),
	MOPT("timeout_ms=%u", timeout_ms),
	MOPT("entry_timeout=%lf", entry_timeout),
	MOPT("attr_timeout=%lf", attr_timeout),
	MOPT("negative_timeout=%lf", negative_timeout),
	MOPT("max_conns=%u", max_conns),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	/* fstab-only options that may reach us past mount.fuse3 */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

static void usage(const char *prog)
{
	printf("usage: %s [options] POOL MOUNTPOINT\n"
	       "POOL is maru://host[:port] or maru+unix:///path/to/marud.sock\n\n"
	       "marufs options:\n"
	       "    -o data=auto|shm|tcp|rdma   data path (default auto)\n"
	       "    -o coherence=hw|flush       flush=non-coherent shared CXL memory (hw)\n"
	       "    -o key_file=PATH            shared secret for marud (mode 0600)\n"
	       "    -o timeout_ms=N             bound on one call while marud is down (5000)\n"
	       "    -o max_conns=N              control sockets for parallel calls (4)\n"
	       "    -o entry_timeout=SECS       cache of positive names (%.0f)\n"
	       "    -o attr_timeout=SECS        cache of attributes (%.0f)\n"
	       "    -o negative_timeout=SECS    cache of missing names (%.0f)\n"
	       "    -h, --help                  this text\n"
	       "    -V, --version               print versions\n\n",
	       prog, DEFAULT_ENTRY_TIMEOUT, DEFAULT_ATTR_TIMEOUT, DEFAULT_NEG_TIMEOUT);
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct mfs_opts *o = data;

	switch (key) {
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		/* the first non-option is the pool; the mountpoint goes on to libfuse */
		if (!o->pool) {
			o->pool = strdup(arg);
			return o->pool ? 0 : -1;
		}
		return 1;
	}
	return 1;
}

static void log_prio(int prio, const char *fmt, ...) LOG_PRINTF(2, 3);

static void log_prio(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(prio, fmt, ap);
	va_end(ap);
}

/* libfuse's messages end in a newline; our sink adds its own. */
static void fuse_log_sink(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t len;

	vsnprintf(line, sizeof(line), fmt, ap);
	len = strlen(line);
	while (len && line[len - 1] == '\n')
		line[--len] = '\0';
	log_prio((int)level, "fuse: %s", line);
}

static int parse_data_path(const char *s, enum maru_data_path *out)
{
	static const struct {
		const char *name;
		enum maru_data_path path;
	} paths[] = {
		{ "auto", MARU_DATA_AUTO }, { "shm", MARU_DATA_SHM },
		{ "tcp", MARU_DATA_TCP }, { "rdma", MARU_DATA_RDMA },
	};
	size_t i;

	if (!s) {
		*out = MARU_DATA_AUTO;
		return 0;
	}
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (strcmp(s, paths[i].name) == 0) {
			*out = paths[i].path;
			return 0;
		}
	}
	return -EINVAL;
}

static void on_generation(void *arg, uint64_t old_gen, uint64_t new_gen)
{
	__atomic_store_n(&mfs->generation, new_gen, __ATOMIC_RELEASE);
	/* every handle and pending of the old epoch now fails with EIO */
	__atomic_add_fetch(&mfs->epoch, 1, __ATOMIC_ACQ_REL);
	CNT_INC(generations);
	log_info("pool generation %llu -> %llu: dropping cached names and handles",
		 (unsigned long long)old_gen, (unsigned long long)new_gen);
	notify_inval_all();
}

/* hw: coherent memory or the pool node itself; flush: non-coherent CXL. */
static int parse_coherence(const char *s, enum maru_coherence *out)
{
	if (!s || strcmp(s, "hw") == 0)
		*out = MARU_COHERENCE_HW;
	else if (strcmp(s, "flush") == 0)
		*out = MARU_COHERENCE_FLUSH;
	else
		return -EINVAL;
	return 0;
}

static int client_connect(struct maru_client **out)
{
	struct maru_client_opts co;
	char name[128];
	int rc;

	maru_client_opts_init(&co, sizeof(co));
	co.uri = mfs->o.pool;
	co.key_file = mfs->o.key_file;
	rc = parse_data_path(mfs->o.data, &co.data_path);
	if (rc < 0) {
		log_warnx("data=%s: expected auto, shm, tcp or rdma", mfs->o.data);
		return rc;
	}
	if (parse_coherence(mfs->o.coherence, &co.coherence) < 0) {
		log_warnx("coherence=%s: expected hw or flush", mfs->o.coherence);
		return -EINVAL;
	}
	if (mfs->o.timeout_ms)
		co.timeout_ms = mfs->o.timeout_ms;
	if (mfs->o.max_conns)
		co.max_conns = mfs->o.max_conns;
	snprintf(name, sizeof(name), "marufs:%s", mfs->o.mountpoint);
	co.client_name = name;
	rc = maru_client_new(&co, out);
	if (rc < 0)
		log_warnx("cannot connect to %s: %s", mfs->o.pool, maru_strerror(rc));
	return rc;
}

static int client_ready(struct maru_client *c)
{
	int rc;

	mfs->c = c;
	maru_client_on_generation(c, on_generation, NULL);
	rc = maru_client_pool_info(c, &mfs->info);
	if (rc < 0) {
		log_warnx("pool info: %s", maru_strerror(rc));
		return rc;
	}
	mfs->generation = mfs->info.generation;
	return 0;
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *co)
{
	struct fuse_loop_config *cfg;
	int ret;

	if (co->singlethread)
		return fuse_session_loop(se);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_idle_threads(cfg, co->max_idle_threads == UINT_MAX ?
				       DEFAULT_IDLE_THREADS : co->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, co->max_threads > DEFAULT_MAX_THREADS ?
				      co->max_threads : DEFAULT_MAX_THREADS);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

static int add_mount_opts(struct fuse_args *args)
{
	char *fsname;
	size_t len;
	int rc = 0;

	if (fuse_opt_add_arg(args, "-odefault_permissions") < 0 ||
	    fuse_opt_add_arg(args, "-osubtype=marufs") < 0)
		return -ENOMEM;
	if (strchr(mfs->o.pool, ',') || strchr(mfs->o.pool, '\\'))
		return 0;	/* would need escaping; the default fsname will do */
	len = strlen(mfs->o.pool) + sizeof("-ofsname=");
	fsname = malloc(len);
	if (!fsname)
		return -ENOMEM;
	snprintf(fsname, len, "-ofsname=%s", mfs->o.pool);
	if (fuse_opt_add_arg(args, fsname) < 0)
		rc = -ENOMEM;
	free(fsname);
	return rc;
}

static int setup(struct fuse_args *args, struct fuse_cmdline_opts *co)
{
	mfs->o.entry_timeout = DEFAULT_ENTRY_TIMEOUT;
	mfs->o.attr_timeout = DEFAULT_ATTR_TIMEOUT;
	mfs->o.negative_timeout = DEFAULT_NEG_TIMEOUT;
	if (fuse_opt_parse(args, &mfs->o, mfs_optspec, opt_proc) < 0)
		return 2;
	if (mfs->o.show_help) {
		usage(args->argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		return 0;
	}
	if (mfs->o.show_version) {
		printf("marufs %s (libmaru %s)\n", MARU_VERSION, maru_version());
		fuse_lowlevel_version();
		return 0;
	}
	if (!mfs->o.pool || add_mount_opts(args) < 0)
		goto bad;
	if (fuse_parse_cmdline(args, co) != 0)
		return 2;
	if (!co->mountpoint)
		goto bad;
	mfs->o.mountpoint = co->mountpoint;
	return -1;
bad:
	fprintf(stderr, "usage: %s [options] POOL MOUNTPOINT (--help for more)\n",
		args->argv[0]);
	return 2;
}

static int serve(struct fuse_session *se, struct fuse_cmdline_opts *co,
		 struct maru_client *c)
{
	int ret = 1;

	if (fuse_session_mount(se, co->mountpoint) != 0)
		goto out_free;
	fuse_daemonize(co->foreground);
	if (!c && client_connect(&c) < 0)
		goto out_unmount;
	if (client_ready(c) < 0 || notify_init() < 0 || notify_start() < 0)
		goto out_unmount;
	log_info("mounted %s on %s (data path %d)", mfs->o.pool, co->mountpoint,
		 (int)mfs->info.data_path);
	ret = run_loop(se, co);
	/* a signal asking us to stop is a clean shutdown too */
	if (ret == SIGTERM || ret == SIGINT || ret == SIGHUP)
		ret = 0;
	notify_stop();
out_unmount:
	fuse_session_unmount(se);
out_free:
	ops_release_all();
	itab_destroy();	/* closes pending files: before the client goes */
	if (c)
		maru_client_free(c);
	mfs->c = NULL;
	return ret ? 1 : 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct fuse_lowlevel_ops ops;
	struct fuse_session *se;
	struct maru_client *c = NULL;
	int ret;

	memset(&co, 0, sizeof(co));
	ret = setup(&args, &co);
	if (ret >= 0)
		goto out_args;
	log_init("marufs", co.foreground, co.debug);
	fuse_set_log_func(fuse_log_sink);
	ret = 1;
	if (client_connect(&c) < 0 || itab_init() < 0)
		goto out_args;
	if (!co.foreground) {
		/* the fork in fuse_daemonize() would lose libmaru's threads */
		maru_client_free(c);
		c = NULL;
	}
	ops_init(&ops);
	se = fuse_session_new(&args, &ops, sizeof(ops), mfs);
	if (!se)
		goto out_client;
	mfs->se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	ret = serve(se, &co, c);
	c = NULL;
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	mfs->se = NULL;
out_client:
	itab_destroy();
	if (c)
		maru_client_free(c);
out_args:
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
