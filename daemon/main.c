// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/main.c: marud's process life: command line and configuration,
 * -n check, daemonizing (with the parent waiting for the child to report
 * that it serves), the pool generation, the pidfile, and the signal loop:
 * SIGTERM/SIGINT shut down, SIGHUP reloads, SIGUSR1 reopens logs. Every
 * signal is blocked in all threads and taken synchronously here.
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
#include "server.h"

static uint64_t new_generation(void)
{
	uint64_t g = 0;

	while (g == 0) {
		if (getrandom(&g, sizeof(g), 0) != (ssize_t)sizeof(g)) {
			if (errno != EINTR)
				fatal(errno, "getrandom");
			g = 0;
		}
	}
	return g;
}

/*
 * Fork; the parent waits for one status byte from the child (0: serving)
 * and exits with it, so a failed start is seen by whoever ran marud.
 */
static int daemonize(int *notify)
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

static void notify_parent(int *notify, char status)
{
	if (*notify < 0)
		return;
	if (write(*notify, &status, 1) != 1)
		log_warn(errno, "notifying the parent process");
	close(*notify);
	*notify = -1;
}

static int pidfile_write(const char *path)
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

/* Load the config again, errors going to the log (stderr may be /dev/null). */
static int reload_config(const struct config_args *a, struct config *nc)
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
	if (nc && !reload_config(a, nc))
		server_reload(srv, nc);
	free(nc);
}

/* Wait for signals; returns on SIGTERM/SIGINT. */
static void signal_loop(struct server *srv, const struct config_args *a,
			const sigset_t *set, int foreground)
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

static void block_signals(sigset_t *set)
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

static int check_only(const struct config *cfg, int have_key)
{
	struct persist_start_opts mo = { .journal = cfg->journal, .fresh = cfg->fresh };

	config_print(cfg, stdout);
	printf("configuration OK%s\n",
	       have_key ? "" : " (no key configured: serving only loopback and unix sockets)");
	/* -n also reads the pool's metadata (never writing it): 1 if damaged. */
	return persist_check(cfg->pool, &mo, &dir_scratch, stdout);
}

#define RUN_RESET	2
/*
 * Set by a daemonized marud for the marud it re-executes after a memory
 * reset: it is a daemon already (detached, stdio on /dev/null, the pid a
 * supervisor knows), so it must not fork again, and it logs to syslog like
 * the daemon it replaces. Internal: never set it by hand.
 */
#define ENV_DAEMONIZED	"MARUD_DAEMONIZED"

/* The directory marud was started in: relative paths in argv are its. */
static int start_cwd = -1;

/*
 * After a memory reset: the same marud again (same pid, the same argv, so
 * the same config, logging target and daemon mode) with --fresh, so the
 * directory starts empty and the pool gets a new generation; clients see
 * -ESTALE, reconnect, and get EIO on descriptors of the old generation.
 */
static int restart_fresh(int argc, char **argv, int foreground)
{
	char **nv = calloc((size_t)argc + 2, sizeof(*nv));
	int i, n = 0, have_fresh = 0;

	if (!nv)
		return 1;
	for (i = 0; i < argc; i++) {
		have_fresh |= !strcmp(argv[i], "--fresh");
		nv[n++] = argv[i];
	}
	if (!have_fresh)
		nv[n++] = (char *)"--fresh";
	nv[n] = NULL;
	if ((foreground || !setenv(ENV_DAEMONIZED, "1", 1)) &&
	    (start_cwd < 0 || !fchdir(start_cwd)))
		execv("/proc/self/exe", nv);
	log_warn(errno, "restart after the memory reset");
	free(nv);
	return 1;
}

/* Re-executed by a daemon (restart_fresh): detach from the start dir only. */
static int daemonized_already(void)
{
	const char *v = getenv(ENV_DAEMONIZED);
	int yes = v && !strcmp(v, "1");

	unsetenv(ENV_DAEMONIZED);
	return yes;
}

static int run(const struct config_args *a, struct config *cfg, const uint8_t *key,
	       int detached)
{
	struct server *srv;
	sigset_t set;
	int notify = -1, rc, reset;

	start_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (detached && chdir("/") < 0)
		fatal(errno, "chdir /");
	if (!cfg->foreground && !detached && daemonize(&notify) < 0)
		fatal(errno, "daemonize");
	block_signals(&set);
	rc = server_new(cfg, key, new_generation(), &srv);
	if (rc) {
		log_warnx("cannot start: %s", strerror(-rc));
		notify_parent(&notify, 1);
		return 1;
	}
	if (cfg->pidfile[0] && (rc = pidfile_write(cfg->pidfile)))
		log_warn(rc, "pidfile %s", cfg->pidfile);
	rc = server_start(srv);
	if (rc) {
		log_warn(rc, "starting the server");
		notify_parent(&notify, 1);
		server_destroy(srv);
		return 1;
	}
	log_info("marud %s serving, generation %016llx", MARU_VERSION,
		 (unsigned long long)server_generation(srv));
	notify_parent(&notify, 0);
	signal_loop(srv, a, &set, cfg->foreground);
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

int main(int argc, char **argv)
{
	static struct config_args args;
	static struct config cfg;
	uint8_t key[CONFIG_KEY_BYTES];
	int rc, have_key, detached = daemonized_already();

	rc = config_parse_args(argc, argv, &args);
	if (rc)
		return rc > 0 ? 0 : 1;
	log_init("marud", 1, 0);
	if (config_load(&args, &cfg, stderr) ||
	    config_validate(&cfg, key, &have_key, stderr))
		return 1;
	if (cfg.check_only)
		return check_only(&cfg, have_key);
	log_init("marud", cfg.foreground, cfg.verbose);
	if (!have_key)
		log_warnx("no key configured: serving only loopback and unix sockets");
	umask(022);
	rc = run(&args, &cfg, have_key ? key : NULL, detached && !cfg.foreground);
	return rc == RUN_RESET ? restart_fresh(argc, argv, cfg.foreground) : rc;
}
