/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pin.h: versions held at LOOKUP for the VFS's retry after a stale open
 * (pin.c).
 */
#ifndef MARUFS_PIN_H
#define MARUFS_PIN_H

#include <stdint.h>

#include <maru/libmaru.h>

struct pins;
struct pending;

int pins_new(struct pins **out);
/* Drops what is still pinned: before the client and the tables go. */
void pins_free(struct pins *t);
/* An open of (parent, name) was stale: pin what its next LOOKUP finds. */
void pin_want(struct pins *t, uint64_t parent, const char *name);
/* Was (parent, name) wanted? Consumes the want. */
int pin_wanted(struct pins *t, uint64_t parent, const char *name);
/* f: a lease; or p: a pending with a reader attached and a ref (both go to
 * the pin). pin_take: 1 when there was a pin for ino, now the caller's. */
void pin_put(struct pins *t, uint64_t ino, struct maru_file *f, struct pending *p);
int pin_take(struct pins *t, uint64_t ino, struct maru_file **f, struct pending **p);
void pin_expire(struct pins *t);
void pin_drop_all(struct pins *t);
unsigned int pin_count(struct pins *t);

#endif
