/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/metrics.c: marufs's own metrics, the Prometheus text .maru/stats shows
 * after marud's: FUSE requests by type, lookups, invalidations, hints,
 * publishes and their failures, and the sizes of the mount's tables. No
 * lock: counters are read with relaxed atomics, gauges through their
 * owners' functions.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "dcache.h"
#include "hints.h"
#include "hist.h"
#include "httpd.h"
#include "inode.h"
#include "metrics.h"
#include "pending.h"
#include "pin.h"
#include "prom.h"

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

static uint64_t cnt(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void labelled(struct prom *o, const struct counters *c)
{
	int i;

	prom_head(o, "marufs_fuse_ops_total", "counter", "FUSE requests handled, by type.");
	for (i = 0; i < OP_COUNT; i++)
		prom_label(o, "marufs_fuse_ops_total", "op", op_names[i], cnt(&c->ops[i]));
	prom_head(o, "marufs_lookups_total", "counter", "Lookups answered, by result.");
	prom_label(o, "marufs_lookups_total", "result", "positive", cnt(&c->lookup_pos));
	prom_label(o, "marufs_lookups_total", "result", "negative", cnt(&c->lookup_neg));
	prom_head(o, "marufs_invalidations_total", "counter",
		  "Kernel cache invalidations sent.");
	prom_label(o, "marufs_invalidations_total", "kind", "entry", cnt(&c->inval_entry));
	prom_label(o, "marufs_invalidations_total", "kind", "inode", cnt(&c->inval_inode));
	prom_counter(o, "marufs_cache_stores_total",
		     "Writes of small new files put into the kernel's page cache by marufs.",
		     cnt(&c->cache_stores));
	prom_counter(o, "marufs_dir_attr_hits_total",
		     "Directory GETATTRs answered from what a publish or GETATTR reply said.",
		     cnt(&c->dir_attr_hits));
	prom_head(o, "marufs_hints_total", "counter", "user.maru.hint values accepted.");
	for (i = 0; i < HINT_COUNT; i++)
		prom_label(o, "marufs_hints_total", "hint", hint_labels[i], cnt(&c->hints[i]));
}

/* The hint queue: every hint queued ends sent, dropped, or not taken. */
static void hint_lines(struct prom *o, const struct metrics_gauges *g)
{
	static const char *const results[] = {
		"queued", "sent", "dropped", "unsupported", "refused", "failed",
	};
	const uint64_t v[] = {
		g->hq_queued, g->hq_sent, g->hq_dropped, g->hq_unsupported, g->hq_refused,
		g->hq_failed,
	};
	size_t i;

	prom_head(o, "marufs_hint_queue_total", "counter", "Hints by what became of them.");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		prom_label(o, "marufs_hint_queue_total", "result", results[i], v[i]);
	prom_counter(o, "marufs_lookup_hints_total",
		     "File names whose first lookup became a read hint.", g->lookup_hints);
	prom_counter(o, "marufs_lookup_hint_batches_total",
		     "Read hints sent for lookups (one per directory and window).",
		     g->lookup_batches);
}

/* The histograms: each FUSE op from its first request on; publish-to-visible. */
static void latencies(struct prom *o, const struct counters *c)
{
	int i;

	prom_head(o, "marufs_fuse_request_duration_seconds", "histogram",
		  "Time marufs took to answer a FUSE request, by type.");
	for (i = 0; i < OP_COUNT; i++)
		if (!hist_empty(&c->lat[i]))
			hist_put_label(o, "marufs_fuse_request_duration_seconds", "op", op_names[i],
				       &c->lat[i]);
	prom_head(o, "marufs_publish_visible_seconds", "histogram",
		  "From another mount's publish (marud's clock) to its event here, "
		  "where the name is invalidated.");
	hist_put(o, "marufs_publish_visible_seconds", NULL, &c->publish_visible);
}

int metrics_append(const struct counters *c, const struct metrics_gauges *g, char **buf,
		   size_t *cap, size_t *pos)
{
	struct prom o;

	prom_adopt(&o, *buf, *pos, *cap);
	labelled(&o, c);
	prom_counter(&o, "marufs_publishes_total", "Versions published by this mount.",
		     cnt(&c->publishes));
	prom_counter(&o, "marufs_publish_failures_total", "Publishes refused by marud.",
		     cnt(&c->publish_failures));
	prom_counter(&o, "marufs_abandons_total",
		     "Pending versions abandoned (failed, unlinked or untouched).", cnt(&c->abandons));
	prom_counter(&o, "marufs_cow_rewrites_total",
		     "Writes after publish that started a new version.", cnt(&c->cow_rewrites));
	prom_counter(&o, "marufs_stale_opens_total",
		     "Opens of a version gone since the kernel looked its name up (ESTALE, the VFS looks again).",
		     cnt(&c->stale_opens));
	prom_counter(&o, "marufs_events_total", "Pool events received.", cnt(&c->events));
	prom_counter(&o, "marufs_events_current_total",
		     "Publish events of a version the kernel already had under its name (nothing invalidated).",
		     cnt(&c->events_current));
	prom_counter(&o, "marufs_events_own_total",
		     "Events of this mount's own publishes (marud says so): no other mount waits for their ack.",
		     cnt(&c->events_own));
	prom_counter(&o, "marufs_event_waits_total",
		     "Changes of this mount whose pool event it waited for before replying.",
		     cnt(&c->event_waits));
	prom_counter(&o, "marufs_event_wait_timeouts_total",
		     "Waits for the pool event of this mount's own change that timed out.",
		     cnt(&c->event_wait_timeouts));
	prom_counter(&o, "marufs_generation_changes_total",
		     "marud generation changes applied (cached names and pages dropped).",
		     cnt(&c->generations));
	prom_gauge(&o, "marufs_inodes", "Inodes the kernel holds.", g->inodes);
	prom_gauge(&o, "marufs_pending_files", "Pending versions this mount writes.",
		   g->pendings);
	prom_gauge(&o, "marufs_leases_kept",
		   "Leases of small files closed lately, kept for their next open.", g->leases_kept);
	prom_counter(&o, "marufs_lease_cache_hits_total",
		     "Opens served by a kept lease (no OPEN to marud).", cnt(&c->lease_cache_hits));
	prom_gauge(&o, "marufs_lookup_pins",
		   "Leases taken at a lookup after a stale open, not yet opened.", g->pins);
	prom_gauge(&o, "marufs_cached_entries",
		   "Names (positive and negative) handed to the kernel cache.", g->dentries);
	hint_lines(&o, g);
	latencies(&o, c);
	*buf = o.buf;
	*pos = o.len;
	*cap = o.cap;
	return o.err;
}

int metrics_text(struct mfs *m, char **out, size_t *len)
{
	struct metrics_gauges g;
	size_t cap = 131072, pos;	/* the text with its histograms: ~100 KiB */
	char *buf;
	ssize_t n;

	*out = NULL;
	*len = 0;
	for (;;) {
		buf = malloc(cap);
		if (!buf)
			return -ENOMEM;
		n = maru_stats_text(m->c, buf, cap);
		if (n < 0) {
			/* marud unreachable: still show marufs's own counters */
			n = 0;
			buf[0] = '\0';
		}
		if ((size_t)n < cap)
			break;
		free(buf);
		cap = (size_t)n + 1;
	}
	pos = (size_t)n;
	metrics_gauges(m, &g);
	n = metrics_append(&m->cnt, &g, &buf, &cap, &pos);
	*out = buf;
	*len = pos;
	return (int)n;
}

static int http_text(void *arg, struct prom *out)
{
	char *buf;
	size_t len;
	int rc = metrics_text(arg, &buf, &len);

	if (buf)
		prom_raw(out, buf, len);
	free(buf);
	return rc;
}

int metrics_serve(struct mfs *m)
{
	char labels[2 * MARU_PATH_MAX + 16];
	struct httpd_opts o = {
		.listen = m->o.metrics,
		.allow_remote = m->o.metrics_remote,
		.text = http_text,
		.arg = m,
	};
	int rc;

	if (!m->o.metrics)
		return 0;
	rc = prom_label_text(labels, sizeof(labels), "pool", m->info.path);
	if (rc)
		return rc;
	o.labels = labels;
	return httpd_start(&o, &m->http);
}

void metrics_unserve(struct mfs *m)
{
	httpd_stop(m->http);
	m->http = NULL;
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
