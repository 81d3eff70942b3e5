// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/cluster/member.c: the membership thread (member.h). It loops once
 * a second at most: without a lease it grants one and puts the record;
 * with one it renews it every TTL/3, reading the record back so an
 * operator's "draining" holds. Each change of what etcd answered (joined,
 * unreachable, lease expired, back) is logged once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "clock.h"
#include "log.h"
#include "member.h"

struct member {
	struct member_info mi;
	struct etcd *etcd;
	char key[256];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	volatile int stop;		/* polled by etcd calls too */
	int asked;			/* lock: state marud's config asks, -1 none */
	int state;			/* the thread's: 1 draining, as put in etcd */
	int64_t lease;			/* the thread's */
	int told;			/* the last state logged (enum below) */
};

enum { TOLD_NONE, TOLD_JOINED, TOLD_UNREACHABLE, TOLD_EXPIRED };

int member_key(const struct member_info *mi, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/marufs/%s/pools/%s", mi->cluster, mi->uuid);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static json_object *uri_array(const char (*uris)[256], unsigned int n)
{
	json_object *a = json_object_new_array();
	unsigned int i;

	for (i = 0; a && i < n; i++)
		json_object_array_add(a, json_object_new_string(uris[i]));
	return a;
}

char *member_record(const struct member_info *mi, int draining)
{
	json_object *o = json_object_new_object();
	char gen[20];
	char *s;

	if (!o)
		return NULL;
	snprintf(gen, sizeof(gen), "%016llx", (unsigned long long)mi->generation);
	json_object_object_add(o, "uuid", json_object_new_string(mi->uuid));
	json_object_object_add(o, "name", json_object_new_string(mi->cluster));
	json_object_object_add(o, "tcp", uri_array(mi->tcp, mi->ntcp));
	json_object_object_add(o, "rdma", uri_array(mi->rdma, mi->nrdma));
	json_object_object_add(o, "capacity", json_object_new_int64((int64_t)mi->capacity));
	json_object_object_add(o, "weight", json_object_new_int64(mi->weight ? mi->weight : 1));
	json_object_object_add(o, "zone", json_object_new_string(mi->zone));
	json_object_object_add(o, "state",
			       json_object_new_string(draining ? "draining" : "active"));
	json_object_object_add(o, "generation", json_object_new_string(gen));
	json_object_object_add(o, "since", json_object_new_int64(mi->since));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

/*
 * The record as etcd has it: its state (1 draining, 0 active, -1 no
 * record); *ours (may be NULL) 1 when it is there under our lease (an
 * `etcdctl put` without --ignore-lease detaches it, a delete removes it:
 * then it must be put again).
 */
static int state_in_etcd(struct member *m, int *ours)
{
	json_object *o, *st;
	char *v = NULL;
	int64_t lease = 0;
	int state = -1;

	if (ours)
		*ours = 1;	/* not known: leave it */
	if (etcd_get(m->etcd, m->key, &v, &lease) == -ENOENT) {
		if (ours)
			*ours = 0;
		return -1;
	}
	if (!v)
		return -1;
	if (ours)
		*ours = m->lease && lease == m->lease;
	o = json_tokener_parse(v);
	state = 0;
	if (o && json_object_object_get_ex(o, "state", &st))
		state = !strcmp(json_object_get_string(st), "draining");
	json_object_put(o);
	free(v);
	return state;
}

static void tell(struct member *m, int what, int err, int draining)
{
	if (m->told == what || err == -ECANCELED)
		return;
	m->told = what;
	switch (what) {
	case TOLD_JOINED:
		log_info("cluster %s: pool %s joined as %s (etcd lease %llx, ttl %u s)",
			 m->mi.cluster, m->mi.uuid, draining ? "draining" : "active",
			 (unsigned long long)m->lease, m->mi.ttl_s);
		break;
	case TOLD_UNREACHABLE:
		log_warnx("cluster %s: %s: %s (%s); serving on with the last membership, "
			  "retrying every second", m->mi.cluster,
			  m->lease ? "cannot renew the etcd lease" : "cannot join",
			  err == -EAGAIN ? "etcd has no quorum (members answer but cannot serve)" :
			  err == -EACCES ? "etcd refused the credentials or the request" :
			  err == -EHOSTUNREACH ? "no etcd endpoint answers" : "etcd refused",
			  etcd_error(m->etcd));
		break;
	case TOLD_EXPIRED:
		log_warnx("cluster %s: the etcd lease of pool %s expired (etcd out of reach "
			  "for more than %u s): registering again", m->mi.cluster, m->mi.uuid,
			  m->mi.ttl_s);
		break;
	}
}

/* the asked state went out: forget it unless another came meanwhile */
static void took(struct member *m, int asked)
{
	pthread_mutex_lock(&m->lock);
	if (m->asked == asked)
		m->asked = -1;
	pthread_mutex_unlock(&m->lock);
}

/* put the record under the current lease; the caller holds none of the locks */
static int put_record(struct member *m, int draining)
{
	char *rec = member_record(&m->mi, draining);
	int rc;

	if (!rec)
		return -ENOMEM;
	rc = etcd_put(m->etcd, m->key, rec, m->lease);
	free(rec);
	return rc;
}

/* one round; returns how long to sleep before the next, in ms */
static unsigned int round_once(struct member *m)
{
	int64_t ttl;
	int rc, asked, ours, st;

	pthread_mutex_lock(&m->lock);
	asked = m->asked;
	pthread_mutex_unlock(&m->lock);
	if (!m->lease) {
		/* an operator's drain outlives our restart */
		st = asked >= 0 ? asked : state_in_etcd(m, NULL) == 1;
		rc = etcd_lease_grant(m->etcd, m->mi.ttl_s, &m->lease);
		if (!rc && (rc = put_record(m, st))) {
			etcd_lease_revoke(m->etcd, m->lease);
			m->lease = 0;
		}
		if (rc) {
			m->lease = 0;
			tell(m, TOLD_UNREACHABLE, rc, st);
			return 1000;
		}
		m->state = st;
		took(m, asked);
		tell(m, TOLD_JOINED, 0, st);
		return m->mi.ttl_s * 1000 / 3;
	}
	rc = etcd_lease_keepalive(m->etcd, m->lease, &ttl);
	if (rc == -ENOENT) {
		m->lease = 0;
		tell(m, TOLD_EXPIRED, rc, m->state);
		return 0;
	}
	if (rc) {
		tell(m, TOLD_UNREACHABLE, rc, m->state);
		return 1000;
	}
	if (m->told != TOLD_JOINED)
		log_info("cluster %s: etcd answers again; pool %s still registered",
			 m->mi.cluster, m->mi.uuid);
	m->told = TOLD_JOINED;
	st = state_in_etcd(m, &ours);
	if (asked < 0 && st >= 0 && st != m->state) {
		log_info("cluster %s: pool %s set %s in etcd%s", m->mi.cluster, m->mi.uuid,
			 st ? "draining" : "active", st ? ": no new names here" : "");
		m->state = st;
	}
	if (!ours)
		log_info("cluster %s: the record of pool %s lost its lease (deleted, or written "
			 "without --ignore-lease): putting it back under lease %llx",
			 m->mi.cluster, m->mi.uuid, (unsigned long long)m->lease);
	if ((asked >= 0 && asked != m->state) || !ours) {
		st = asked >= 0 ? asked : m->state;
		if (put_record(m, st))
			return 1000;
		if (st != m->state)
			log_info("cluster %s: pool %s is now %s", m->mi.cluster, m->mi.uuid,
				 st ? "draining" : "active");
		m->state = st;
	}
	took(m, asked);
	return m->mi.ttl_s * 1000 / 3;
}

static void *member_main(void *arg)
{
	struct member *m = arg;
	unsigned int ms;
	struct timespec ts;

	while (!m->stop) {
		ms = round_once(m);
		if (ms > 1000)
			ms = 1000;	/* a drain asked meanwhile goes out within 1 s */
		pthread_mutex_lock(&m->lock);
		deadline_ms(&ts, ms);
		if (!m->stop && ms)
			pthread_cond_timedwait(&m->wake, &m->lock, &ts);
		pthread_mutex_unlock(&m->lock);
	}
	return NULL;
}

int member_start(const struct etcd_opts *eo, const struct member_info *mi,
		 struct member **out)
{
	struct member *m = calloc(1, sizeof(*m));
	struct etcd_opts o = *eo;
	int rc;

	if (!m)
		return -ENOMEM;
	m->mi = *mi;
	if (!m->mi.ttl_s)
		m->mi.ttl_s = 10;
	if (!m->mi.since)
		m->mi.since = (int64_t)time(NULL);
	m->asked = mi->draining ? 1 : -1;
	o.stop = &m->stop;
	rc = member_key(mi, m->key, sizeof(m->key));
	if (!rc)
		rc = etcd_new(&o, &m->etcd);
	if (rc) {
		free(m);
		return rc;
	}
	pthread_mutex_init(&m->lock, NULL);
	rc = cond_init_mono(&m->wake);
	if (!rc)
		rc = -pthread_create(&m->thread, NULL, member_main, m);
	if (rc) {
		etcd_free(m->etcd);
		free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void member_set_draining(struct member *m, int draining)
{
	pthread_mutex_lock(&m->lock);
	m->asked = !!draining;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
}

void member_stop(struct member *m)
{
	int rc;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = 1;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	if (m->lease) {
		m->stop = 0;	/* the revoke itself must run */
		rc = etcd_lease_revoke(m->etcd, m->lease);
		if (rc)
			log_warnx("cluster %s: could not leave (%s): the record of pool %s "
				  "goes when its lease expires, in %u s at most",
				  m->mi.cluster, etcd_error(m->etcd), m->mi.uuid, m->mi.ttl_s);
		else
			log_info("cluster %s: pool %s left the cluster", m->mi.cluster,
				 m->mi.uuid);
	}
	etcd_free(m->etcd);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
