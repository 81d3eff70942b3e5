/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/event.c: the event ring of the directory and its waiters.
 * Every namespace change is pushed here (dir_ev_push/dir_ev_node, with d->lock
 * held) with its paths built from the directory tree at that moment;
 * subscribers copy events out with dir_events_wait(), which sleeps on
 * d->cond (CLOCK_MONOTONIC, from cond_init_mono) with a deadline from
 * deadline_ms(). A ring that cannot keep up reads as DEV_OVERFLOW.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "dir_priv.h"

/* Prepend s to the path being built backwards at *pos; 0 when it fit. */
static int path_prepend(char *buf, size_t *pos, const char *s, size_t len)
{
	if (len + 1 > *pos)
		return -1;
	*pos -= len;
	memcpy(buf + *pos, s, len);
	buf[--*pos] = '/';
	return 0;
}

/*
 * "/a/b/name" of name in directory parent, built backwards into buf so an
 * over-long path loses its head, never its name. Returns the start.
 */
static const char *path_build(const struct dir *d, uint64_t parent, const char *name,
			      size_t nlen, char *buf, size_t size)
{
	size_t pos = size - 1;
	const struct node *n;

	buf[pos] = '\0';
	if (nlen && path_prepend(buf, &pos, name, nlen))
		return buf + pos;
	while (parent != DIR_ROOT_ID && (n = dir_id_dir(d, parent)) != NULL) {
		if (path_prepend(buf, &pos, n->name, n->nlen))
			break;
		parent = n->parent;
	}
	if (pos == size - 1)
		buf[--pos] = '/';
	return buf + pos;
}

static struct evrec *ev_slot(struct dir *d)
{
	struct evring *r = &d->ev;
	struct evrec *rec;
	uint32_t ncap;

	if (r->count == r->cap && r->cap < r->max) {
		ncap = r->cap ? r->cap * 2 : 64;
		if (ncap > r->max)
			ncap = r->max;
		rec = realloc(r->rec, (size_t)ncap * sizeof(*rec));
		if (rec) {
			/* Unwrap: the part before head moves after the old end. */
			memcpy(rec + r->cap, rec, (size_t)r->head * sizeof(*rec));
			r->rec = rec;
			r->cap = ncap;
		}
	}
	if (!r->cap)
		return NULL;
	if (r->count == r->cap) {
		free(r->rec[r->head].paths);
		r->head = (r->head + 1) % r->cap;
		r->count--;
	}
	rec = &r->rec[(r->head + r->count) % r->cap];
	r->count++;
	return rec;
}

void dir_ev_push(struct dir *d, uint32_t type, uint64_t ino,
	     const struct evname *a, const struct evname *b)
{
	char b1[PROTO_PATH_MAX], b2[PROTO_PATH_MAX];
	const char *p1, *p2 = "";
	struct evrec *rec;
	size_t l1, l2;

	/* The journal records the same changes, at the same instant (record.c). */
	dir_record_event(d, type, ino, a, b);
	p1 = path_build(d, a->parent, a->name, a->nlen, b1, sizeof(b1));
	if (b)
		p2 = path_build(d, b->parent, b->name, b->nlen, b2, sizeof(b2));
	rec = ev_slot(d);
	if (!rec) {
		/* No ring memory: a gap in seq reads as DEV_OVERFLOW to waiters. */
		d->ev.seq++;
		pthread_cond_broadcast(&d->cond);
		return;
	}
	l1 = strlen(p1);
	l2 = strlen(p2);
	rec->paths = malloc(l1 + l2 + 2);
	if (rec->paths) {
		memcpy(rec->paths, p1, l1 + 1);
		memcpy(rec->paths + l1 + 1, p2, l2 + 1);
	}
	rec->seq = ++d->ev.seq;
	rec->time_ns = now_ns();
	/* Without its paths an event is useless: tell subscribers to drop all. */
	rec->type = rec->paths ? type : DEV_OVERFLOW;
	rec->ino = ino;
	rec->parent = a->parent;
	rec->parent2 = b ? b->parent : 0;
	rec->origin = d->ev_origin;
	pthread_cond_broadcast(&d->cond);
}

