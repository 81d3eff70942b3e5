/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/tenant.h: tenants, marud's scoped keys (marufs-design(7) §8). A
 * tenant is one named key of the key file (lib/common/keyfile.h parses it,
 * marud.conf(5) describes it): a root directory of the namespace, rights
 * (rw or ro) and a byte quota. The administrator key (the file's unnamed
 * key, or a whole legacy key file) is no tenant: its sessions are unscoped.
 *
 * The model, for the files that build on it (quota, pins, confinement):
 *
 *  - struct tenant is one record, found by name (AUTH) or by directory.
 *    Records are never freed while marud runs: a reload (SIGHUP) keeps the
 *    record of a key whose name, secret and root did not change (its rights
 *    and quota are updated in place, so counters hung on it survive) and
 *    marks the others `revoked` (their connections are closed). A pointer
 *    to a tenant is therefore valid for the server's life.
 *  - A session finds its tenant with session_tenant() (session.h): NULL
 *    is the unscoped administrator (or no key configured). The tenant is
 *    fixed when the session is made at HELLO, from the key its connection
 *    proved at AUTH (conn->tenant); a session is never reclaimed by a
 *    connection of another tenant.
 *  - A file or directory finds the tenant whose root holds it with
 *    tenants_of_id(): the tenant whose root is the id itself or one of its
 *    ancestors (directories up to the namespace root). Roots never nest
 *    (the parser refuses it), so at most one tenant holds an id. Inside
 *    daemon/dir/ (under the dir lock) use dir_within_locked() on each
 *    root instead.
 *  - Roots are resolved to directory ids at load: a missing root directory
 *    is made (mode 0755, owner 0); a root that names a file is an error.
 *    If the administrator later renames the root, the tenant follows the
 *    directory (the id), not the path; if it is removed, the tenant's
 *    sessions see an empty, vanished root (ENOENT).
 *
 * Thread-safety: the table is swapped whole at reload under `lock`;
 * readers take it for the lookup. rights and quota are atomics so that a
 * reload can change them under running sessions.
 */
#ifndef MARUD_TENANT_H
#define MARUD_TENANT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "keyfile.h"

struct dir;

enum tenant_rights {
	TENANT_RW = KEYFILE_RW,
	TENANT_RO = KEYFILE_RO,
};

struct tenant {
	char name[KEYFILE_NAME_MAX + 1];
	char root_path[KEYFILE_ROOT_MAX + 1];	/* as written in the key file */
	uint64_t root;			/* directory id of root_path (dir.h ids) */
	uint8_t key[KEYFILE_KEY_BYTES];	/* hashed secret: the HMAC key of AUTH */
	atomic_int rights;		/* enum tenant_rights */
	atomic_uint_fast64_t quota;	/* bytes, 0: none */
	atomic_int revoked;		/* removed or changed by a reload */
	struct tenant *all_next;	/* every record ever made (freed at the end) */
};

struct tenants {
	pthread_mutex_t lock;
	struct tenant **live;		/* current keys, by file order */
	unsigned int nlive;
	struct tenant *all;		/* every record, live or revoked */
	int have_admin;			/* an administrator key (admin line, legacy file) */
	uint8_t admin_key[KEYFILE_KEY_BYTES];
};

int tenants_init(struct tenants *t);
void tenants_fini(struct tenants *t);
/*
 * Apply a parsed key file: resolve (and make) each root in d, keep the
 * records of unchanged keys, revoke the others. On error nothing changes
 * and a line is written to err. *revoked (may be NULL) = how many records
 * this call revoked (their connections must be closed by the caller).
 */
int tenants_apply(struct tenants *t, struct dir *d, const struct keyfile *kf,
		  unsigned int *revoked, FILE *err);
/* The live tenant with that name, or NULL. */
struct tenant *tenants_find(struct tenants *t, const char *name);
/* The live tenant whose root holds id (the id or an ancestor), or NULL. */
struct tenant *tenants_of_id(struct tenants *t, struct dir *d, uint64_t id);
/* Number of live tenants. */
unsigned int tenants_count(struct tenants *t);

static inline int tenant_ro(const struct tenant *tn)
{
	return tn && atomic_load(&tn->rights) == TENANT_RO;
}

#endif
