// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/route_events.c: the event stream of a routed client
 * (route.h): one stream per pool, each read by a thread of its own into
 * one queue, every event in the router's ids (a file's id tagged with its
 * pool, a directory's by its path; a directory this client never looked
 * up is 0) and numbered in one sequence of the merged stream.
 * Acknowledging merged event M acknowledges, on each pool, the last of
 * that pool's events delivered up to M. A pool's stream opens when its
 * client first connects (the consumer looks every STREAMS_MS); the merged
 * stream is up while the stream of every pool in the membership is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_priv.h"
#include "route_priv.h"

#define QCAP		64		/* merged events waiting for the consumer */
#define ACKCAP		1024		/* delivered, not yet acknowledged, per pool */
#define SUB_WAIT_MS	200
#define STREAMS_MS	500

struct rsub {
	struct route_events *re;
	unsigned int slot;
	struct maru_events *ev;
	pthread_t th;
	struct maru_event *tmp;
};

struct qent {
	unsigned int slot;
	struct maru_event e;		/* e.seq: the pool's */
};

/* delivered merged seq -> pool seq, per pool (a ring) */
struct ackring {
	uint64_t mseq[ACKCAP], pseq[ACKCAP];
	unsigned int head, n;
};

struct route_events {
	struct route *r;
	pthread_mutex_t lock;
	pthread_cond_t more, room;
	struct qent *q;
	unsigned int head, n;
	uint64_t seq;			/* the merged stream's last number */
	int stop;
	uint64_t looked_ms;
	struct rsub *sub[ROUTE_POOLS];
	struct ackring *ack[ROUTE_POOLS];
};

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* the router id of the directory holding path p ("/a/b/n"), 0 if unknown */
static uint64_t dir_of(struct route *r, const char *p)
{
	char d[MARU_PATH_MAX];
	char *s;

	while (*p == '/')
		p++;
	snprintf(d, sizeof(d), "%s", p);
	s = strrchr(d, '/');
	if (s)
		*s = '\0';
	else
		d[0] = '\0';
	return route_dir_find(r, d);
}

static void translate(struct route *r, unsigned int slot, struct maru_event *e)
{
	const char *p = e->path;
	uint64_t d;

	if (e->type >= MARU_EV_OVERFLOW)
		return;
	while (*p == '/')
		p++;
	d = e->type == MARU_EV_MKDIR || e->type == MARU_EV_RMDIR ||
	    e->type == MARU_EV_SETATTR ? route_dir_find(r, p) : 0;
	if (d)
		e->ino = d;
	else if (e->type == MARU_EV_MKDIR || e->type == MARU_EV_RMDIR)
		e->ino = 0;
	else if (e->ino)
		e->ino = route_tag(slot, e->ino);
	e->parent = e->parent ? dir_of(r, e->path) : 0;
	e->parent2 = e->parent2 ? dir_of(r, e->path2) : 0;
}

static void *sub_main(void *arg)
{
	struct rsub *s = arg;
	struct route_events *re = s->re;
	struct qent *q;
	int rc;

	for (;;) {
		pthread_mutex_lock(&re->lock);
		if (re->stop) {
			pthread_mutex_unlock(&re->lock);
			return NULL;
		}
		pthread_mutex_unlock(&re->lock);
		rc = re->r->ops->events_next(s->ev, s->tmp, SUB_WAIT_MS);
		if (rc != 1)
			continue;
		translate(re->r, s->slot, s->tmp);
		pthread_mutex_lock(&re->lock);
		while (re->n == QCAP && !re->stop)
			pthread_cond_wait(&re->room, &re->lock);
		if (!re->stop) {
			q = &re->q[(re->head + re->n++) % QCAP];
			q->slot = s->slot;
			memcpy(&q->e, s->tmp, sizeof(q->e));
			pthread_cond_signal(&re->more);
		}
		pthread_mutex_unlock(&re->lock);
	}
}

/* A stream for each pool whose client is connected and has none yet. */
static void open_streams(struct route_events *re)
{
	struct route *r = re->r;
	unsigned int m[ROUTE_POOLS];
	int n = route_members(r, m, ROUTE_POOLS), i;
	struct maru_client *c;
	struct rsub *s;

	re->looked_ms = ms_now();
	for (i = 0; i < n; i++) {
		if (re->sub[m[i]] || route_sub(r, m[i], &c))
			continue;
		s = calloc(1, sizeof(*s));
		re->ack[m[i]] = re->ack[m[i]] ? re->ack[m[i]] : calloc(1, sizeof(struct ackring));
		if (!s || !re->ack[m[i]] || !(s->tmp = malloc(sizeof(*s->tmp))) ||
		    r->ops->events_open(c, 0, &s->ev)) {
			if (s)
				free(s->tmp);
			free(s);
			continue;
		}
		s->re = re;
		s->slot = m[i];
		if (pthread_create(&s->th, NULL, sub_main, s)) {
			r->ops->events_close(s->ev);
			free(s->tmp);
			free(s);
			continue;
		}
		pthread_mutex_lock(&re->lock);
		re->sub[m[i]] = s;
		pthread_mutex_unlock(&re->lock);
	}
}

