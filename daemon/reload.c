// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/reload.c: what SIGHUP reloads, in order (reload.h): the
 * configuration's live settings (server.c), then the key file (keys.c:
 * removed keys' connections closed, new keys usable at once), then the
 * TLS certificate (srvtls.c: new connections take the new one).
 */
#include <errno.h>
#include <stddef.h>

#include "keys.h"
#include "log.h"
#include "reload.h"
#include "srvtls.h"
#include "server.h"

static int config_step(struct server *srv, const struct config *nc)
{
	if (!nc)
		return -EINVAL;	/* run.c logged why; the running config stays */
	server_reload(srv, nc);
	return 0;
}

/* The key file is re-read even when the configuration failed to load. */
static int keys_step(struct server *srv, const struct config *nc)
{
	(void)nc;
	return keys_load(srv, 1);
}

static const struct reload_step {
	const char *what;
	int (*fn)(struct server *srv, const struct config *nc);
} steps[] = {
	{ "configuration", config_step },
	{ "key file", keys_step },
	{ "TLS certificate", srvtls_reload },
};

unsigned int reload_all(struct server *srv, const struct config *nc)
{
	unsigned int i, failed = 0;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i].fn(srv, nc)) {
			log_debug("reload: %s kept as it was", steps[i].what);
			failed++;
		}
	return failed;
}
