// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/members.c: libmaru's view of a cluster (maru_cluster_* in
 * libmaru.h). A thread reads every record under /marufs/NAME/pools/ from
 * etcd each refresh_ms; when what placement depends on changed (the pools,
 * their weight, capacity or state), the view before becomes the previous
 * one and the new one current. Owners are found in place.c's way: the
 * same membership gives every client the same owner. A pool this client
 * saw come back (missing from the view before) is new to it, whatever its
 * record says (see owner()).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "maru/libmaru.h"
#include "clock.h"
#include "etcd.h"
#include "hash.h"
#include "place.h"

struct view {
	size_t n;
	struct maru_cluster_pool *pools;	/* UUID order */
	struct place_pool *place;		/* the same order */
	int64_t *back;				/* seen coming back then, or 0 */
};

struct maru_cluster {
	struct etcd *etcd;
	char name[64];
	char prefix[128];
	unsigned int refresh_ms;
	unsigned int settle_s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	volatile int stop;
	struct view *cur;		/* lock */
	int unreachable;		/* the thread's: said so already */
};

void maru_cluster_opts_init(struct maru_cluster_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
	o->refresh_ms = 1000;
	o->timeout_ms = 2000;
	o->settle_s = 600;
}

static void view_free(struct view *v)
{
	if (!v)
		return;
	free(v->pools);
	free(v->place);
	free(v->back);
	free(v);
}

static int by_uuid(const void *a, const void *b)
{
	return strcmp(((const struct maru_cluster_pool *)a)->uuid,
		      ((const struct maru_cluster_pool *)b)->uuid);
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string) ?
	       json_object_get_string(v) : NULL;
}

/* one record into p; 0, or -EINVAL for one that is not a pool's */
static int parse_record(const char *text, struct maru_cluster_pool *p)
{
	json_object *o = json_tokener_parse(text), *v;
	const char *s, *uri;
	int rc = -EINVAL;

	memset(p, 0, sizeof(*p));
	p->pool_size = sizeof(*p);
	if (!o)
		return -EINVAL;
	s = jstr(o, "uuid");
	uri = json_object_object_get_ex(o, "tcp", &v) && json_object_is_type(v, json_type_array) &&
	      json_object_array_length(v) ?
	      json_object_get_string(json_object_array_get_idx(v, 0)) : NULL;
	if (s && strlen(s) < sizeof(p->uuid) && uri && !strncmp(uri, "tcp://", 6) &&
	    strlen(uri) < sizeof(p->uri) - 1) {
		snprintf(p->uuid, sizeof(p->uuid), "%s", s);
		snprintf(p->uri, sizeof(p->uri), "maru://%s", uri + 6);
		p->capacity = json_object_object_get_ex(o, "capacity", &v) ?
			      (uint64_t)json_object_get_int64(v) : 0;
		p->weight = json_object_object_get_ex(o, "weight", &v) ?
			    (uint32_t)json_object_get_int64(v) : 1;
		s = jstr(o, "state");
		p->draining = s && !strcmp(s, "draining");
		s = jstr(o, "zone");
		snprintf(p->zone, sizeof(p->zone), "%s", s ? s : "");
		p->since = json_object_object_get_ex(o, "since", &v) ? json_object_get_int64(v) : 0;
		rc = 0;
	}
	json_object_put(o);
	return rc;
}

/* the placement seed of a pool: its UUID text's hash (same for every client) */
static uint64_t seed_of(const char *uuid)
{
	return hash_xxh3(uuid, strlen(uuid));
}

