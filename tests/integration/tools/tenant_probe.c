/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/tenant_probe.c: a client that lies to marud
 * about ids, for the security suite's tenant cases (issue 26). libmaru
 * sends what it is given, so forged ids reach marud as they are; marud
 * alone must confine. Each check prints one line; a surprise exits 1.
 *
 *   tenant_probe URI ADMIN_KEY KEY confine DIR FILE
 *	with ADMIN_KEY, find the ids of directory DIR (a path from the
 *	namespace root, outside KEY's root) and its file FILE; with KEY,
 *	every call naming them answers ENOENT, as for ids that do not exist;
 *	the root KEY sees is id 1 with parent 1; STATS is EACCES
 *   tenant_probe URI KEY ro FILE
 *	every change under a read-only KEY is EROFS (FILE exists in its
 *	root); reads work
 *   tenant_probe URI KEY shm
 *	a client asking for data=shm with KEY is refused with EPERM
 */
#include <sys/stat.h>

#include "maru_tool.h"

static struct maru_client *client(const char *uri, const char *key, enum maru_data_path dp,
				  int *rc)
{
	struct maru_client_opts o;
	struct maru_client *c = NULL;

	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.data_path = dp;
	o.client_name = "tenant-probe";
	o.key_file = key;
	o.timeout_ms = 3000;
	*rc = maru_client_new(&o, &c);
	return c;
}

static uint64_t path_id(struct maru_client *c, const char *path)
{
	char buf[1024], *save = NULL, *w;
	uint64_t at = MARU_ROOT_ID;
	struct maru_attr a;

	snprintf(buf, sizeof(buf), "%s", path);
	for (w = strtok_r(buf, "/", &save); w; w = strtok_r(NULL, "/", &save)) {
		OK(maru_lookup(c, at, w, &a));
		at = a.ino;
	}
	return at;
}

static int count_cb(void *arg, const struct maru_dirent *de)
{
	(void)de;
	++*(int *)arg;
	return 0;
}

static int confine(const char *uri, const char *akey, const char *key, const char *dir,
		   const char *file)
{
	struct maru_client *adm, *c;
	struct maru_hint_range r;
	struct maru_statfs st;
	struct maru_file *f = NULL;
	struct maru_attr a;
	uint64_t d, v;
	char buf[64];
	int rc, n = 0;

	adm = client(uri, akey, MARU_DATA_TCP, &rc);
	OK(rc);
	d = path_id(adm, dir);
	OK(maru_lookup(adm, d, file, &a));
	v = a.ino;
	c = client(uri, key, MARU_DATA_TCP, &rc);
	OK(rc);
	printf("outside: dir %llu, file %llu\n", (unsigned long long)d, (unsigned long long)v);
	FAILS(maru_getattr(c, d, &a), ENOENT);
	FAILS(maru_getattr(c, v, &a), ENOENT);
	FAILS(maru_pin_set(c, v, 60), ENOENT);
	FAILS(maru_lookup(c, d, file, &a), ENOENT);
	FAILS(maru_readdir(c, d, 0, count_cb, &n), ENOENT);
	FAILS(maru_mkdir(c, d, "planted", 0755, 0, 0, &a), ENOENT);
	FAILS(maru_unlink(c, d, file), ENOENT);
	FAILS(maru_rmdir(c, d, "x"), ENOENT);
	FAILS(maru_file_open_ino(c, v, &f), ENOENT);
	FAILS(maru_file_open(c, d, file, &f), ENOENT);
	FAILS(maru_file_create(c, d, "planted", 0644, 0, 0, 0, 0, &f), ENOENT);
	FAILS(maru_link(c, v, MARU_ROOT_ID, "stolen", &a), ENOENT);
	FAILS(maru_symlink(c, d, "sl", "/x", 0, 0, &a), ENOENT);
	FAILS(maru_rename(c, d, file, MARU_ROOT_ID, "stolen", 0), ENOENT);
	OK(maru_mkdir(c, MARU_ROOT_ID, "mine", 0755, 0, 0, &a));
	FAILS(maru_rename(c, MARU_ROOT_ID, "mine", d, "moved-out", 0), ENOENT);
	r = (struct maru_hint_range){ .ino = v, .off = 0, .len = 0 };
	/* without a region extension libmaru does not send hints (EOPNOTSUPP);
	 * with one, marud answers ENOENT before the extension sees the range */
	rc = maru_hint(c, MARU_HINT_READ, "probe", &r, 1);
	CHECK(rc == -ENOENT || rc == -EOPNOTSUPP);
	printf("hint on another tree's version: %s\n", rc == -ENOENT ? "ENOENT" :
	       "EOPNOTSUPP (no region extension: not sent)");
	printf("forged ids of another tree: ENOENT for every call\n");
	/* the namespace root's real id is no way out either: 1 is the tenant root */
	OK(maru_getattr(c, MARU_ROOT_ID, &a));
	CHECK(a.ino == MARU_ROOT_ID && a.parent == MARU_ROOT_ID);
	OK(maru_lookup(c, MARU_ROOT_ID, "mine", &a));
	CHECK(a.parent == MARU_ROOT_ID);
	OK(maru_rmdir(c, MARU_ROOT_ID, "mine"));
	printf("the tenant root is id 1, its parent itself\n");
	rc = maru_stats_text(c, buf, sizeof(buf));
	CHECK(rc == -EACCES);
	printf("STATS: EACCES\n");
	OK(maru_statfs(c, &st));
	CHECK(st.capacity > 0 && st.names == 0 && st.dirs == 0);
	OK(maru_statfs(adm, &st));
	CHECK(st.names > 0);
	printf("STATFS: byte totals, no counts of other trees\n");
	/* nothing moved outside */
	OK(maru_lookup(adm, d, file, &a));
	CHECK(a.ino == v);
	FAILS(maru_lookup(adm, d, "planted", &a), ENOENT);
	maru_client_free(c);
	maru_client_free(adm);
	return 0;
}

static int ro(const char *uri, const char *key, const char *file)
{
	struct maru_setattr sa = { .sa_size = sizeof(sa), .mask = MARU_SET_MODE,
				   .mode = 0600 };
	struct maru_file *f = NULL;
	struct maru_attr a;
	int rc, n = 0;
	struct maru_client *c = client(uri, key, MARU_DATA_TCP, &rc);

	OK(rc);
	OK(maru_lookup(c, MARU_ROOT_ID, file, &a));
	OK(maru_readdir(c, MARU_ROOT_ID, 0, count_cb, &n));
	CHECK(n >= 1);
	OK(maru_file_open(c, MARU_ROOT_ID, file, &f));
	maru_file_close(f);
	printf("ro: lookup, readdir, open work\n");
	FAILS(maru_mkdir(c, MARU_ROOT_ID, "d", 0755, 0, 0, &a), EROFS);
	FAILS(maru_rmdir(c, MARU_ROOT_ID, "d"), EROFS);
	FAILS(maru_file_create(c, MARU_ROOT_ID, "new", 0644, 0, 0, 0, 0, &f), EROFS);
	FAILS(maru_unlink(c, MARU_ROOT_ID, file), EROFS);
	FAILS(maru_rename(c, MARU_ROOT_ID, file, MARU_ROOT_ID, "renamed", 0), EROFS);
	OK(maru_lookup(c, MARU_ROOT_ID, file, &a));
	FAILS(maru_setattr(c, a.ino, &sa, &a), EROFS);
	FAILS(maru_link(c, a.ino, MARU_ROOT_ID, "l", &a), EROFS);
	FAILS(maru_symlink(c, MARU_ROOT_ID, "s", "x", 0, 0, &a), EROFS);
	FAILS(maru_mknod(c, MARU_ROOT_ID, "p", S_IFIFO | 0644, 0, 0, 0, &a), EROFS);
	FAILS(maru_pin_set(c, a.ino, 60), EROFS);
	rc = maru_pin_get(c, a.ino);
	CHECK(rc == 0);
	printf("ro: mkdir rmdir create unlink rename setattr link symlink mknod pin: EROFS; "
	       "pin query works\n");
	maru_client_free(c);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && !strcmp(argv[4], "confine"))
		return confine(argv[1], argv[2], argv[3], argv[5], argv[6]);
	if (argc == 5 && !strcmp(argv[3], "ro"))
		return ro(argv[1], argv[2], argv[4]);
	if (argc == 4 && !strcmp(argv[3], "shm")) {
		CHECK(client(argv[1], argv[2], MARU_DATA_SHM, &rc) == NULL);
		FAILS(rc, EPERM);
		printf("data=shm with a scoped key: EPERM\n");
		return 0;
	}
	fprintf(stderr, "usage: tenant_probe URI ADMIN_KEY KEY confine DIR FILE | "
		"URI KEY ro FILE | URI KEY shm\n");
	return 2;
}
