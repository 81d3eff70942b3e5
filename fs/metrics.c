/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/metrics.c: marufs's own metrics, the Prometheus text .maru/stats shows
 * after marud's: FUSE requests by type, lookups, invalidations, hints,
 * publishes and their failures, and the sizes of the mount's tables. No
 * lock: counters are read with relaxed atomics, gauges through their
 * owners' functions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dcache.h"
#include "hints.h"
#include "inode.h"
#include "metrics.h"
#include "pending.h"
#include "pin.h"

static const char *const op_names[OP_COUNT] = {
	"lookup", "forget", "getattr", "setattr", "mknod", "mkdir", "unlink",
	"rmdir", "rename", "open", "create", "read", "write", "flush", "release",
	"fsync", "opendir", "readdir", "releasedir", "statfs", "setxattr",
	"getxattr", "listxattr", "removexattr", "access", "fallocate", "poll",
	"ioctl", "symlink", "readlink", "link",
};

static const char *const hint_labels[HINT_COUNT] = {
	"read", "read_end", "promote", "write",
};

struct out {
	char **buf;
	size_t *cap, *pos;
	int err;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	char *nb;
	int n;

	while (!o->err) {
		va_start(ap, fmt);
		n = vsnprintf(*o->buf + *o->pos, *o->cap - *o->pos, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->err = -EINVAL;
			return;
		}
		if ((size_t)n < *o->cap - *o->pos) {
			*o->pos += (size_t)n;
			return;
		}
		nb = realloc(*o->buf, *o->cap * 2 + (size_t)n);
		if (!nb) {
			o->err = -ENOMEM;
			return;
		}
		*o->buf = nb;
		*o->cap = *o->cap * 2 + (size_t)n;
	}
}

static uint64_t cnt(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void one(struct out *o, const char *type, const char *name, const char *help,
		uint64_t val)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type, name,
	    val);
}

static void labelled(struct out *o, const struct counters *c)
{
	int i;

	put(o, "# HELP marufs_fuse_ops_total FUSE requests handled, by type.\n"
	    "# TYPE marufs_fuse_ops_total counter\n");
	for (i = 0; i < OP_COUNT; i++)
		put(o, "marufs_fuse_ops_total{op=\"%s\"} %" PRIu64 "\n", op_names[i],
		    cnt(&c->ops[i]));
	put(o, "# HELP marufs_lookups_total Lookups answered, by result.\n"
	    "# TYPE marufs_lookups_total counter\n"
	    "marufs_lookups_total{result=\"positive\"} %" PRIu64 "\n"
	    "marufs_lookups_total{result=\"negative\"} %" PRIu64 "\n",
	    cnt(&c->lookup_pos), cnt(&c->lookup_neg));
	put(o, "# HELP marufs_invalidations_total Kernel cache invalidations sent.\n"
	    "# TYPE marufs_invalidations_total counter\n"
	    "marufs_invalidations_total{kind=\"entry\"} %" PRIu64 "\n"
	    "marufs_invalidations_total{kind=\"inode\"} %" PRIu64 "\n",
	    cnt(&c->inval_entry), cnt(&c->inval_inode));
	one(o, "counter", "marufs_cache_stores_total",
	    "Writes of small new files put into the kernel's page cache by marufs.",
	    cnt(&c->cache_stores));
	one(o, "counter", "marufs_dir_attr_hits_total",
	    "Directory GETATTRs answered from what a publish or GETATTR reply said.",
	    cnt(&c->dir_attr_hits));
	put(o, "# HELP marufs_hints_total user.maru.hint values accepted.\n"
	    "# TYPE marufs_hints_total counter\n");
	for (i = 0; i < HINT_COUNT; i++)
		put(o, "marufs_hints_total{hint=\"%s\"} %" PRIu64 "\n", hint_labels[i],
		    cnt(&c->hints[i]));
}

