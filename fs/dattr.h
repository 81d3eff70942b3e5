/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/dattr.h: attributes of directories that marufs answers GETATTR with
 * itself (dattr.c). With default_permissions the kernel drops a
 * directory's attributes at every create in it and asks for them again
 * before the next lookup there; a loop of creates asked marud each time.
 *
 * An entry comes from a publish's reply (marud sends the directory as the
 * publish left it) or from marud's answer to a GETATTR, and is served
 * until attr_timeout passes unless the directory changed since the request
 * that produced it was sent. Each slot has a generation: the caller takes
 * dattr_gen() before it sends the request and dattr_put() stores the
 * answer only if the generation is still that. The event thread bumps it
 * for every change in or of a directory except this mount's own publishes
 * (whose replies carry the result); this mount bumps it after each of its
 * other changes of a directory returns, before the kernel learns of it.
 * Nothing is kept while the event stream is down.
 */
#ifndef MARUFS_DATTR_H
#define MARUFS_DATTR_H

#include <stdint.h>

#include <maru/libmaru.h>

struct dattr;

/* ttl_s: how long an entry is served (the mount's attr_timeout). */
int dattr_new(double ttl_s, struct dattr **out);
void dattr_free(struct dattr *da);
/* The generation of dir's slot: take it before sending the request. */
uint64_t dattr_gen(struct dattr *da, uint64_t dir);
/*
 * Keep a (a directory's attributes) if its slot's generation is still gen
 * and a is not older (by ctime) than what the slot holds for it.
 */
void dattr_put(struct dattr *da, const struct maru_attr *a, uint64_t gen);
/* 0 and *a if dir's attributes are here and fresh, else -ENOENT. */
int dattr_get(struct dattr *da, uint64_t dir, struct maru_attr *a);
/* dir changed (or may have): drop what is kept, refuse older answers. */
void dattr_changed(struct dattr *da, uint64_t dir);
/*
 * The event stream is up (1: events from now on tell every change; what
 * is kept from before may be stale) or down (0: nothing is kept or served
 * until it is up again). Down at first.
 */
void dattr_stream(struct dattr *da, int up);

#endif