void dir_ev_node(struct dir *d, uint32_t type, uint64_t ino, const struct node *n)
{
	struct evname a = { n->parent, n->name, n->nlen };

	dir_ev_push(d, type, ino, &a, NULL);
}

void dir_ev_fini(struct dir *d)
{
	uint32_t k;

	for (k = 0; k < d->ev.count; k++)
		free(d->ev.rec[(d->ev.head + k) % d->ev.cap].paths);
	free(d->ev.rec);
	d->ev.rec = NULL;
	d->ev.count = d->ev.cap = 0;
}

static void copy_path(char *dst, char *name, const char *src)
{
	const char *slash = strrchr(src, '/');
	size_t len = strlen(src);

	if (len >= PROTO_PATH_MAX)
		len = PROTO_PATH_MAX - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	src = slash ? slash + 1 : src;
	len = strlen(src);
	if (len > PROTO_NAME_MAX)
		len = PROTO_NAME_MAX;
	memcpy(name, src, len);
	name[len] = '\0';
}

static void ev_out(const struct evrec *r, struct dir_event *e)
{
	memset(e, 0, offsetof(struct dir_event, name));
	e->seq = r->seq;
	e->time_ns = r->time_ns;
	e->type = r->type;
	e->ino = r->ino;
	e->parent = r->parent;
	e->parent2 = r->parent2;
	e->origin = r->origin;
	e->name[0] = e->name2[0] = e->path[0] = e->path2[0] = '\0';
	if (!r->paths)
		return;
	copy_path(e->path, e->name, r->paths);
	if (r->paths[strlen(r->paths) + 1])
		copy_path(e->path2, e->name2, r->paths + strlen(r->paths) + 1);
}

static int ev_copy(struct dir *d, uint64_t after, struct dir_event *out, int max)
{
	struct evring *r = &d->ev;
	uint64_t oldest = r->seq - r->count + 1, s;
	int n = 0;

	if (after + 1 < oldest) {
		memset(out, 0, sizeof(*out));
		out->seq = oldest - 1;
		out->time_ns = now_ns();
		out->type = DEV_OVERFLOW;
		return 1;
	}
	for (s = after + 1; s <= r->seq && n < max; s++, n++)
		ev_out(&r->rec[(r->head + (s - oldest)) % r->cap], &out[n]);
	return n;
}

int dir_events_wait(struct dir *d, uint64_t after, struct dir_event *out, int max,
		    int timeout_ms)
{
	struct timespec ts;
	uint64_t kick;
	int rc = 0;

	if (max <= 0)
		return -EINVAL;
	deadline_ms(&ts, timeout_ms > 0 ? (unsigned int)timeout_ms : 0);
	pthread_mutex_lock(&d->lock);
	kick = d->ev.kick;
	while (d->ev.seq <= after && d->ev.kick == kick && timeout_ms != 0 && rc == 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&d->cond, &d->lock);
		else
			rc = pthread_cond_timedwait(&d->cond, &d->lock, &ts);
	}
	rc = d->ev.seq > after ? ev_copy(d, after, out, max) : 0;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

uint64_t dir_event_seq(struct dir *d)
{
	uint64_t s;

	pthread_mutex_lock(&d->lock);
	s = d->ev.seq;
	pthread_mutex_unlock(&d->lock);
	return s;
}

void dir_events_gap(struct dir *d)
{
	struct evrec *rec;

	pthread_mutex_lock(&d->lock);
	rec = ev_slot(d);
	if (rec) {
		memset(rec, 0, sizeof(*rec));
		rec->seq = d->ev.seq + 1;
		rec->time_ns = now_ns();
		rec->type = DEV_OVERFLOW;
	}
	/* without a ring the seq alone reads as DEV_OVERFLOW (ev_copy) */
	d->ev.seq++;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void dir_events_kick(struct dir *d)
{
	pthread_mutex_lock(&d->lock);
	d->ev.kick++;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}
