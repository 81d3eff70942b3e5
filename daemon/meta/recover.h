/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/meta/recover.h: warm restart as marud starts: recover the
 * directory from the journal in the pool's metadata area (or start empty
 * when asked to, or on a new pool), then keep the journal (recover.c), and
 * the read-only metadata check of `marud -n`.
 */
#ifndef MARUD_RECOVER_H
#define MARUD_RECOVER_H

#include <stdint.h>
#include <stdio.h>

struct pool;
struct dir;
struct journal;

struct meta_opts {
	int journal;	/* 0: no journal (nothing survives a restart) */
	int fresh;	/* 1: forget what the pool held, start empty */
};

/*
 * Recover d (new, empty, over pl's allocator) from pl's metadata area,
 * checkpoint the result and attach the journal to d: *out, closed with
 * journal_close() after dir_destroy(). With o->journal == 0, *out = NULL.
 */
int meta_start(struct pool *pl, struct dir *d, const struct meta_opts *o,
	       struct journal **out);
/*
 * `marud -n`: read the pool at uri (if it exists) without writing it and
 * say what a start would recover. 0 if nothing is damaged, 1 if records
 * or versions would be lost.
 */
int meta_check(const char *uri, const struct meta_opts *o, FILE *out);

#endif
