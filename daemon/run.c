// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/run.c: marud's process life, for main.c: -n check, daemonizing
 * (with the parent waiting for the child to report that it serves), the
 * pool generation, the pidfile, and the signal loop: SIGTERM/SIGINT shut
 * down, SIGHUP reloads, SIGUSR1 reopens logs, SIGUSR2 (after the region
 * extension's memory was reset) restarts marud in place with --fresh.
 * Every signal is blocked in all threads and taken synchronously here.
 * Nothing here is process-wide state: the start directory a restart needs
 * is the caller's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "config.h"
#include "log.h"
#include "dir.h"
#include "recover.h"
#include "reload.h"
#include "run.h"
#include "server.h"

uint64_t run_new_generation(void)
{
	uint64_t g = 0;

	while (g == 0) {
		if (getrandom(&g, sizeof(g), 0) != (ssize_t)sizeof(g)) {
			if (errno != EINTR)
				log_fatal(errno, "getrandom");
			g = 0;
		}
	}
	return g;
}

int run_daemonize(int *notify)
{
	int p[2], fd;
	pid_t pid;
	char b = 1;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &b, 1) != 1)
			b = 1;
		_exit(b ? 1 : 0);
	}
	close(p[0]);
	if (setsid() < 0 || chdir("/") < 0)
		return -errno;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
	*notify = p[1];
	return 0;
}

void run_notify_parent(int *notify, char status)
{
	if (*notify < 0)
		return;
	if (write(*notify, &status, 1) != 1)
		log_warn(errno, "notifying the parent process");
	close(*notify);
	*notify = -1;
}

int run_pidfile_write(const char *path)
{
	char line[32];
	int fd, n, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (write(fd, line, (size_t)n) != n)
		rc = -EIO;
	close(fd);
	return rc;
}

/* Errors are collected in memory and logged in one line. */
int run_reload_config(const struct config_args *a, struct config *nc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&text, &len);
	int rc;

	rc = config_load(a, nc, err);
	if (err)
		fclose(err);
	if (rc)
		log_warnx("reload failed, keeping the running config: %s",
			  text && len ? text : strerror(-rc));
	free(text);
	return rc;
}

static void on_sighup(struct server *srv, const struct config_args *a)
{
	struct config *nc = malloc(sizeof(*nc));

	log_info("SIGHUP: reloading %s", a->file ? a->file : "(no config file)");
	if (nc && run_reload_config(a, nc)) {
		free(nc);
		nc = NULL;
	}
	reload_all(srv, nc);	/* reload.h: every step, the key file too */
	free(nc);
}

void run_signal_loop(struct server *srv, const struct config_args *a, const sigset_t *set,
		     int foreground)
{
	siginfo_t si;
	int sig;

	for (;;) {
		sig = sigwaitinfo(set, &si);
		if (sig < 0)
			continue;
		if (sig == SIGTERM || sig == SIGINT) {
			log_info("%s: shutting down", strsignal(sig));
			return;
		}
		if (sig == SIGUSR2 && server_reset_asked(srv)) {
			log_warnx("memory reset: restarting with an empty directory");
			return;
		}
		if (sig == SIGHUP)
			on_sighup(srv, a);
		else if (sig == SIGUSR1)
			log_info("SIGUSR1: reopening logs (%s: nothing to reopen)",
				 foreground ? "stderr" : "syslog");
	}
}

void run_block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGUSR2);	/* server.c: the extension's memory was reset */
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int run_check_only(const struct config *cfg, int have_key, FILE *out)
{
	struct persist_start_opts mo = { .journal = cfg->journal, .fresh = cfg->fresh };

	config_print(cfg, out);
	fprintf(out, "configuration OK%s\n",
		have_key ? "" : " (no key configured: serving only loopback and unix sockets)");
	/* -n also reads the pool's metadata (never writing it): 1 if damaged. */
	return persist_check(cfg->pool, &mo, &dir_scratch, out);
}

/*
 * Set by a daemonized marud for the marud it re-executes after a memory
 * reset: it is a daemon already (detached, stdio on /dev/null, the pid a
 * supervisor knows), so it must not fork again, and it logs to syslog like
 * the daemon it replaces. Internal: never set it by hand.
 */
#define ENV_DAEMONIZED	"MARUD_DAEMONIZED"

char **run_fresh_argv(int argc, char **argv)
{
	char **nv = calloc((size_t)argc + 2, sizeof(*nv));
	int i, n = 0, have_fresh = 0;

	if (!nv)
		return NULL;
	for (i = 0; i < argc; i++) {
		have_fresh |= !strcmp(argv[i], "--fresh");
		nv[n++] = argv[i];
	}
	if (!have_fresh)
		nv[n++] = (char *)"--fresh";
	nv[n] = NULL;
	return nv;
}

/*
 * The new marud gets a new generation and an empty directory; clients see
 * -ESTALE, reconnect, and get EIO on descriptors of the old generation.
 */
int run_restart_fresh(int argc, char **argv, int foreground, int start_cwd)
{
	char **nv = run_fresh_argv(argc, argv);

	if (!nv)
		return 1;
	if ((foreground || !setenv(ENV_DAEMONIZED, "1", 1)) &&
	    (start_cwd < 0 || !fchdir(start_cwd)))
		execv("/proc/self/exe", nv);
	log_warn(errno, "restart after the memory reset");
	free(nv);
	return 1;
}

/* Re-executed by a daemon (run_restart_fresh): detach from the start dir only. */
int run_daemonized_already(void)
{
	const char *v = getenv(ENV_DAEMONIZED);
	int yes = v && !strcmp(v, "1");

	unsetenv(ENV_DAEMONIZED);
	return yes;
}

int run_serve(const struct config_args *a, struct config *cfg, const uint8_t *key,
	      int detached, int *start_cwd)
{
	struct server *srv;
	sigset_t set;
	int notify = -1, rc, reset;

	*start_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (detached && chdir("/") < 0)
		log_fatal(errno, "chdir /");
	if (!cfg->foreground && !detached && run_daemonize(&notify) < 0)
		log_fatal(errno, "daemonize");
	run_block_signals(&set);
	rc = server_new(cfg, key, run_new_generation(), &srv);
	if (rc) {
		log_warnx("cannot start: %s", strerror(-rc));
		run_notify_parent(&notify, 1);
		return 1;
	}
	if (cfg->pidfile[0] && (rc = run_pidfile_write(cfg->pidfile)))
		log_warn(rc, "pidfile %s", cfg->pidfile);
	rc = server_start(srv);
	if (rc) {
		log_warn(rc, "starting the server");
		run_notify_parent(&notify, 1);
		server_destroy(srv);
		return 1;
	}
	log_info("marud %s serving, generation %016llx", MARU_VERSION,
		 (unsigned long long)server_generation(srv));
	run_notify_parent(&notify, 0);
	run_signal_loop(srv, a, &set, cfg->foreground);
	reset = server_reset_asked(srv);
	rc = server_stop(srv);
	server_destroy(srv);
	if (reset)
		return RUN_RESET;
	if (cfg->pidfile[0])
		unlink(cfg->pidfile);
	log_info("exiting");
	/* A failed accounting check is a defect: let tests see it. */
	return rc ? 1 : 0;
}
