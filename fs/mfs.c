/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/mfs.c: the life of one mount context (struct mfs, mount.h), all that
 * marufs's main() does around it: the command line into options
 * (opts.c), the log sink, the libmaru client's options and connection, the
 * tables built and torn down in order, the session's threads, the mount
 * and the FUSE loop. Here so that the unit tests reach it (mfs_test.c);
 * main.c only calls these in order.
 *
 * The client is connected once before mounting, so that a wrong URI or an
 * unreachable marud fails the mount command itself; fuse_daemonize() forks
 * and threads do not survive a fork, so a daemonized marufs connects again
 * in the child. Logging: stderr in the foreground, syslog once daemonized,
 * or -o logfile=PATH (appended, reopened on SIGUSR1); libmaru's own lines
 * come through log_fn into the same sink. The log path is the one
 * file-scope variable: the SIGUSR1 handler needs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "away.h"
#include "dattr.h"
#include "dcache.h"
#include "events.h"
#include "evring.h"
#include "handle.h"
#include "hints.h"
#include "inode.h"
#include "hist.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"
#include "mfs.h"
#include "notify.h"
#include "opts.h"
#include "pending.h"
#include "pin.h"

#define DEFAULT_IDLE_THREADS	16
#define DEFAULT_MAX_THREADS	64
#define LOGFILE_MODE		0640

/* -o logfile, absolute: reopened by the SIGUSR1 handler. */
static char *log_path;

static void log_prio(int prio, const char *fmt, ...) LOG_PRINTF(2, 3);

static void log_prio(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(prio, fmt, ap);
	va_end(ap);
}

/* libfuse's messages end in a newline; our sink adds its own. */
void mfs_fuse_log_sink(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t len;

	vsnprintf(line, sizeof(line), fmt, ap);
	len = strlen(line);
	while (len && line[len - 1] == '\n')
		line[--len] = '\0';
	log_prio((int)level, "fuse: %s", line);
}

/* libmaru's lines (maru_client_opts.log_fn), into marufs's own sink. */
static void libmaru_log_sink(void *arg, int priority, const char *msg)
{
	log_prio(priority, "libmaru: %s", msg);
}

/* ---- -o logfile ---- */

/* Point stderr (what log.c writes in its stderr mode) at the log file. */
static int logfile_attach(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, LOGFILE_MODE);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fd != STDERR_FILENO && dup3(fd, STDERR_FILENO, O_CLOEXEC) < 0)
		rc = -errno;
	if (fd != STDERR_FILENO)
		close(fd);
	return rc;
}

/* SIGUSR1: reopen the log file (after logrotate moved it). */
static void on_sigusr1(int sig)
{
	int saved = errno;

	if (log_path)
		logfile_attach(log_path);
	errno = saved;
}

/* The log file as an absolute path: fuse_daemonize() changes to "/". */
int mfs_logfile_path(const char *path, char **out)
{
	char cwd[PATH_MAX];
	size_t len;

	if (path[0] == '/') {
		*out = strdup(path);
		return *out ? 0 : -ENOMEM;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	len = strlen(cwd) + strlen(path) + 2;
	*out = malloc(len);
	if (!*out)
		return -ENOMEM;
	snprintf(*out, len, "%s/%s", cwd, path);
	return 0;
}

/*
 * Start logging. With a log file, check it can be opened now (so a wrong
 * path fails the mount command) and write to it from the start in the
 * foreground, from the fork on when daemonized (log_daemonized()); messages
 * before the fork stay on the terminal.
 */
int mfs_log_start(struct mfs *m, int foreground, int debug)
{
	struct sigaction sa;
	int fd, rc;

	if (!m->o.logfile) {
		log_init("marufs", foreground, debug);
		return 0;
	}
	rc = mfs_logfile_path(m->o.logfile, &log_path);
	if (rc == 0) {
		fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, LOGFILE_MODE);
		rc = fd < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
	}
	if (rc < 0) {
		fprintf(stderr, "marufs: logfile=%s: %s\n", m->o.logfile, strerror(-rc));
		return -1;
	}
	log_init("marufs", 1, debug);
	if (foreground && logfile_attach(log_path) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGUSR1, &sa, NULL);
}

void mfs_log_end(void)
{
	free(log_path);
	log_path = NULL;
}

/* fuse_daemonize() pointed stderr at /dev/null: back to the log file. */
static void log_daemonized(int foreground)
{
	if (!foreground && log_path)
		logfile_attach(log_path);
}

/* ---- the libmaru client ---- */

/* Queued after the invalidation of a new generation: counted once it ran. */
static void generation_applied(void *arg, uint64_t gen)
{
	struct mfs *m = arg;

	CNT_INC(m, generations);
}

