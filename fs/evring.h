/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/evring.h: the ring of formatted pool events that .maru/events readers
 * consume (evring.c): the event thread appends, each open of .maru/events is
 * a reader with its own cursor, blocking reads and poll.
 */
#ifndef MARUFS_EVRING_H
#define MARUFS_EVRING_H

#include "mount.h"

struct evring;
struct ev_reader;

int evring_new(struct mfs *m, struct evring **out);
/* Wake every blocked reader for good (shutdown). */
void evring_stop(struct evring *ring);
void evring_free(struct evring *ring);
void evring_append(struct evring *ring, const struct maru_event *e);
/* One event as its .maru/events line ("seq sec.nsec type path\n"). */
int evring_format(const struct maru_event *e, char *line, size_t size);

int ring_reader_open(struct evring *ring, struct ev_reader **out);
void ring_reader_close(struct evring *ring, struct ev_reader *r);
/* Replies: blocks until data; EINTR when interrupted, empty on shutdown. */
void ring_reader_read(struct evring *ring, fuse_req_t req, struct ev_reader *r, size_t size);
void ring_reader_poll(struct evring *ring, fuse_req_t req, struct ev_reader *r,
		      struct fuse_pollhandle *ph);

#endif