int route_events_open(struct maru_client *c, struct route_events **out)
{
	struct route_events *re = calloc(1, sizeof(*re));

	if (!re || !(re->q = calloc(QCAP, sizeof(*re->q)))) {
		free(re);
		return -ENOMEM;
	}
	re->r = c->route;
	pthread_mutex_init(&re->lock, NULL);
	pthread_cond_init(&re->more, NULL);
	pthread_cond_init(&re->room, NULL);
	open_streams(re);
	*out = re;
	return 0;
}

static void note_delivered(struct route_events *re, unsigned int slot, uint64_t pseq)
{
	struct ackring *a = re->ack[slot];

	if (!a || !pseq)
		return;
	if (a->n == ACKCAP) {		/* the oldest goes; a later ack covers it */
		a->head = (a->head + 1) % ACKCAP;
		a->n--;
	}
	a->mseq[(a->head + a->n) % ACKCAP] = re->seq;
	a->pseq[(a->head + a->n) % ACKCAP] = pseq;
	a->n++;
}

/* 1: an event in out; 0: none within timeout_ms (< 0: wait on) */
int route_events_next(struct route_events *re, struct maru_event *out, int timeout_ms)
{
	uint64_t until = timeout_ms < 0 ? UINT64_MAX : ms_now() + (uint64_t)timeout_ms;
	struct timespec ts;
	struct qent *q;
	int rc = 0;

	if (ms_now() > re->looked_ms + STREAMS_MS)
		open_streams(re);
	pthread_mutex_lock(&re->lock);
	while (!re->n && ms_now() < until) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&re->more, &re->lock, &ts);
	}
	if (re->n) {
		q = &re->q[re->head];
		re->head = (re->head + 1) % QCAP;
		re->n--;
		re->seq++;
		note_delivered(re, q->slot, q->e.seq);
		memcpy(out, &q->e, sizeof(*out));
		out->seq = re->seq;
		pthread_cond_signal(&re->room);
		rc = 1;
	}
	pthread_mutex_unlock(&re->lock);
	return rc;
}

/* Each pool: acknowledge its last event delivered up to merged seq. */
int route_events_ack(struct route_events *re, uint64_t seq)
{
	uint64_t p[ROUTE_POOLS] = { 0 };
	struct maru_events *ev[ROUTE_POOLS];
	struct ackring *a;
	unsigned int i;
	int rc = -ENOTCONN;

	pthread_mutex_lock(&re->lock);
	for (i = 0; i < ROUTE_POOLS; i++) {
		a = re->ack[i];
		ev[i] = re->sub[i] ? re->sub[i]->ev : NULL;
		while (a && a->n && a->mseq[a->head] <= seq) {
			p[i] = a->pseq[a->head];
			a->head = (a->head + 1) % ACKCAP;
			a->n--;
		}
	}
	pthread_mutex_unlock(&re->lock);
	for (i = 0; i < ROUTE_POOLS; i++)
		if (ev[i] && p[i] && re->r->ops->events_ack(ev[i], p[i]) == 0)
			rc = 0;
	return rc == -ENOTCONN && seq <= re->seq ? 0 : rc;
}

int route_events_up(struct route_events *re, uint64_t *losses)
{
	unsigned int m[ROUTE_POOLS];
	int n = route_members(re->r, m, ROUTE_POOLS), i, up = n > 0;
	uint64_t sum = 0, l;
	struct rsub *s;

	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&re->lock);
		s = re->sub[m[i]];
		pthread_mutex_unlock(&re->lock);
		if (!s) {
			up = 0;
			continue;
		}
		if (re->r->ops->events_up(s->ev, &l) != 1)
			up = 0;
		sum += l;
	}
	if (losses)
		*losses = sum;
	return up;
}

void route_events_close(struct route_events *re)
{
	unsigned int i;

	pthread_mutex_lock(&re->lock);
	re->stop = 1;
	pthread_cond_broadcast(&re->room);
	pthread_mutex_unlock(&re->lock);
	for (i = 0; i < ROUTE_POOLS; i++) {
		if (!re->sub[i])
			continue;
		pthread_join(re->sub[i]->th, NULL);
		re->r->ops->events_close(re->sub[i]->ev);
		free(re->sub[i]->tmp);
		free(re->sub[i]);
	}
	for (i = 0; i < ROUTE_POOLS; i++)
		free(re->ack[i]);
	pthread_cond_destroy(&re->more);
	pthread_cond_destroy(&re->room);
	pthread_mutex_destroy(&re->lock);
	free(re->q);
	free(re);
}
