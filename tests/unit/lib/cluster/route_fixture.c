// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/cluster/route_fixture.c: the routed client of the
 * route_*_test files over faked pools (route_fixture.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "client_priv.h"
#include "route_fixture.h"

static struct rf *cur;

/* the pool a sub client speaks to (found by its URI); counts the call */
static struct rf_pool *P(struct maru_client *c)
{
	int i;

	for (i = 0; i < cur->npool; i++)
		if (!strcmp(c->uri, cur->pool[i].uri)) {
			cur->pool[i].calls++;
			return &cur->pool[i];
		}
	fail_msg("a call for unknown client %s", c->uri);
	return NULL;
}

static struct rf_ent *find_in(struct rf_pool *p, uint64_t parent, const char *name)
{
	int i;

	for (i = 0; i < RF_ENTS; i++)
		if (p->e[i].used && p->e[i].parent == parent && !strcmp(p->e[i].name, name))
			return &p->e[i];
	return NULL;
}

static struct rf_ent *by_ino(struct rf_pool *p, uint64_t ino)
{
	int i;

	for (i = 0; i < RF_ENTS; i++)
		if (p->e[i].used && p->e[i].ino == ino)
			return &p->e[i];
	return NULL;
}

/* a directory of the pool: the root or an entry of that type */
static int is_dir(struct rf_pool *p, uint64_t ino)
{
	struct rf_ent *d = by_ino(p, ino);

	return ino == MARU_ROOT_ID || (d && S_ISDIR(d->mode));
}

static struct rf_ent *add_in(struct rf_pool *p, uint64_t parent, const char *name,
			     uint32_t mode)
{
	int i;

	for (i = 0; i < RF_ENTS; i++)
		if (!p->e[i].used) {
			memset(&p->e[i], 0, sizeof(p->e[i]));
			p->e[i].used = 1;
			p->e[i].parent = parent;
			p->e[i].ino = p->next_ino++;
			snprintf(p->e[i].name, sizeof(p->e[i].name), "%s", name);
			p->e[i].mode = mode;
			p->e[i].state = S_ISDIR(mode) ? MARU_STATE_DIR : MARU_STATE_PUBLISHED;
			return &p->e[i];
		}
	fail_msg("fake pool full");
	return NULL;
}

static void attr_of(const struct rf_ent *e, struct maru_attr *a)
{
	if (!a)
		return;
	memset(a, 0, sizeof(*a));
	a->attr_size = sizeof(*a);
	a->ino = e ? e->ino : MARU_ROOT_ID;
	a->parent = e ? e->parent : 0;
	a->mode = e ? e->mode : S_IFDIR | 0755;
	a->state = e ? e->state : MARU_STATE_DIR;
	a->nlink = 1;
}

/* ---- the one-pool calls ---- */

static int f_client_new(const struct maru_client_opts *o, struct maru_client **out)
{
	struct maru_client *c;
	int i;

	for (i = 0; i < cur->npool; i++)
		if (!strcmp(o->uri, cur->pool[i].uri))
			break;
	if (i == cur->npool)
		return -EINVAL;
	if (cur->pool[i].down)
		return -ECONNREFUSED;
	cur->pool[i].connects++;
	c = calloc(1, sizeof(*c));
	assert_non_null(c);
	pthread_mutex_init(&c->lock, NULL);
	snprintf(c->uri, sizeof(c->uri), "%s", o->uri);
	*out = c;
	return 0;
}

static void f_client_free(struct maru_client *c)
{
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static uint64_t f_epoch(struct maru_client *c)
{
	return atomic_load(&c->gen_epoch);
}

static int f_pool_info(struct maru_client *c, struct maru_pool_info *out)
{
	struct rf_pool *p = P(c);

	memset(out, 0, sizeof(*out));
	out->info_size = sizeof(*out);
	memset(out->uuid, (int)(p - cur->pool) + 1, sizeof(out->uuid));
	out->size = 7;
	out->generation = 5;
	snprintf(out->uri, sizeof(out->uri), "%s", p->uri);
	return 0;
}

static int f_mkdir(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		   uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	struct rf_pool *p = P(c);

	(void)uid;
	(void)gid;
	if (!is_dir(p, parent))
		return -ENOENT;
	if (find_in(p, parent, name))
		return -EEXIST;
	attr_of(add_in(p, parent, name, S_IFDIR | mode), out);
	return 0;
}

static int f_rmdir(struct maru_client *c, uint64_t parent, const char *name)
{
	struct rf_pool *p = P(c);
	struct rf_ent *e = find_in(p, parent, name);
	int i;

	if (!e)
		return -ENOENT;
	if (p->rmdir_race[0]) {
		add_in(p, e->ino, p->rmdir_race, S_IFREG | 0644);
		p->rmdir_race[0] = '\0';
	}
	for (i = 0; i < RF_ENTS; i++)
		if (p->e[i].used && p->e[i].parent == e->ino)
			return -ENOTEMPTY;
	e->used = 0;
	return 0;
}

static int f_lookup(struct maru_client *c, uint64_t parent, const char *name,
		    struct maru_attr *out)
{
	struct rf_pool *p = P(c);
	struct rf_ent *e;

	if (!is_dir(p, parent))
		return -ENOENT;
	e = find_in(p, parent, name);
	if (!e)
		return -ENOENT;
	attr_of(e, out);
	return 0;
}

static int f_unlink(struct maru_client *c, uint64_t parent, const char *name)
{
	struct rf_ent *e = find_in(P(c), parent, name);

	if (!e)
		return -ENOENT;
	if (S_ISDIR(e->mode))
		return -EISDIR;
	e->used = 0;
	return 0;
}

static int f_getattr(struct maru_client *c, uint64_t ino, struct maru_attr *out)
{
	struct rf_pool *p = P(c);
	struct rf_ent *e = by_ino(p, ino);

	if (!e && ino != MARU_ROOT_ID)
		return -ENOENT;
	attr_of(e, out);
	return 0;
}

static int f_setattr(struct maru_client *c, uint64_t ino, const struct maru_setattr *sa,
		     struct maru_attr *out)
{
	struct rf_ent *e = by_ino(P(c), ino);

	if (!e)
		return -ENOENT;
	if (sa->mask & MARU_SET_MODE)
		e->mode = (e->mode & S_IFMT) | (sa->mode & 07777);
	attr_of(e, out);
	return 0;
}

static int f_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			const char *nn, unsigned int flags, uint64_t *seq)
{
	struct rf_pool *p = P(c);
	struct rf_ent *e = find_in(p, op, on), *t = find_in(p, np, nn);

	if (!e)
		return -ENOENT;
	if (t && (flags & MARU_RENAME_NOREPLACE))
		return -EEXIST;
	if (t)
		t->used = 0;
	e->parent = np;
	snprintf(e->name, sizeof(e->name), "%s", nn);
	if (seq)
		*seq = 1;
	return 0;
}

static int f_readdir(struct maru_client *c, uint64_t dir, uint64_t cookie, maru_readdir_cb cb,
		     void *arg)
{
	struct rf_pool *p = P(c);
	struct maru_dirent d;
	int i;

	if (!is_dir(p, dir))
		return -ENOENT;
	for (i = (int)cookie; i < RF_ENTS; i++) {
		if (!p->e[i].used || p->e[i].parent != dir)
			continue;
		d.ino = p->e[i].ino;
		d.cookie = (uint64_t)i + 1;
		d.mode = p->e[i].mode & S_IFMT;
		d.state = p->e[i].state;
		d.name = p->e[i].name;
		d.namelen = (uint16_t)strlen(d.name);
		if (cb(arg, &d))
			break;
	}
	return 0;
}

static int f_symlink(struct maru_client *c, uint64_t parent, const char *name,
		     const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	struct rf_pool *p = P(c);
	struct rf_ent *e;

	(void)uid;
	(void)gid;
	if (!is_dir(p, parent))
		return -ENOENT;
	if (find_in(p, parent, name))
		return -EEXIST;
	e = add_in(p, parent, name, S_IFLNK | 0777);
	snprintf(e->target, sizeof(e->target), "%s", target);
	attr_of(e, out);
	return 0;
}

static int f_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size)
{
	struct rf_ent *e = by_ino(P(c), ino);

	if (!e || !S_ISLNK(e->mode))
		return -EINVAL;
	snprintf(buf, size, "%s", e->target);
	return (int)strlen(e->target);
}

