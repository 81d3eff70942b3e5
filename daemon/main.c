// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/main.c: marud's main(): the command line and configuration, then
 * run.c's -n check or run_serve(), and the restart in place after a memory
 * reset. The process life itself is run.c's, where tests can reach it.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "conf.h"
#include "config.h"
#include "log.h"
#include "run.h"

int main(int argc, char **argv)
{
	static struct config_args args;
	static struct config cfg;
	uint8_t key[CONFIG_KEY_BYTES];
	int rc, have_key, start_cwd = -1, detached = run_daemonized_already();

	rc = config_parse_args(argc, argv, &args);
	if (rc)
		return rc > 0 ? 0 : 1;
	log_init("marud", 1, 0);
	if (config_load(&args, &cfg, stderr) ||
	    config_validate(&cfg, key, &have_key, stderr))
		return 1;
	if (cfg.check_only)
		return run_check_only(&cfg, have_key, stdout);
	log_init("marud", cfg.foreground, cfg.verbose);
	log_set_time(cfg.foreground);	/* -d: no syslog to stamp the lines */
	if (!have_key)
		log_warnx("no key configured: serving only loopback and unix sockets");
	umask(022);
	rc = run_serve(&args, &cfg, have_key ? key : NULL, detached && !cfg.foreground,
		       &start_cwd);
	return rc == RUN_RESET ? run_restart_fresh(argc, argv, cfg.foreground, start_cwd) : rc;
}
