/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/evring.c: the .maru/events ring. The event thread formats every pool
 * event into one text line here; each reader of .maru/events has a cursor
 * into the last RING_LINES lines (a reader that falls further behind skips
 * ahead) and is handed whole lines when its buffer allows. Readers block
 * until a line arrives; poll wake-ups go through the notifier (notify.c),
 * never from here.
 *
 * Lock: ring->lock (lines, cursors, readers); notify.c's queue lock is
 * taken under it (ring->lock -> qlock) to queue poll wake-ups.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "evring.h"
#include "notify.h"

#define RING_LINES	4096
#define READ_TICK_MS	100

struct ev_reader {
	uint64_t cursor;	/* next ring line to hand out */
	size_t partial;		/* bytes of that line already handed out */
	struct fuse_pollhandle *ph;
	struct ev_reader *next, *prev;
};

struct evring {
	struct mfs *m;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *lines[RING_LINES];
	uint64_t head;		/* lines produced so far */
	struct ev_reader *readers;
	int stop;
};

int evring_new(struct mfs *m, struct evring **out)
{
	struct evring *ring = calloc(1, sizeof(*ring));
	int rc;

	if (!ring)
		return -ENOMEM;
	ring->m = m;
	pthread_mutex_init(&ring->lock, NULL);
	rc = cond_init_mono(&ring->cond);
	if (rc < 0) {
		free(ring);
		return rc;
	}
	*out = ring;
	return 0;
}

void evring_stop(struct evring *ring)
{
	if (!ring)
		return;
	pthread_mutex_lock(&ring->lock);
	ring->stop = 1;
	pthread_cond_broadcast(&ring->cond);
	pthread_mutex_unlock(&ring->lock);
}

void evring_free(struct evring *ring)
{
	size_t i;

	if (!ring)
		return;
	for (i = 0; i < RING_LINES; i++)
		free(ring->lines[i]);
	pthread_cond_destroy(&ring->cond);
	pthread_mutex_destroy(&ring->lock);
	free(ring);
}

static const char *event_name(uint32_t type)
{
	switch (type) {
	case MARU_EV_PUBLISH: return "publish";
	case MARU_EV_REPLACE: return "replace";
	case MARU_EV_UNLINK: return "unlink";
	case MARU_EV_EVICT: return "evict";
	case MARU_EV_MKDIR: return "mkdir";
	case MARU_EV_RMDIR: return "rmdir";
	case MARU_EV_RENAME: return "rename";
	case MARU_EV_SETATTR: return "setattr";
	case MARU_EV_SYMLINK: return "symlink";
	case MARU_EV_LINK: return "link";
	case MARU_EV_MKNOD: return "mknod";
	case MARU_EV_OVERFLOW: return "overflow";
	case MARU_EV_GENERATION: return "generation";
	default: return "unknown";
	}
}

int evring_format(const struct maru_event *e, char *line, size_t size)
{
	uint64_t sec = e->time_ns / UINT64_C(1000000000);
	uint64_t nsec = e->time_ns % UINT64_C(1000000000);

	if (e->type == MARU_EV_RENAME)
		return snprintf(line, size, "%" PRIu64 " %" PRIu64 ".%09" PRIu64
				" %s %s -> %s\n", e->seq, sec, nsec, event_name(e->type),
				e->path[0] ? e->path : e->name,
				e->path2[0] ? e->path2 : e->name2);
	return snprintf(line, size, "%" PRIu64 " %" PRIu64 ".%09" PRIu64 " %s %s\n",
			e->seq, sec, nsec, event_name(e->type),
			e->path[0] ? e->path : (e->name[0] ? e->name : "/"));
}

void evring_append(struct evring *ring, const struct maru_event *e)
{
	char line[2 * MARU_PATH_MAX + 128];
	struct ev_reader *r;

	if (evring_format(e, line, sizeof(line)) < 0)
		return;
	pthread_mutex_lock(&ring->lock);
	free(ring->lines[ring->head % RING_LINES]);
	ring->lines[ring->head % RING_LINES] = strdup(line);
	ring->head++;
	for (r = ring->readers; r; r = r->next) {
		if (r->ph) {
			notify_poll(ring->m->nt, r->ph);
			r->ph = NULL;
		}
	}
	pthread_cond_broadcast(&ring->cond);
	pthread_mutex_unlock(&ring->lock);
}

int ring_reader_open(struct evring *ring, struct ev_reader **out)
{
	struct ev_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&ring->lock);
	r->cursor = ring->head;
	r->next = ring->readers;
	if (ring->readers)
		ring->readers->prev = r;
	ring->readers = r;
	pthread_mutex_unlock(&ring->lock);
	*out = r;
	return 0;
}

void ring_reader_close(struct evring *ring, struct ev_reader *r)
{
	pthread_mutex_lock(&ring->lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		ring->readers = r->next;
	if (r->next)
		r->next->prev = r->prev;
	pthread_mutex_unlock(&ring->lock);
	if (r->ph)
		fuse_pollhandle_destroy(r->ph);
	free(r);
}

/* Copy whole lines (the first possibly resumed) into buf; ring->lock held. */
static size_t copy_locked(struct evring *ring, struct ev_reader *r, char *buf, size_t size)
{
	size_t got = 0;

	if (ring->head - r->cursor > RING_LINES) {
		r->cursor = ring->head - RING_LINES;
		r->partial = 0;
	}
	while (r->cursor < ring->head && got < size) {
		const char *line = ring->lines[r->cursor % RING_LINES];
		size_t len = line ? strlen(line) : 0, n;

		if (r->partial >= len) {
			r->cursor++;
			r->partial = 0;
			continue;
		}
		n = len - r->partial;
		if (n > size - got) {
			if (got)
				break;	/* hand out whole lines when we can */
			n = size - got;
		}
		memcpy(buf + got, line + r->partial, n);
		got += n;
		r->partial += n;
		if (r->partial == len) {
			r->cursor++;
			r->partial = 0;
		}
	}
	return got;
}

void ring_reader_read(struct evring *ring, fuse_req_t req, struct ev_reader *r, size_t size)
{
	struct timespec ts;
	char *buf = malloc(size ? size : 1);
	size_t got = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&ring->lock);
	while (!ring->stop && !fuse_session_exited(ring->m->se)) {
		got = copy_locked(ring, r, buf, size);
		if (got)
			break;
		deadline_ms(&ts, READ_TICK_MS);
		pthread_cond_timedwait(&ring->cond, &ring->lock, &ts);
		if (fuse_req_interrupted(req)) {
			pthread_mutex_unlock(&ring->lock);
			free(buf);
			fuse_reply_err(req, EINTR);
			return;
		}
	}
	pthread_mutex_unlock(&ring->lock);
	fuse_reply_buf(req, buf, got);
	free(buf);
}

void ring_reader_poll(struct evring *ring, fuse_req_t req, struct ev_reader *r,
		      struct fuse_pollhandle *ph)
{
	struct fuse_pollhandle *old = NULL;
	unsigned int revents = 0;

	pthread_mutex_lock(&ring->lock);
	if (r->cursor < ring->head || ring->stop) {
		revents = POLLIN | POLLRDNORM;
		old = ph;
	} else if (ph) {
		old = r->ph;
		r->ph = ph;
	}
	pthread_mutex_unlock(&ring->lock);
	if (old)
		fuse_pollhandle_destroy(old);
	fuse_reply_poll(req, revents);
}