static int f_link(struct maru_client *c, uint64_t ino, uint64_t np, const char *nn,
		  struct maru_attr *out)
{
	struct rf_pool *p = P(c);
	struct rf_ent *e = by_ino(p, ino), *n;

	if (!e)
		return -ENOENT;
	n = add_in(p, np, nn, e->mode);
	n->ino = e->ino;
	attr_of(n, out);
	return 0;
}

static int f_mknod(struct maru_client *c, uint64_t parent, const char *name, uint32_t mode,
		   uint32_t rdev, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	struct rf_pool *p = P(c);

	(void)rdev;
	(void)uid;
	(void)gid;
	if (find_in(p, parent, name))
		return -EEXIST;
	attr_of(add_in(p, parent, name, mode), out);
	return 0;
}

/* a file handed out: the entry itself, opaque to the router */
static int f_file_create(struct maru_client *c, uint64_t parent, const char *name,
			 uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
			 uint64_t size_hint, struct maru_file **out)
{
	struct rf_pool *p = P(c);
	struct rf_ent *e;

	(void)uid;
	(void)gid;
	(void)size_hint;
	if (!is_dir(p, parent))
		return -ENOENT;
	e = find_in(p, parent, name);
	if (e && (flags & MARU_CREATE_EXCL))
		return -EEXIST;
	if (!e)
		e = add_in(p, parent, name, S_IFREG | mode);
	*out = (struct maru_file *)e;
	return 0;
}

