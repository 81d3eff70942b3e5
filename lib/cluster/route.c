// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route.c: the life of a routed client (route.h): opening the
 * cluster's membership and a client per pool, freeing them, the facts of
 * maru_client_pool_info() and maru_client_pool_at(), and two helpers of
 * every call: the walk that finds (or makes) a directory on one pool and
 * the translation of a pool's attributes into the router's ids.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_priv.h"
#include "route_priv.h"

int route_uri(const char *uri)
{
	return uri && !strncmp(uri, "maru+etcd://", 12);
}

static char *dup_or_null(const char *s, int *err)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*err = -ENOMEM;
	return d;
}

static int route_opts(struct route *r, const struct maru_client_opts *in)
{
	size_t n = in->opts_size ? in->opts_size : sizeof(*in);
	int err = 0;

	/* the caller's opts as they came: each pool's client takes their size */
	memcpy(&r->opts, in, n < sizeof(r->opts) ? n : sizeof(r->opts));
	r->opts.opts_size = n < sizeof(r->opts) ? n : sizeof(r->opts);
	if (strlen(in->uri) >= sizeof(r->uri))
		return -EINVAL;
	strcpy(r->uri, in->uri);
	snprintf(r->name, sizeof(r->name), "%s", in->client_name ? in->client_name : "cluster");
	r->opts.key_file = r->key_file = dup_or_null(in->key_file, &err);
	if (n > offsetof(struct maru_client_opts, tls_key)) {
		r->opts.tls_ca = r->tls_ca = dup_or_null(in->tls_ca, &err);
		r->opts.tls_cert = r->tls_cert = dup_or_null(in->tls_cert, &err);
		r->opts.tls_key = r->tls_key = dup_or_null(in->tls_key, &err);
	}
	return err;
}

static void route_free(struct route *r)
{
	unsigned int i;

	for (i = 0; i < r->npool; i++)
		if (r->pool[i].c)
			r->ops->client_free(r->pool[i].c);
	if (r->cl)
		maru_cluster_close(r->cl);
	route_dirs_fini(r);
	free(r->key_file);
	free(r->tls_ca);
	free(r->tls_cert);
	free(r->tls_key);
	free(r->query);
	memset(r->etcd_password, 0, sizeof(r->etcd_password));
	pthread_mutex_destroy(&r->connect_lock);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Every pool of the membership now: at least one must answer. */
static int connect_all(struct route *r)
{
	unsigned int s[ROUTE_POOLS];
	struct maru_client *c;
	int n = route_members(r, s, ROUTE_POOLS), i, ok = 0, rc = -ENOENT;

	for (i = 0; i < n; i++) {
		rc = route_sub(r, s[i], &c);
		ok += rc == 0;
	}
	return ok ? 0 : rc;
}

/* The first line of a password file (0600 or stricter). */
static int read_password(const char *path, char *buf, size_t len)
{
	struct stat st;
	FILE *f = fopen(path, "re");
	int rc = 0;

	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) || (st.st_mode & 077))
		rc = -EACCES;
	else if (!fgets(buf, (int)len, f))
		rc = -EINVAL;
	fclose(f);
	if (!rc)
		buf[strcspn(buf, "\r\n")] = '\0';
	return rc;
}

/*
 * maru+etcd://HOST:PORT/NAME?etcd_ca=PATH&etcd_cert=PATH&etcd_key=PATH&
 * etcd_user=USER&etcd_password_file=PATH: etcd's TLS and user. The query
 * is cut off the URI the membership is read with.
 */
static int etcd_query(struct route *r, char *cluster_uri, struct maru_cluster_opts *co)
{
	char *q = strchr(cluster_uri, '?'), *kv, *save = NULL, *v;
	int rc = 0;

	if (!q)
		return 0;
	*q++ = '\0';
	r->query = strdup(q);
	if (!r->query)
		return -ENOMEM;
	for (kv = strtok_r(r->query, "&", &save); kv && !rc; kv = strtok_r(NULL, "&", &save)) {
		v = strchr(kv, '=');
		if (!v)
			return -EINVAL;
		*v++ = '\0';
		if (!strcmp(kv, "etcd_ca"))
			co->etcd_ca = r->etcd_ca = v;
		else if (!strcmp(kv, "etcd_cert"))
			co->etcd_cert = r->etcd_cert = v;
		else if (!strcmp(kv, "etcd_key"))
			co->etcd_key = r->etcd_key = v;
		else if (!strcmp(kv, "etcd_user"))
			co->etcd_user = r->etcd_user = v;
		else if (!strcmp(kv, "etcd_password_file"))
			rc = read_password(v, r->etcd_password, sizeof(r->etcd_password));
		else
			rc = -EINVAL;
	}
	if (r->etcd_password[0])
		co->etcd_password = r->etcd_password;
	return rc;
}

static int route_open(struct route *r)
{
	struct maru_cluster_opts co;
	char uri[MARU_PATH_MAX];
	int rc;

	maru_cluster_opts_init(&co, sizeof(co));
	snprintf(uri, sizeof(uri), "%s", r->uri);
	rc = etcd_query(r, uri, &co);
	if (rc)
		return rc;
	co.uri = uri;
	rc = maru_cluster_open(&co, &r->cl);
	if (rc)
		return rc;
	/* the root: id 1, id 1 on every pool */
	if (route_dir_intern(r, "") != MARU_ROOT_ID)
		return -ENOMEM;
	for (unsigned int i = 0; i < ROUTE_POOLS; i++)
		route_dir_local_set(r, MARU_ROOT_ID, i, MARU_ROOT_ID);
	return connect_all(r);
}