/* The hint queue: every hint queued ends sent, dropped, or not taken. */
static void hint_lines(struct out *o, const struct metrics_gauges *g)
{
	put(o, "# HELP marufs_hint_queue_total Hints by what became of them.\n"
	    "# TYPE marufs_hint_queue_total counter\n"
	    "marufs_hint_queue_total{result=\"queued\"} %" PRIu64 "\n"
	    "marufs_hint_queue_total{result=\"sent\"} %" PRIu64 "\n"
	    "marufs_hint_queue_total{result=\"dropped\"} %" PRIu64 "\n"
	    "marufs_hint_queue_total{result=\"unsupported\"} %" PRIu64 "\n"
	    "marufs_hint_queue_total{result=\"refused\"} %" PRIu64 "\n"
	    "marufs_hint_queue_total{result=\"failed\"} %" PRIu64 "\n",
	    g->hq_queued, g->hq_sent, g->hq_dropped, g->hq_unsupported, g->hq_refused,
	    g->hq_failed);
	one(o, "counter", "marufs_lookup_hints_total",
	    "File names whose first lookup became a read hint.", g->lookup_hints);
	one(o, "counter", "marufs_lookup_hint_batches_total",
	    "Read hints sent for lookups (one per directory and window).",
	    g->lookup_batches);
}

int metrics_append(const struct counters *c, const struct metrics_gauges *g, char **buf,
		   size_t *cap, size_t *pos)
{
	struct out o = { buf, cap, pos, 0 };

	labelled(&o, c);
	one(&o, "counter", "marufs_publishes_total", "Versions published by this mount.",
	    cnt(&c->publishes));
	one(&o, "counter", "marufs_publish_failures_total", "Publishes refused by marud.",
	    cnt(&c->publish_failures));
	one(&o, "counter", "marufs_abandons_total",
	    "Pending versions abandoned (failed, unlinked or untouched).", cnt(&c->abandons));
	one(&o, "counter", "marufs_cow_rewrites_total",
	    "Writes after publish that started a new version.", cnt(&c->cow_rewrites));
	one(&o, "counter", "marufs_stale_opens_total",
	    "Opens of a version gone since the kernel looked its name up (ESTALE, the VFS looks again).",
	    cnt(&c->stale_opens));
	one(&o, "counter", "marufs_events_total", "Pool events received.", cnt(&c->events));
	one(&o, "counter", "marufs_events_current_total",
	    "Publish events of a version the kernel already had under its name (nothing invalidated).",
	    cnt(&c->events_current));
	one(&o, "counter", "marufs_events_own_total",
	    "Events of this mount's own publishes (marud says so): no other mount waits for their ack.",
	    cnt(&c->events_own));
	one(&o, "counter", "marufs_event_waits_total",
	    "Changes of this mount whose pool event it waited for before replying.",
	    cnt(&c->event_waits));
	one(&o, "counter", "marufs_event_wait_timeouts_total",
	    "Waits for the pool event of this mount's own change that timed out.",
	    cnt(&c->event_wait_timeouts));
	one(&o, "counter", "marufs_generation_changes_total",
	    "marud generation changes applied (cached names and pages dropped).",
	    cnt(&c->generations));
	one(&o, "gauge", "marufs_inodes", "Inodes the kernel holds.", g->inodes);
	one(&o, "gauge", "marufs_pending_files", "Pending versions this mount writes.",
	    g->pendings);
	one(&o, "gauge", "marufs_leases_kept",
	    "Leases of small files closed lately, kept for their next open.", g->leases_kept);
	one(&o, "counter", "marufs_lease_cache_hits_total",
	    "Opens served by a kept lease (no OPEN to marud).", cnt(&c->lease_cache_hits));
	one(&o, "gauge", "marufs_lookup_pins",
	    "Leases taken at a lookup after a stale open, not yet opened.", g->pins);
	one(&o, "gauge", "marufs_cached_entries",
	    "Names (positive and negative) handed to the kernel cache.", g->dentries);
	hint_lines(&o, g);
	return o.err;
}

void metrics_gauges(struct mfs *m, struct metrics_gauges *g)
{
	struct hint_counters h = { 0 };

	if (m->hq)
		hintq_counters(m->hq, &h);
	g->hq_queued = h.queued;
	g->hq_sent = h.sent;
	g->hq_dropped = h.dropped;
	g->hq_unsupported = h.unsupported;
	g->hq_refused = h.refused;
	g->hq_failed = h.failed;
	g->lookup_hints = h.lookup_hints;
	g->lookup_batches = h.lookup_batches;
	g->inodes = itab_count(m->tab);
	g->pendings = pend_count(m);
	g->pins = pin_count(m->pins);
	g->leases_kept = maru_lease_cache_count(m->lc);
	g->dentries = dcache_count(m->dc);
}
