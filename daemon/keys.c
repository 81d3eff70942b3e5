// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/keys.c: the key file in a running marud (keys.h). The parse is
 * conf.h's (config_load_keys, also used by -n), the table tenant.h's, the
 * closing of revoked connections conn.c's; this file orders them so that
 * a bad file changes nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "conf.h"
#include "dir.h"
#include "keyfile.h"
#include "keys.h"
#include "log.h"
#include "quotas.h"
#include "server_priv.h"
#include "tenant.h"

/*
 * Shut down every connection that proved a revoked key; their threads see
 * the hangup and end them as for a peer that left (conn.c).
 */
static unsigned int close_revoked(struct server *srv, int admin_changed)
{
	unsigned int n = 0;
	struct conn *c;

	pthread_mutex_lock(&srv->conns_lock);
	for (c = srv->conns; c; c = c->next)
		if (c->tenant && atomic_load(&c->tenant->revoked)) {
			log_info("%s: key '%s' was removed from the key file: closing",
				 c->peer, c->tenant->name);
			shutdown(c->fd, SHUT_RDWR);
			n++;
		} else if (!c->tenant && c->authed && admin_changed) {
			log_info("%s: the administrator key changed: closing", c->peer);
			shutdown(c->fd, SHUT_RDWR);
			n++;
		}
	pthread_mutex_unlock(&srv->conns_lock);
	if (n)
		dir_events_kick(srv->dir);
	return n;
}

/*
 * *applied: the tenant table took the file (keys revoked by it are then
 * closed even when the quotas cannot follow: the directory keeps the ones
 * it had, and the quota error is returned).
 */
static int keys_apply(struct server *srv, FILE *err, int *applied)
{
	uint8_t key[CONFIG_KEY_BYTES];
	unsigned int revoked = 0, closed;
	int rc, qrc = 0, admin_changed = 0, had_admin, now_admin;
	struct keyfile kf;

	*applied = 0;
	if (!srv->cfg.key_file[0] || !srv->have_key)
		return 0;
	rc = config_load_keys(srv->cfg.key_file, key, &kf, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&srv->tenants.lock);
	had_admin = srv->tenants.have_admin;
	pthread_mutex_unlock(&srv->tenants.lock);
	rc = tenants_apply(&srv->tenants, srv->dir, &kf, &revoked, err);
	if (!rc) {
		*applied = 1;
		qrc = quotas_sync(&srv->tenants, srv->dir);
		if (qrc)
			log_warnx("key file %s: the keys apply, but not their quotas (%s): "
				  "the directory keeps the quotas it had", srv->cfg.key_file,
				  strerror(-qrc));
		pthread_mutex_lock(&srv->tenants.lock);
		/* a file with keys but no admin line has a random admin key that
		 * nobody holds: no change; a legacy file is all admin key */
		now_admin = kf.have_admin || !kf.nkeys;
		admin_changed = (had_admin || now_admin) &&
				sodium_memcmp(srv->key, key, sizeof(key)) != 0;
		srv->tenants.have_admin = now_admin;
		memcpy(srv->key, key, sizeof(key));
		pthread_mutex_unlock(&srv->tenants.lock);
	}
	sodium_memzero(key, sizeof(key));
	if (!rc)
		log_info("key file %s: %s administrator key, %u scoped key%s",
			 srv->cfg.key_file, kf.nkeys && !kf.have_admin ? "no usable" : "an",
			 kf.nkeys, kf.nkeys == 1 ? "" : "s");
	keyfile_free(&kf);
	/* at start srv->key is main's copy of the same file: no change */
	if (rc || (!revoked && !admin_changed))
		return rc ? rc : qrc;
	revoked += admin_changed;
	closed = close_revoked(srv, admin_changed);
	log_info("key file %s: %u key%s removed or changed, %u connection%s closed",
		 srv->cfg.key_file, revoked, revoked == 1 ? "" : "s", closed,
		 closed == 1 ? "" : "s");
	return qrc;
}

/* Errors are collected in memory and logged in one line. */
int keys_load(struct server *srv, int reload)
{
	char *text = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&text, &len);
	int rc, applied;

	rc = keys_apply(srv, err, &applied);
	if (err)
		fclose(err);
	if (rc && !(applied && reload))	/* applied: keys_apply said what failed */
		log_warnx("%s%s", reload ? "key file reload failed, keeping the old keys: " :
			  "cannot start: ", text && len ? text : strerror(-rc));
	free(text);
	return rc;
}
