/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/journal_fixture.h: what the warm-restart unit tests
 * (journal_test.c, journal_links_test.c) stand on: a fake pool (a malloc'd
 * buffer: one block, the metadata area, then data) with an allocator, a
 * directory, one session and optionally a journal over it, opened and closed
 * the way a marud start and stop would.
 */
#ifndef TESTS_JOURNAL_FIXTURE_H
#define TESTS_JOURNAL_FIXTURE_H

#include <stdint.h>

#include "alloc.h"
#include "dir.h"
#include "journal.h"
#include "persist.h"

#define BLK	4096ull

struct wfx {
	uint8_t *pool;
	uint64_t meta_len, data_len;
	struct alloc *a;
	struct dir *d;
	struct journal *j;
	struct persist *p;	/* over j, for d; not attached by wopen */
	struct dir_session *s;
	int shared;		/* pool is a MAP_SHARED mapping (wnew_shared) */
};

/* The pool's pin cap of the directories wopen makes (default: no cap). */
extern uint64_t wfx_pin_max_bytes;
/* A directory (and journal and persist, unless journal == 0) over f's pool bytes. */
void wopen(struct wfx *f, int journal);
/* A fresh pool of meta_len + data_len bytes, opened; with a journal, checkpointed. */
void wnew(struct wfx *f, uint64_t meta_len, uint64_t data_len, int journal);
/*
 * wnew over a MAP_SHARED anonymous mapping, as marud's pools are, so the
 * journal checkpoints in the background (a forked child writes the pool).
 * Free with wfree_pool.
 */
void wnew_shared(struct wfx *f, uint64_t meta_len, uint64_t data_len);
void wfree_pool(struct wfx *f);
/* End the session, check the accounting (dir_check), close everything but the pool. */
void wclose(struct wfx *f);
/* Publish c (strlen bytes, written into the pool) as name under parent: its ino. */
uint64_t wfx_put(struct wfx *f, uint64_t parent, const char *name, const char *c);

/*
 * The live state of a directory as the records a checkpoint would hold
 * (the owner table's walk, each item encoded), sorted, so two directories
 * compare equal when a restart would not tell them apart.
 */
struct wfx_dump {
	uint8_t **rec;
	uint32_t *len;
	uint32_t n, cap;
};
void wfx_dump(struct dir *d, struct wfx_dump *out);
void wfx_dump_free(struct wfx_dump *x);
/* assert the two dumps hold the same records */
void wfx_dump_equal(const struct wfx_dump *a, const struct wfx_dump *b);

#endif