int route_client_new(const struct maru_client_opts *o, const struct route_ops *ops,
		     struct maru_client **out)
{
	struct maru_client *c = calloc(1, sizeof(*c));
	struct route *r = calloc(1, sizeof(*r));
	int rc;

	if (!c || !r) {
		free(c);
		free(r);
		return -ENOMEM;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->connect_lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
	r->self = c;
	r->ops = ops;
	atomic_init(&r->gen, 1);
	c->route = r;
	rc = route_opts(r, o);
	if (!rc)
		rc = route_dirs_init(r);
	if (!rc)
		rc = route_open(r);
	if (rc) {
		route_free(r);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return rc;
	}
	memcpy(c->uri, r->uri, sizeof(c->uri));
	c->opts = r->opts;
	c->opts.uri = c->uri;
	*out = c;
	return 0;
}

void route_client_free(struct maru_client *c)
{
	route_free(c->route);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The cluster as one pool: the first pool's facts, the capacity of all. */
int route_pool_info(struct maru_client *c, struct maru_pool_info *out)
{
	struct route *r = c->route;
	unsigned int s[ROUTE_POOLS];
	struct maru_client *sub;
	uint64_t size = 0;
	int n = route_members(r, s, ROUTE_POOLS), i, rc = -ENOENT;

	for (i = n - 1; i >= 0; i--) {
		size += r->pool[s[i]].rec.capacity;
		if (!route_sub(r, s[i], &sub))
			rc = r->ops->pool_info(sub, out);
	}
	if (rc)
		return rc;
	out->size = size;
	out->generation = atomic_load(&r->gen);
	out->path[0] = '\0';
	snprintf(out->uri, sizeof(out->uri), "%s", r->uri);
	return 0;
}

int route_pool_at(struct maru_client *c, unsigned int i, struct maru_cluster_pool *member,
		  struct maru_pool_info *info, int *state)
{
	struct route *r = c->route;
	unsigned int s[ROUTE_POOLS];
	struct maru_client *sub = NULL;

	route_members(r, s, ROUTE_POOLS);
	pthread_mutex_lock(&r->lock);
	if (i >= r->npool) {
		pthread_mutex_unlock(&r->lock);
		return -ENOENT;
	}
	if (member)
		*member = r->pool[i].rec;
	if (state)
		*state = r->pool[i].state;
	sub = r->pool[i].c;
	pthread_mutex_unlock(&r->lock);
	if (info) {
		memset(info, 0, sizeof(*info));
		if (sub)
			r->ops->pool_info(sub, info);
	}
	return 0;
}

/* One step of the walk: name in directory *local of the pool, made if asked. */
static int walk_step(struct route *r, struct maru_client *sub, uint64_t *local,
		     const char *name, int create)
{
	struct maru_attr a;
	int rc = r->ops->lookup(sub, *local, name, &a);

	if (rc == -ENOENT && create) {
		rc = r->ops->mkdir(sub, *local, name, 0755, 0, 0, &a);
		if (rc == -EEXIST)
			rc = r->ops->lookup(sub, *local, name, &a);
	}
	if (rc)
		return rc;
	if (a.state != MARU_STATE_DIR)
		return -ENOTDIR;
	*local = a.ino;
	return 0;
}

/*
 * The id on the pool in slot of directory id: known, or found by walking
 * its path from the root (and, with create, making what that pool lacks:
 * a pool that joined later, or was away when the directory was made).
 */
int route_dir_on(struct route *r, uint64_t id, unsigned int slot, int create,
		 uint64_t *local)
{
	char path[MARU_PATH_MAX], *p, *next;
	struct maru_client *sub;
	uint64_t l;
	int rc;

	*local = route_dir_local_get(r, id, slot);
	if (*local)
		return 0;
	rc = route_dir_path(r, id, path, sizeof(path));
	if (!rc)
		rc = route_sub(r, slot, &sub);
	if (rc)
		return rc;
	l = MARU_ROOT_ID;
	for (p = path; p && *p; p = next) {
		next = strchr(p, '/');
		if (next)
			*next++ = '\0';
		rc = walk_step(r, sub, &l, p, create);
		if (rc)
			return rc;
		if (next)
			next[-1] = '/';
	}
	route_dir_local_set(r, id, slot, l);
	*local = l;
	return 0;
}

/*
 * A pool's attributes of the name path (in directory parent) as the
 * router's: a directory gets its router id, a file its tag.
 */
void route_fix_attr(struct route *r, unsigned int slot, uint64_t parent, const char *path,
		    struct maru_attr *a)
{
	uint64_t id;

	if (a->state == MARU_STATE_DIR) {
		id = path ? route_dir_intern(r, path) : 0;
		if (id && !route_dir_local_get(r, id, slot))
			route_dir_local_set(r, id, slot, a->ino);
		a->ino = id;
	} else {
		a->ino = route_tag(slot, a->ino);
	}
	a->parent = parent;
}
