/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/recover.h: warm restart as marud starts. The server calls
 * persist_start once its directory exists and before it serves: it
 * recovers the directory from the journal in the pool's metadata area (or
 * starts empty when asked to, or on a new pool), checkpoints the result
 * and hands back the struct persist the server then gives the directory
 * (dir_set_persist). persist_check is the read-only metadata check of
 * `marud -n`. The directory is reached only through the owner table the
 * caller passes (persist.h), never by name.
 */
#ifndef MARUD_RECOVER_H
#define MARUD_RECOVER_H

#include <stdint.h>
#include <stdio.h>

#include "persist.h"

struct pool;

struct persist_start_opts {
	int journal;	/* 0: no journal (nothing survives a restart) */
	int fresh;	/* 1: forget what the pool held, start empty */
};

/*
 * Recover the new, empty directory own names (over pl's allocator) from
 * pl's metadata area and checkpoint the result: *out, freed with
 * persist_close() after the directory is destroyed. With o->journal == 0,
 * *out = NULL.
 */
int persist_start(struct pool *pl, const struct persist_owner *own,
		  const struct persist_start_opts *o, struct persist **out);
/* persist_free, and close the journal persist_start opened. NULL is fine. */
void persist_close(struct persist *p);

/*
 * A scratch directory for persist_check, made by the caller over an
 * allocator of the pool's data area: open fills *own; check runs its
 * accounting check (0 or -errno); close frees it.
 */
struct persist_scratch {
	int (*scratch_open)(uint64_t data_off, uint64_t data_len, uint64_t align,
			    struct persist_owner *own, void **h);
	int (*scratch_check)(void *h);
	void (*scratch_close)(void *h);
};

/*
 * `marud -n`: read the pool at uri (if it exists) without writing it and
 * say what a start would recover, restoring into a scratch directory. 0
 * if nothing is damaged, 1 if records or versions would be lost.
 */
int persist_check(const char *uri, const struct persist_start_opts *o,
		  const struct persist_scratch *sc, FILE *out);

#endif