void mfs_on_generation(void *arg, uint64_t old_gen, uint64_t new_gen)
{
	struct mfs *m = arg;

	__atomic_store_n(&m->generation, new_gen, __ATOMIC_RELEASE);
	/* every handle and pending of the old epoch now fails with EIO */
	__atomic_add_fetch(&m->epoch, 1, __ATOMIC_ACQ_REL);
	log_info("pool generation %llu -> %llu: dropping cached names; open files "
		 "of the restarted pool fail with EIO",
		 (unsigned long long)old_gen, (unsigned long long)new_gen);
	/*
	 * The kernel's cached pages go too: they would keep answering reads
	 * of old descriptors. marufs_generation_changes_total counts a change
	 * once that ran (the notifier runs its jobs in order), so whoever
	 * watches it knows old descriptors get EIO from then on.
	 */
	notify_inval_all(m->nt);
	notify_call(m->nt, generation_applied, m, new_gen);
}

int mfs_client_opts(struct mfs *m, struct maru_client_opts *co, char *name,
		    size_t len)
{
	int rc;

	maru_client_opts_init(co, sizeof(*co));
	co->uri = m->o.pool;
	co->key_file = m->o.key_file;
	co->tls_ca = m->o.tls_ca;
	co->tls_cert = m->o.tls_cert;
	co->tls_key = m->o.tls_key;
	co->log_fn = libmaru_log_sink;
	co->log_arg = m;
	co->log_priority = log_get_verbose() ? LOG_DEBUG : LOG_INFO;
	rc = opts_data_path(m->o.data, &co->data_path);
	if (rc < 0) {
		log_warnx("data=%s: expected auto, shm, tcp or rdma", m->o.data);
		return rc;
	}
	if (opts_coherence(m->o.coherence, &co->coherence) < 0) {
		log_warnx("coherence=%s: expected hw or flush", m->o.coherence);
		return -EINVAL;
	}
	if (m->o.timeout_ms)
		co->timeout_ms = m->o.timeout_ms;
	if (m->o.max_conns)
		co->max_conns = m->o.max_conns;
	co->stream_bytes = m->o.stream_bytes;
	/* Off unless asked: polling did not make a create or a lookup through
	 * the mount any faster (marufs(8)), and it costs CPU. */
	if (m->o.spin_us > 10000 || m->o.spin_us < 0) {
		log_warnx("spin_us=%d: expected 0 to 10000 microseconds", m->o.spin_us);
		return -EINVAL;
	}
	co->spin_us = (unsigned int)m->o.spin_us;
	/* leases of small files the kernel still holds, for their next open */
	co->lease_cache = MFS_LEASE_CACHE;
	snprintf(name, len, "marufs:%s", m->o.mountpoint);
	co->client_name = name;
	return 0;
}

int mfs_connect(struct mfs *m, struct maru_client **out)
{
	struct maru_client_opts co;
	char name[128];
	int rc;

	rc = mfs_client_opts(m, &co, name, sizeof(name));
	if (rc < 0)
		return rc;
	rc = maru_client_new(&co, out);
	if (rc < 0)
		log_warnx("cannot connect to %s: %s", m->o.pool, maru_strerror(rc));
	return rc;
}

static int client_ready(struct mfs *m, struct maru_client *c)
{
	int rc;

	m->c = c;
	maru_client_on_generation(c, mfs_on_generation, m);
	rc = maru_client_pool_info(c, &m->info);
	if (rc < 0) {
		log_warnx("pool info: %s", maru_strerror(rc));
		return rc;
	}
	m->generation = m->info.generation;
	m->lc = c;
	if (strncmp(m->o.pool, "maru+etcd://", 12) == 0)
		away_many_pools(m->aw);
	return 0;
}

/* ---- the mount's tables ---- */

int mfs_tables_new(struct mfs *m)
{
	clock_gettime(CLOCK_REALTIME, &m->mounted);
	if (itab_new(&pend_payload_ops, &m->tab) < 0 || ptab_new(&m->pt) < 0 ||
	    dcache_new(&m->dc) < 0 || dattr_new(m->o.attr_timeout, &m->da) < 0 ||
	    away_new(&m->aw) < 0 || pins_new(&m->pins) < 0 || hreg_new(&m->hr) < 0 ||
	    notify_new(m, &m->nt) < 0 || evring_new(m, &m->ring) < 0)
		return -ENOMEM;
	return 0;
}

/* Handles, pins and inode links close pending files: before the client. */
void mfs_tables_drop_files(struct mfs *m)
{
	if (m->hr)
		hreg_release_all(m);
	pins_free(m->pins);
	m->pins = NULL;
	itab_free(m->tab);
	m->tab = NULL;
	/* closing pendings may have kept leases: maru_client_free() closes
	 * them; from now on a close closes */
	m->lc = NULL;
}