static int f_file_rewrite(struct maru_client *c, uint64_t ino, unsigned int flags,
			  uint64_t size_hint, struct maru_file **out)
{
	struct rf_ent *e = by_ino(P(c), ino);

	(void)flags;
	(void)size_hint;
	if (!e)
		return -ENOENT;
	*out = (struct maru_file *)e;
	return 0;
}

static int f_file_open(struct maru_client *c, uint64_t parent, const char *name,
		       struct maru_file **out)
{
	struct rf_ent *e = find_in(P(c), parent, name);

	if (!e)
		return -ENOENT;
	*out = (struct maru_file *)e;
	return 0;
}

static int f_file_open_ino(struct maru_client *c, uint64_t ino, struct maru_file **out)
{
	return f_file_rewrite(c, ino, 0, 0, out);
}

static int f_statfs(struct maru_client *c, struct maru_statfs *out)
{
	struct rf_pool *p = P(c);
	uint64_t k = (uint64_t)(p - cur->pool) + 1;

	memset(out, 0, sizeof(*out));
	out->statfs_size = sizeof(*out);
	out->capacity = 1000 * k;
	out->free = 100 * k;
	out->used = 10 * k;
	out->names = k;
	out->dirs = 4;
	out->block = 4096 * k;
	return 0;
}

static ssize_t f_stats_text(struct maru_client *c, char *buf, size_t len)
{
	struct rf_pool *p = P(c);

	if (len)
		snprintf(buf, len, "%s", p->stats);
	return (ssize_t)strlen(p->stats);
}

static int f_pin_set(struct maru_client *c, uint64_t ino, uint32_t seconds)
{
	struct rf_pool *p = P(c);

	if (!by_ino(p, ino))
		return -ENOENT;
	p->pinned = seconds;
	return 0;
}

static int f_pin_get(struct maru_client *c, uint64_t ino)
{
	struct rf_pool *p = P(c);

	return by_ino(p, ino) ? (int)p->pinned : -ENOENT;
}

static uint32_t f_hint_actions(struct maru_client *c)
{
	return P(c)->hint_actions;
}

static int f_hint(struct maru_client *c, int action, const char *request,
		  const struct maru_hint_range *r, size_t n)
{
	struct rf_pool *p = P(c);
	size_t i;

	(void)request;
	if (!(p->hint_actions & (1u << action)))
		return -EOPNOTSUPP;
	for (i = 0; i < n; i++)
		if (!by_ino(p, r[i].ino))
			return -ENOENT;
	p->hints++;
	p->nhint = n < 8 ? n : 8;
	if (n)
		memcpy(p->hint, r, p->nhint * sizeof(*r));
	return 0;
}

static int f_ns_usage(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out)
{
	struct rf_pool *p = P(c);
	uint64_t k = (uint64_t)(p - cur->pool);

	if (!is_dir(p, dir))
		return -ENOTDIR;
	memset(out, 0, sizeof(*out));
	out->usage_size = sizeof(*out);
	snprintf(out->tenant, sizeof(out->tenant), "t");
	out->quota = p->quota;
	out->used = 10 * k + 1;
	out->enospc = k;
	return 0;
}

/* ---- events: a pool's stream is the pool itself ---- */