static int read_view(struct maru_cluster *c, struct view **out)
{
	struct etcd_kv *kvs;
	struct view *v;
	size_t n, i;
	int rc;

	rc = etcd_list(c->etcd, c->prefix, &kvs, &n, NULL);
	if (rc)
		return rc;
	v = calloc(1, sizeof(*v));
	if (v && n) {
		v->pools = calloc(n, sizeof(*v->pools));
		v->place = calloc(n, sizeof(*v->place));
		v->back = calloc(n, sizeof(*v->back));
	}
	if (!v || (n && (!v->pools || !v->place || !v->back))) {
		view_free(v);
		etcd_kvs_free(kvs, n);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (!parse_record(kvs[i].value, &v->pools[v->n]))
			v->n++;
	etcd_kvs_free(kvs, n);
	if (v->n)
		qsort(v->pools, v->n, sizeof(*v->pools), by_uuid);
	for (i = 0; i < v->n; i++) {
		v->place[i].seed = seed_of(v->pools[i].uuid);
		/* weight x capacity in GiB; draining pools: see owner() */
		v->place[i].weight = (double)v->pools[i].weight *
				     ((double)v->pools[i].capacity / (1u << 30) + 1e-9);
	}
	*out = v;
	return 0;
}

/* what placement depends on differs */
static int view_differs(const struct view *a, const struct view *b)
{
	size_t i;

	if (!a || a->n != b->n)
		return 1;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->pools[i].uuid, b->pools[i].uuid) ||
		    strcmp(a->pools[i].uri, b->pools[i].uri) ||
		    a->place[i].weight != b->place[i].weight ||
		    a->pools[i].draining != b->pools[i].draining ||
		    a->pools[i].since != b->pools[i].since)
			return 1;
	return 0;
}

/*
 * When each pool of v came back: as in old, or now for a pool old lacked
 * (a pool that restarted within FORM_S of the first is a founder by its
 * record, yet names were placed without it while it was away).
 */
static void carry_back(const struct view *old, struct view *v)
{
	size_t i, j;

	for (i = 0; old && i < v->n; i++) {
		for (j = 0; j < old->n && strcmp(old->pools[j].uuid, v->pools[i].uuid); j++)
			;
		v->back[i] = j < old->n ? old->back[j] : (int64_t)time(NULL);
	}
}