void mfs_tables_free(struct mfs *m)
{
	mfs_tables_drop_files(m);
	ptab_free(m->pt);
	notify_free(m->nt);
	evring_free(m->ring);
	dcache_free(m->dc);
	dattr_free(m->da);
	away_free(m->aw);
	hreg_free(m->hr);
	m->pt = NULL;
	m->nt = NULL;
	m->ring = NULL;
	m->dc = NULL;
	m->da = NULL;
	m->aw = NULL;
	m->hr = NULL;
}

/* The hint sender, and lookup hints unless -o lookup_hints=off. */
static int hints_start(struct mfs *m)
{
	const char *lh = m->o.lookup_hints ? m->o.lookup_hints : "on";

	if (strcmp(lh, "on") && strcmp(lh, "off")) {
		log_warnx("lookup_hints=%s: expected on or off", lh);
		return -EINVAL;
	}
	if (hintq_new(m, &m->hq) < 0 || hintq_start(m->hq) < 0)
		return -ENOMEM;
	if (!strcmp(lh, "on") && lookup_hints_new(m, &m->lh) < 0)
		return -ENOMEM;
	return 0;
}

static int threads_start(struct mfs *m)
{
	if (notify_start(m->nt) < 0 || hints_start(m) < 0)
		return -1;
	if (events_start(m, &m->ev) < 0)
		return -1;
	return metrics_serve(m) < 0 ? -1 : 0;
}

/* The event thread first (it queues jobs), then the notifier (it runs acks
 * that point at the event thread's state), then free that state. */
static void threads_stop(struct mfs *m)
{
	metrics_unserve(m);	/* a scrape reads every table below */
	events_stop(m->ev);
	evring_stop(m->ring);
	notify_stop(m->nt);
	events_free(m->ev);
	m->ev = NULL;
	lookup_hints_free(m->lh);	/* ends its batches into the queue */
	m->lh = NULL;
	hintq_free(m->hq);		/* sends what is queued, while the client lives */
	m->hq = NULL;
}

/* ---- the session ---- */

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

int mfs_cmdline(struct mfs *m, struct fuse_args *args, struct fuse_cmdline_opts *co)
{
	if (opts_parse(args, &m->o) < 0)
		return 2;
	if (m->o.show_help) {
		opts_usage(args->argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		return 0;
	}
	if (m->o.show_version) {
		printf("marufs %s (libmaru %s)\n", MARU_VERSION, maru_version());
		fuse_lowlevel_version();
		return 0;
	}
	if (!m->o.pool || opts_mount_args(&m->o, args) < 0)
		goto bad;
	/* a refused metrics address fails the mount command, not the mount */
	if (m->o.metrics && httpd_check_listen(m->o.metrics, m->o.metrics_remote) < 0)
		return 2;
	/* -o histograms=0: marufs's copy of hist.c, and libmaru's through the
	 * environment it reads at its first observation */
	if (!m->o.histograms) {
		hist_enable(0);
		setenv("MARU_HISTOGRAMS", "0", 1);
	}
	if (fuse_parse_cmdline(args, co) != 0)
		return 2;
	if (!co->mountpoint)
		goto bad;
	m->o.mountpoint = co->mountpoint;
	return -1;
bad:
	fprintf(stderr, "usage: %s [options] POOL MOUNTPOINT (--help for more)\n",
		args->argv[0]);
	return 2;
}

int mfs_serve(struct mfs *m, struct fuse_cmdline_opts *co, struct maru_client *c)
{
	struct fuse_session *se = m->se;
	int ret = 1;

	if (fuse_session_mount(se, co->mountpoint) != 0)
		goto out_free;
	fuse_daemonize(co->foreground);
	log_daemonized(co->foreground);
	if (!c && mfs_connect(m, &c) < 0)
		goto out_unmount;
	if (client_ready(m, c) < 0 || threads_start(m) < 0)
		goto out_stop;
	log_info("mounted %s on %s (data path %s, pid %d)", m->o.pool, co->mountpoint,
		 opts_data_path_name(m->info.data_path), (int)getpid());
	ret = run_loop(se, co);
	/* a signal asking us to stop is a clean shutdown too */
	if (ret == SIGTERM || ret == SIGINT || ret == SIGHUP)
		ret = 0;
out_stop:
	threads_stop(m);
out_unmount:
	fuse_session_unmount(se);
out_free:
	mfs_tables_drop_files(m);	/* closes pending files: before the client goes */
	if (c)
		maru_client_free(c);
	m->c = NULL;
	return ret ? 1 : 0;
}