static int f_events_open(struct maru_client *c, uint64_t after, struct maru_events **out)
{
	struct rf_pool *p = P(c);

	(void)after;
	pthread_mutex_lock(&cur->mu);
	p->ev_open++;
	pthread_mutex_unlock(&cur->mu);
	*out = (struct maru_events *)p;
	return 0;
}

static int f_events_next(struct maru_events *ev, struct maru_event *out, int timeout_ms)
{
	struct rf_pool *p = (struct rf_pool *)ev;
	struct timespec ts = { 0, 5 * 1000000L };
	int rc = 0;

	(void)timeout_ms;
	pthread_mutex_lock(&cur->mu);
	if (p->evhead < p->evn) {
		*out = p->evq[p->evhead++];
		rc = 1;
	}
	pthread_mutex_unlock(&cur->mu);
	if (!rc)
		nanosleep(&ts, NULL);
	return rc;
}

static int f_events_ack(struct maru_events *ev, uint64_t seq)
{
	struct rf_pool *p = (struct rf_pool *)ev;

	pthread_mutex_lock(&cur->mu);
	p->acked = seq;
	pthread_mutex_unlock(&cur->mu);
	return 0;
}

static int f_events_up(struct maru_events *ev, uint64_t *losses)
{
	*losses = (uint64_t)((struct rf_pool *)ev - cur->pool);
	return 1;
}

static void f_events_close(struct maru_events *ev)
{
	struct rf_pool *p = (struct rf_pool *)ev;

	pthread_mutex_lock(&cur->mu);
	p->ev_open--;
	pthread_mutex_unlock(&cur->mu);
}

static int f_lc_take(struct maru_client *c, uint64_t ino, struct maru_file **out)
{
	(void)P(c);
	(void)ino;
	(void)out;
	return -ENOENT;
}

static void f_lc_drop(struct maru_client *c, uint64_t ino)
{
	(void)ino;
	(void)P(c);
}

static void f_lc_clear(struct maru_client *c)
{
	P(c)->lc_clears++;
}

static void f_lc_expire(struct maru_client *c)
{
	(void)P(c);
}

static unsigned int f_lc_count(struct maru_client *c)
{
	return (unsigned int)(P(c) - cur->pool) + 1;
}

static const struct route_ops fake_ops = {
	.client_new = f_client_new, .client_free = f_client_free, .pool_info = f_pool_info,
	.epoch = f_epoch,
	.mkdir = f_mkdir, .rmdir = f_rmdir, .lookup = f_lookup, .unlink = f_unlink,
	.getattr = f_getattr, .setattr = f_setattr, .rename_seq = f_rename_seq,
	.readdir = f_readdir, .symlink = f_symlink, .readlink = f_readlink, .link = f_link,
	.mknod = f_mknod, .file_create = f_file_create, .file_rewrite = f_file_rewrite,
	.file_open = f_file_open, .file_open_ino = f_file_open_ino, .statfs = f_statfs,
	.stats_text = f_stats_text, .pin_set = f_pin_set, .pin_get = f_pin_get,
	.hint_actions = f_hint_actions, .hint = f_hint, .ns_usage = f_ns_usage,
	.events_open = f_events_open, .events_next = f_events_next,
	.events_ack = f_events_ack, .events_up = f_events_up,
	.events_close = f_events_close, .lc_take = f_lc_take, .lc_drop = f_lc_drop,
	.lc_clear = f_lc_clear, .lc_expire = f_lc_expire, .lc_count = f_lc_count,
};

/* ---- the fixture ---- */

void rf_put(struct rf *f, int i, const char *state)
{
	char key[128], val[512];
	struct rf_pool *p = &f->pool[i];

	snprintf(key, sizeof(key), "/marufs/kv/pools/%s", p->uuid);
	snprintf(val, sizeof(val), "{\"uuid\":\"%s\",\"name\":\"kv\",\"tcp\":[\"tcp://127.0.0.1:%d"
		 "\"],\"rdma\":[],\"capacity\":%d,\"weight\":1,\"zone\":\"z\",\"state\":\"%s\","
		 "\"generation\":\"0000000000000001\",\"since\":%lld}", p->uuid, 7001 + i,
		 1000 * (i + 1), state, (long long)p->since);
	fe_put(&f->e, key, val, 0);
}

static void put_pool(struct rf *f, int i)
{
	struct rf_pool *p = &f->pool[i];

	snprintf(p->uuid, sizeof(p->uuid), "0000000%d-aaaa-bbbb-cccc-dddddddddddd", i);
	snprintf(p->uri, sizeof(p->uri), "maru://127.0.0.1:%d", 7001 + i);
	p->next_ino = 2;
	if (!p->since)
		p->since = 1000;
	rf_put(f, i, "active");
}

