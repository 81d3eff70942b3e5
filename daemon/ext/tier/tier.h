/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/ext/tier/tier.h: the insides of the reference region extension
 * "tier", a software CXL-SSD: the pool lives in a file on a disk
 * filesystem (marud's file: backend) and the page cache in front of it is
 * the device's DRAM cache, held to a byte budget by the extension. Files:
 * tier.c (the descriptor, config, hooks: queueing only), cache.c (units,
 * residency by mincore(), eviction with write-back), work.c (the workers
 * that bring hinted ranges in, in hint order, and the sweeper that holds
 * the budget). One mutex, t->lock, guards everything below it; no syscall
 * that touches the disk runs under it.
 */
#ifndef MARUD_TIER_H
#define MARUD_TIER_H

#include <pthread.h>
#include <stdint.h>

#include "maru/marud_extension.h"

#define TIER_UNIT	(2u << 20)	/* cache bookkeeping granularity */
#define TIER_MAX_WORKERS 16

/*
 * A unit being evicted is never loaded into (a load waits for the eviction
 * to finish), and a unit being loaded is never evicted: otherwise an
 * eviction that began before a hinted load could drop the freshly loaded
 * pages of a held unit, and the hint would be lost without a trace.
 */
enum unit_state { U_COLD, U_LOADING, U_WARM, U_EVICTING };

struct unit {
	uint8_t state;		/* enum unit_state, as the extension knows it */
	uint16_t loaders;	/* pieces being loaded into it right now */
	uint32_t holds;		/* open read requests that brought it in */
	uint32_t bytes;		/* resident bytes, as last measured or loaded */
	uint64_t used;		/* tick of the last load or hint (LRU) */
};

/* One piece of work: pool bytes [off, off+len) within one unit. */
struct piece {
	uint64_t off, len;
};

/* A hinted request: its pieces in hint order, loaded front to back. */
struct treq {
	struct treq *prev, *next;	/* t->reqs, front first */
	uint64_t conn;
	char id[64];
	int write;			/* a write hint: prepare, no hold */
	struct piece *p;
	uint32_t n, cap, next_piece, inflight;
	uint32_t *held;			/* units this request holds */
	uint32_t nheld, capheld;
	int ended;			/* read_end came while loads ran */
};

struct tier {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a piece to load, or stop */
	pthread_cond_t done;		/* a load finished, or budget freed */
	struct marud_ext_region r;
	int have_region;
	uint64_t budget;		/* bytes the cache may hold */
	unsigned int workers, sweep_ms;
	struct unit *u;
	uint32_t nunits;
	uint64_t tick;
	uint64_t resident;		/* bytes, as of the last sweep + loads */
	struct treq *reqs;		/* front first */
	pthread_t th[TIER_MAX_WORKERS + 1];
	unsigned int nth;
	int stop;
	unsigned char *vec;		/* mincore vector, sweeper only */
	/* counters, under lock */
	uint64_t loaded_bytes, evicted_bytes, written_back, stalls;
};

/* cache.c */
int tier_cache_init(struct tier *t);
void tier_cache_free(struct tier *t);
/* Resident bytes of [off, off+len) by mincore(). */
uint64_t tier_resident(struct tier *t, uint64_t off, uint64_t len);
/* Bring [off, off+len) in (blocking; no lock held). */
int tier_load(struct tier *t, uint64_t off, uint64_t len, int write);
/* Measure residency and evict down to the budget; lock held on entry/exit. */
void tier_hold_budget(struct tier *t);
/* Make room for len more bytes; 0, or -EBUSY when only held units remain. */
int tier_make_room(struct tier *t, uint64_t len);

/* work.c */
int tier_threads_start(struct tier *t);
void tier_threads_stop(struct tier *t);
struct treq *tier_req_find(struct tier *t, uint64_t conn, const char *id);
void tier_req_end(struct tier *t, struct treq *q);

#endif
