/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/dcache.h: what the kernel may cache of names (dcache.c): every
 * (parent, name) handed to it, positive or negative, until its entry timeout
 * passes, so that a lost event or a new pool generation can invalidate all
 * of them; and a per-directory change counter that tells a LOOKUP whether an
 * event for its directory raced it.
 */
#ifndef MARUFS_DCACHE_H
#define MARUFS_DCACHE_H

#include <stddef.h>
#include <stdint.h>

struct dcache;

/* One entry taken out of the table; free() it when done. */
struct dent {
	uint64_t parent;
	uint64_t expiry;	/* CLOCK_MONOTONIC ns */
	struct dent *next;	/* the list dcache_take_all() returns */
	uint32_t hash;		/* of (parent, name), kept for the table */
	char name[];
};

int dcache_new(struct dcache **out);
void dcache_free(struct dcache *dc);
/* Remember a (parent,name) handed to the kernel with its entry timeout (s). */
void dcache_note(struct dcache *dc, uint64_t parent, const char *name, double timeout);
size_t dcache_count(struct dcache *dc);
/* Detach every entry as a list (the caller invalidates and frees them). */
struct dent *dcache_take_all(struct dcache *dc);
/* Per-parent change counter (a slot shared by a few directories). */
uint64_t dcache_dir_seq(struct dcache *dc, uint64_t parent);
void dcache_dir_changed(struct dcache *dc, uint64_t parent);

#endif
