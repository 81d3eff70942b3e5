// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/tenant.c: the tenant table (tenant.h): applying a parsed key file
 * (roots resolved, records kept or revoked), and finding a tenant by name
 * or by the id of something its root holds. Lock: t->lock, taken before
 * the dir lock (tenants_apply and tenants_of_id call into the dir with it
 * held; the dir never calls back).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "dir.h"
#include "tenant.h"

int tenants_init(struct tenants *t)
{
	memset(t, 0, sizeof(*t));
	return -pthread_mutex_init(&t->lock, NULL);
}

void tenants_fini(struct tenants *t)
{
	struct tenant *tn, *nx;

	for (tn = t->all; tn; tn = nx) {
		nx = tn->all_next;
		sodium_memzero(tn->key, sizeof(tn->key));
		free(tn);
	}
	free(t->live);
	sodium_memzero(t->admin_key, sizeof(t->admin_key));
	pthread_mutex_destroy(&t->lock);
}

/* The directory id of an absolute path, making the missing directories. */
static int root_resolve(struct dir *d, const char *path, uint64_t *id, FILE *err)
{
	struct dir_attr a;
	const char *c = path + 1, *e;
	uint64_t at = DIR_ROOT_ID;
	int rc;

	while (*c) {
		e = strchr(c, '/');
		if (!e)
			e = c + strlen(c);
		rc = dir_lookup(d, NULL, at, c, (size_t)(e - c), &a);
		if (rc == -ENOENT)
			rc = dir_mkdir(d, at, c, (size_t)(e - c), S_IFDIR | 0755, 0, 0, &a);
		if (!rc && a.state != DIR_ST_DIR)
			rc = -ENOTDIR;
		if (rc) {
			if (err)
				fprintf(err, "tenant root %s: %s", path, strerror(-rc));
			return rc;
		}
		at = a.ino;
		c = *e ? e + 1 : e;
	}
	*id = at;
	return 0;
}

static struct tenant *old_match(struct tenants *t, const struct keyfile_key *k,
				const uint8_t *key, uint64_t root)
{
	unsigned int i;

	for (i = 0; i < t->nlive; i++)
		if (!strcmp(t->live[i]->name, k->name) && t->live[i]->root == root &&
		    !sodium_memcmp(t->live[i]->key, key, KEYFILE_KEY_BYTES))
			return t->live[i];
	return NULL;
}

static void hash_secret(const struct keyfile_key *k, uint8_t *key)
{
	crypto_generichash(key, KEYFILE_KEY_BYTES, (const uint8_t *)k->secret,
			   k->secret_len, NULL, 0);
}

/* New records (or kept old ones) for kf's keys in nl; nothing changed yet. */
static int build(struct tenants *t, struct dir *d, const struct keyfile *kf,
		 struct tenant **nl, struct tenant **fresh, FILE *err)
{
	uint8_t key[KEYFILE_KEY_BYTES];
	struct tenant *tn;
	uint64_t root;
	unsigned int i;
	int rc;

	for (i = 0; i < kf->nkeys; i++) {
		rc = root_resolve(d, kf->keys[i].root, &root, err);
		if (rc)
			return rc;
		hash_secret(&kf->keys[i], key);
		tn = old_match(t, &kf->keys[i], key, root);
		if (!tn) {
			tn = calloc(1, sizeof(*tn));
			if (!tn)
				return -ENOMEM;
			snprintf(tn->name, sizeof(tn->name), "%s", kf->keys[i].name);
			snprintf(tn->root_path, sizeof(tn->root_path), "%s", kf->keys[i].root);
			tn->root = root;
			memcpy(tn->key, key, sizeof(key));
			tn->all_next = *fresh;
			*fresh = tn;
		}
		nl[i] = tn;
	}
	sodium_memzero(key, sizeof(key));
	return 0;
}

static int in_list(struct tenant *const *l, unsigned int n, const struct tenant *tn)
{
	while (n--)
		if (l[n] == tn)
			return 1;
	return 0;
}

int tenants_apply(struct tenants *t, struct dir *d, const struct keyfile *kf,
		  unsigned int *revoked, FILE *err)
{
	struct tenant **nl = calloc(kf->nkeys + 1, sizeof(*nl));
	struct tenant *fresh = NULL, *tn, *nx;
	unsigned int i, nrev = 0;
	int rc;

	if (!nl)
		return -ENOMEM;
	pthread_mutex_lock(&t->lock);
	rc = build(t, d, kf, nl, &fresh, err);
	if (rc) {
		for (tn = fresh; tn; tn = nx) {
			nx = tn->all_next;
			free(tn);
		}
		pthread_mutex_unlock(&t->lock);
		free(nl);
		return rc;
	}
	for (i = 0; i < t->nlive; i++)
		if (!in_list(nl, kf->nkeys, t->live[i])) {
			atomic_store(&t->live[i]->revoked, 1);
			nrev++;
		}
	for (i = 0; i < kf->nkeys; i++) {
		atomic_store(&nl[i]->rights, kf->keys[i].rights);
		atomic_store(&nl[i]->quota, kf->keys[i].quota);
	}
	for (tn = fresh; tn; tn = nx) {
		nx = tn->all_next;
		tn->all_next = t->all;
		t->all = tn;
	}
	free(t->live);
	t->live = nl;
	t->nlive = kf->nkeys;
	t->have_admin = kf->have_admin;
	if (kf->have_admin)
		hash_secret(&kf->admin, t->admin_key);
	pthread_mutex_unlock(&t->lock);
	if (revoked)
		*revoked = nrev;
	return 0;
}

struct tenant *tenants_find(struct tenants *t, const char *name)
{
	struct tenant *tn = NULL;
	unsigned int i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nlive && !tn; i++)
		if (!strcmp(t->live[i]->name, name))
			tn = t->live[i];
	pthread_mutex_unlock(&t->lock);
	return tn;
}

struct tenant *tenants_of_id(struct tenants *t, struct dir *d, uint64_t id)
{
	struct tenant *tn = NULL;
	unsigned int i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nlive && !tn; i++)
		if (dir_within(d, id, t->live[i]->root) == DIR_WITHIN_YES)
			tn = t->live[i];
	pthread_mutex_unlock(&t->lock);
	return tn;
}

unsigned int tenants_count(struct tenants *t)
{
	unsigned int n;

	pthread_mutex_lock(&t->lock);
	n = t->nlive;
	pthread_mutex_unlock(&t->lock);
	return n;
}
