/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/ttlpin.h: the table of TTL pins (user.maru.pin, marufs-design(7)
 * §4.3): which published versions are kept from eviction, until when (a
 * wall-clock deadline in ns, so a restart that replays it does not extend
 * it), their bytes, and the caps (pinned bytes per pool and per tenant, the
 * longest pin). Pure bookkeeping: no lock (the directory's guards it), no
 * clock (callers pass now), no knowledge of versions beyond id, bytes and
 * tenant. Expiry is lazy: ttlpin_expired() hands back pins whose deadline
 * passed, earliest first, O(log n) each and O(1) when none did, so no
 * timer thread is needed; the directory asks before it evicts, before
 * stats and before a pin call.
 */
#ifndef MARUD_TTLPIN_H
#define MARUD_TTLPIN_H

#include <stdint.h>

#include "rbtree.h"

#define TTLPIN_NS	1000000000ull
#define TTLPIN_MAX_TENANTS	256	/* tenants whose pinned bytes are kept */

struct ttlpin {
	struct rb_node by_id, by_until;
	uint64_t id, until_ns, bytes;
	uint64_t tenant;	/* the tenant's root directory id; 0: none (the admin) */
};

struct ttlpin_tenant {
	uint64_t tenant;
	uint64_t bytes, max_bytes;	/* max 0: no cap of its own */
};

struct ttlpins {
	struct rb_root by_id, by_until;
	uint64_t bytes, count;
	uint64_t max_bytes;		/* pool cap; 0: no pin is granted */
	uint32_t max_seconds;		/* longer requests are clamped to it */
	uint64_t expired, refused;	/* counters */
	struct ttlpin_tenant tenants[TTLPIN_MAX_TENANTS];
	uint32_t ntenants;
};

void ttlpin_init(struct ttlpins *t, uint64_t max_bytes, uint32_t max_seconds);
/* Free every pin. */
void ttlpin_fini(struct ttlpins *t);
/*
 * Cap pinned bytes of tenant (not 0); max 0 lifts it. -ENOSPC: table full.
 * A tenant a pin names before its cap was set is counted, with no cap.
 */
int ttlpin_tenant_cap(struct ttlpins *t, uint64_t tenant, uint64_t max_bytes);
struct ttlpin *ttlpin_find(const struct ttlpins *t, uint64_t id);
/*
 * Pin id (bytes, of tenant) until now + seconds (clamped to max_seconds;
 * seconds > 0), or re-pin it (a new deadline; bytes unchanged). -ENOSPC if
 * a new pin would take the pool's or its tenant's pinned bytes over the
 * cap: nothing else changes (no other pin is dropped). -ENOMEM. *until_ns
 * (may be NULL) = the deadline granted.
 */
int ttlpin_set(struct ttlpins *t, uint64_t id, uint64_t bytes, uint64_t tenant,
	       uint64_t now_ns, uint32_t seconds, uint64_t *until_ns);
/*
 * Pin id until the absolute deadline until_ns (a replayed record), with
 * the same caps; -ETIME if it has passed already.
 */
int ttlpin_set_until(struct ttlpins *t, uint64_t id, uint64_t bytes, uint64_t tenant,
		     uint64_t now_ns, uint64_t until_ns);
/* Drop id's pin: 0, or -ENOENT when it had none. */
int ttlpin_clear(struct ttlpins *t, uint64_t id);
/* Whole seconds left of id's pin, rounded up; 0 when it has none (or it ran out). */
uint32_t ttlpin_left(const struct ttlpins *t, uint64_t id, uint64_t now_ns);
/*
 * Take out the earliest pin whose deadline is <= now_ns and return its id
 * (counted as expired), or 0 when none has run out.
 */
uint64_t ttlpin_expired(struct ttlpins *t, uint64_t now_ns);
/* Pinned bytes of tenant (0: none). */
uint64_t ttlpin_tenant_bytes(const struct ttlpins *t, uint64_t tenant);
/* In deadline order; a non-zero return stops the walk and is returned. */
int ttlpin_walk(const struct ttlpins *t, int (*cb)(void *arg, const struct ttlpin *p),
		void *arg);

#endif
