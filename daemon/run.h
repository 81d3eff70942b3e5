/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/run.h: marud's process life (run.c), everything main() does
 * between parsing the command line and exiting, in pieces a test can call:
 * the pool generation, daemonizing with the parent waiting for a status
 * byte, the pidfile, the signal loop (SIGTERM/SIGINT stop, SIGHUP reloads,
 * SIGUSR1 reopens logs, SIGUSR2 after a memory reset restarts), the -n
 * check and the restart in place after a memory reset.
 */
#ifndef MARUD_RUN_H
#define MARUD_RUN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"

struct server;

/* run_serve(): the memory was reset, restart in place (run_restart_fresh). */
#define RUN_RESET	2

/* A random pool generation, never 0. */
uint64_t run_new_generation(void);
/*
 * Fork; the parent waits for one status byte from the child (0: serving)
 * and exits with it, so a failed start is seen by whoever ran marud. In
 * the child: a new session, cwd /, stdio on /dev/null, *notify the pipe.
 */
int run_daemonize(int *notify);
/* Send the status byte (once; *notify < 0 does nothing). */
void run_notify_parent(int *notify, char status);
/* Write "<pid>\n" to path; 0 or -errno. */
int run_pidfile_write(const char *path);
/* Load the config again; errors go to the log (stderr may be /dev/null). */
int run_reload_config(const struct config_args *a, struct config *nc);
/* Block marud's signals in this thread (and the threads it starts); ignore SIGPIPE. */
void run_block_signals(sigset_t *set);
/*
 * Take the blocked signals synchronously until SIGTERM/SIGINT, or SIGUSR2
 * once the server asked for a reset; reloads srv on SIGHUP.
 */
void run_signal_loop(struct server *srv, const struct config_args *a, const sigset_t *set,
		     int foreground);
/* marud -n: the summary and the pool metadata's check to out; the exit code. */
int run_check_only(const struct config *cfg, int have_key, FILE *out);
/*
 * Serve cfg until a signal stops it: daemonize (unless foreground or
 * detached already), start the server, write the pidfile, run the signal
 * loop, stop. *start_cwd: the directory marud was started in (for a
 * restart). 0, 1 on failure, RUN_RESET after a memory reset.
 */
int run_serve(const struct config_args *a, struct config *cfg, const uint8_t *key,
	      int detached, int *start_cwd);
/* argv with "--fresh" added unless present; NULL-terminated, free() it. */
char **run_fresh_argv(int argc, char **argv);
/*
 * After a memory reset: exec the same marud (same pid, argv, config,
 * logging and daemon mode) with --fresh, from start_cwd (-1: where we
 * are). Returns 1 only when that failed.
 */
int run_restart_fresh(int argc, char **argv, int foreground, int start_cwd);
/* 1 if a daemonized marud re-executed this one (the mark is removed). */
int run_daemonized_already(void);

#endif