int rf_join(struct rf *f, int64_t since)
{
	struct maru_cluster_pool p[RF_POOLS + 1];
	struct timespec ts = { 0, 50 * 1000000L };
	int i = f->npool, k;

	assert_true(i < RF_POOLS);
	f->pool[i].since = since;
	put_pool(f, i);
	f->npool++;
	for (k = 0; k < 80; k++) {
		if (maru_cluster_pools(f->cl, p, RF_POOLS + 1) == f->npool &&
		    route_pool_at(f->c, (unsigned int)i, NULL, NULL, NULL) == 0)
			return i;
		nanosleep(&ts, NULL);
	}
	fail_msg("pool %d never seen", i);
	return -1;
}

void rf_setup(struct rf *f, int n, unsigned int down)
{
	struct maru_client_opts o;
	struct maru_cluster_opts co;
	char uri[128], ep[64];
	int i;

	memset(f, 0, sizeof(*f));
	cur = f;
	pthread_mutex_init(&f->mu, NULL);
	f->npool = n;
	f->ops = fake_ops;
	fe_start(&f->e);
	for (i = 0; i < n; i++) {
		put_pool(f, i);
		f->pool[i].down = !!(down & (1u << i));
	}
	fe_endpoint(&f->e, ep, sizeof(ep));
	snprintf(uri, sizeof(uri), "maru+etcd://%s/kv", ep);
	maru_cluster_opts_init(&co, sizeof(co));
	co.uri = uri;
	assert_int_equal(maru_cluster_open(&co, &f->cl), 0);
	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	assert_int_equal(route_client_new(&o, &f->ops, &f->c), 0);
}

void rf_teardown(struct rf *f)
{
	if (f->c)
		route_client_free(f->c);
	if (f->cl)
		maru_cluster_close(f->cl);
	fe_stop(&f->e);
	pthread_mutex_destroy(&f->mu);
	cur = NULL;
}

int rf_owner(struct rf *f, const char *path)
{
	struct maru_cluster_pool o, p;
	int i;

	assert_int_equal(maru_cluster_owner(f->cl, path, &o, &p), 0);
	for (i = 0; i < f->npool; i++)
		if (!strcmp(o.uuid, f->pool[i].uuid))
			return i;
	fail_msg("owner %s is no pool of the fixture", o.uuid);
	return -1;
}

void rf_name_on(struct rf *f, const char *dir, const char *prefix, int i, char *buf,
		size_t len)
{
	char path[512];
	int k;

	for (k = 0; k < 1000; k++) {
		snprintf(buf, len, "%s%d", prefix, k);
		snprintf(path, sizeof(path), "%s%s%s", dir, dir[0] ? "/" : "", buf);
		if (rf_owner(f, path) == i)
			return;
	}
	fail_msg("no name of pool %d", i);
}

/* A name owned by the pool that joined, placed on prev before the join. */
void rf_moved_name(struct rf *f, int joined, char *buf, size_t len, int *prev)
{
	struct maru_cluster_pool o, p;
	int k, i;

	for (k = 0; k < 1000; k++) {
		snprintf(buf, len, "moved%d", k);
		assert_int_equal(maru_cluster_owner(f->cl, buf, &o, &p), 0);
		if (strcmp(o.uuid, f->pool[joined].uuid) || !strcmp(p.uuid, o.uuid))
			continue;
		for (i = 0; i < joined; i++)
			if (!strcmp(p.uuid, f->pool[i].uuid))
				*prev = i;
		return;
	}
	fail_msg("no name moved by the join");
}

struct rf_ent *rf_find(struct rf *f, int i, uint64_t parent, const char *name)
{
	return find_in(&f->pool[i], parent, name);
}

uint64_t rf_add(struct rf *f, int i, uint64_t parent, const char *name, uint32_t mode)
{
	return add_in(&f->pool[i], parent, name, mode)->ino;
}

unsigned int rf_calls(struct rf *f, int i)
{
	return f->pool[i].calls;
}

void rf_event(struct rf *f, int i, const struct maru_event *e)
{
	pthread_mutex_lock(&f->mu);
	assert_true(f->pool[i].evn < RF_EVQ);
	f->pool[i].evq[f->pool[i].evn++] = *e;
	pthread_mutex_unlock(&f->mu);
}