/* read once and install; 0, or what etcd_list said */
static int refresh(struct maru_cluster *c)
{
	struct view *v, *old = NULL;
	int rc = read_view(c, &v);

	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	if (view_differs(c->cur, v)) {
		carry_back(c->cur, v);
		old = c->cur;
		c->cur = v;
		v = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	view_free(old);
	view_free(v);
	return 0;
}

static void *cluster_main(void *arg)
{
	struct maru_cluster *c = arg;
	struct timespec ts;
	int rc;

	while (!c->stop) {
		rc = refresh(c);
		if (rc && rc != -ECANCELED && !c->unreachable) {
			fprintf(stderr, "libmaru: cluster %s: cannot read the membership (%s): "
				"keeping the last one\n", c->name, etcd_error(c->etcd));
			c->unreachable = 1;
		} else if (!rc && c->unreachable) {
			fprintf(stderr, "libmaru: cluster %s: membership readable again\n",
				c->name);
			c->unreachable = 0;
		}
		pthread_mutex_lock(&c->lock);
		deadline_ms(&ts, c->refresh_ms);
		if (!c->stop)
			pthread_cond_timedwait(&c->wake, &c->lock, &ts);
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

/* maru+etcd://HOST:PORT[,HOST:PORT...]/NAME -> endpoints and name */
static int parse_uri(const char *uri, char *eps, size_t elen, char *name, size_t nlen)
{
	const char *h, *slash, *p;

	if (!uri || strncmp(uri, "maru+etcd://", 12))
		return -EINVAL;
	h = uri + 12;
	slash = strchr(h, '/');
	if (!slash || slash == h || !slash[1] || (size_t)(slash - h) >= elen ||
	    strlen(slash + 1) >= nlen)
		return -EINVAL;
	for (p = slash + 1; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._-", *p)))
			return -EINVAL;
	memcpy(eps, h, (size_t)(slash - h));
	eps[slash - h] = '\0';
	strcpy(name, slash + 1);
	return 0;
}

int maru_cluster_open(const struct maru_cluster_opts *o, struct maru_cluster **out)
{
	struct maru_cluster *c;
	struct etcd_opts eo;
	char eps[1024];
	int rc;

	if (!o || o->opts_size < sizeof(size_t) || !out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	rc = parse_uri(o->uri, eps, sizeof(eps), c->name, sizeof(c->name));
	if (rc) {
		free(c);
		return rc;
	}
	snprintf(c->prefix, sizeof(c->prefix), "/marufs/%s/pools/", c->name);
	c->refresh_ms = o->refresh_ms ? o->refresh_ms : 1000;
	c->settle_s = o->opts_size > offsetof(struct maru_cluster_opts, settle_s) && o->settle_s ?
		      o->settle_s : 600;
	memset(&eo, 0, sizeof(eo));
	eo.endpoints = eps;
	eo.ca = o->etcd_ca;
	eo.cert = o->etcd_cert;
	eo.key = o->etcd_key;
	eo.user = o->etcd_user;
	eo.password = o->etcd_password;
	eo.timeout_ms = o->timeout_ms ? o->timeout_ms : 2000;
	eo.stop = &c->stop;
	rc = etcd_new(&eo, &c->etcd);
	if (rc) {
		free(c);
		return rc;
	}
	pthread_mutex_init(&c->lock, NULL);
	rc = cond_init_mono(&c->wake);
	if (!rc)
		rc = refresh(c);
	if (!rc)
		rc = -pthread_create(&c->thread, NULL, cluster_main, c);
	if (rc) {
		etcd_free(c->etcd);
		view_free(c->cur);
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->wake);
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void maru_cluster_close(struct maru_cluster *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	etcd_free(c->etcd);
	view_free(c->cur);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->wake);
	free(c);
}

int maru_cluster_pools(struct maru_cluster *c, struct maru_cluster_pool *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->cur ? c->cur->n : 0;
	if (out && max && n)
		memcpy(out, c->cur->pools, (n < max ? n : max) * sizeof(*out));
	pthread_mutex_unlock(&c->lock);
	return (int)n;
}

/* the hash a path is placed by: its directory's path and its name's key */
static uint64_t path_hash(const char *path)
{
	const char *end = path + strlen(path), *base, *dir = path;

	while (*dir == '/')
		dir++;
	while (end > dir && end[-1] == '/')
		end--;
	for (base = end; base > dir && base[-1] != '/'; base--)
		;
	return place_hash(hash_xxh3(dir, base > dir ? (size_t)(base - 1 - dir) : 0), base,
			  (size_t)(end - base));
}

/*
 * Pools that formed the cluster (joined within FORM_S of the first one)
 * are never new, unless this client saw one come back. A later pool is new
 * for settle_s after it joined (or came back): names placed before it came
 * may sit elsewhere.
 */
#define FORM_S	30

/*
 * The owner of h in v now (prev 0), or where it was placed before the new
 * pools came and the draining ones drained (prev 1).
 */
static int owner(const struct view *v, uint64_t h, int prev, unsigned int settle_s)
{
	struct place_pool w[64];
	int64_t now = (int64_t)time(NULL), first = INT64_MAX;
	size_t i, n = v->n < 64 ? v->n : 64;

	for (i = 0; i < n; i++)
		if (v->pools[i].since < first)
			first = v->pools[i].since;
	for (i = 0; i < n; i++) {
		w[i] = v->place[i];
		if (!prev && v->pools[i].draining)
			w[i].weight = 0.0;
		if (prev && (v->pools[i].since > first + FORM_S || v->back[i]) &&
		    (v->pools[i].since > now - (int64_t)settle_s ||
		     v->back[i] > now - (int64_t)settle_s))
			w[i].weight = 0.0;
	}
	return place_owner(w, (unsigned int)n, h);
}

int maru_cluster_owner(struct maru_cluster *c, const char *path, struct maru_cluster_pool *out,
		       struct maru_cluster_pool *previous)
{
	uint64_t h = path_hash(path);
	int i, j, rc = 0;

	pthread_mutex_lock(&c->lock);
	i = c->cur ? owner(c->cur, h, 0, c->settle_s) : -1;
	if (i < 0) {
		rc = -ENOENT;
	} else {
		if (out)
			*out = c->cur->pools[i];
		j = owner(c->cur, h, 1, c->settle_s);
		if (previous)
			*previous = c->cur->pools[j >= 0 ? j : i];
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}
