/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/prom.h: the one writer of Prometheus text (exposition format
 * 0.0.4) for marud, libmaru and marufs: a metric family's HELP and TYPE
 * lines, then its samples, each optionally labelled, into a buffer that
 * grows. Every writer of the tree used to print these lines itself.
 *
 *   struct prom p = PROM_INIT;
 *   prom_counter(&p, "marud_publishes_total", "Versions published.", n);
 *   prom_head(&p, "marud_ops_total", "counter", "Requests handled, by op.");
 *   prom_label(&p, "marud_ops_total", "op", "read", reads);
 *   ... use p.buf / p.len (NUL-terminated), then prom_fini(&p).
 *
 * Errors stick: after the first failure (-ENOMEM, or -EINVAL from
 * vsnprintf) every call does nothing, and p.err says so; what was written
 * before stays. Not thread-safe: one writer per buffer.
 */
#ifndef MARU_PROM_H
#define MARU_PROM_H

#include <stddef.h>
#include <stdint.h>

struct prom {
	char *buf;		/* malloc()ed, NUL-terminated when non-NULL */
	size_t len, cap;	/* text bytes; bytes allocated */
	int err;		/* 0 or the first -errno */
};

#define PROM_INIT { NULL, 0, 0, 0 }

/*
 * Continue a buffer the caller already has (buf from malloc(), len bytes
 * of text, cap allocated; buf may be NULL with len = cap = 0). The writer
 * reallocates it as it grows: read back p->buf, p->len and p->cap after.
 */
void prom_adopt(struct prom *p, char *buf, size_t len, size_t cap);
void prom_fini(struct prom *p);
/* Forget the text, keep the memory (a buffer reused once flushed). */
void prom_reset(struct prom *p);

/* A family's "# HELP name help" and "# TYPE name type" lines. */
void prom_head(struct prom *p, const char *name, const char *type, const char *help);
/* One sample "name{labels} v"; labels is the text between the braces or NULL. */
void prom_sample(struct prom *p, const char *name, const char *labels, uint64_t v);
void prom_sample_signed(struct prom *p, const char *name, const char *labels, int64_t v);
/* One sample with one label: name{key="val"} v (val escaped). */
void prom_label(struct prom *p, const char *name, const char *key, const char *val,
		uint64_t v);
/*
 * The label text key="val" (val escaped) into dst, for prom_sample()'s
 * labels; -ENAMETOOLONG when it does not fit in cap bytes (NUL included).
 */
int prom_label_text(char *dst, size_t cap, const char *key, const char *val);
/* A family of one unlabelled sample: head and value. */
void prom_counter(struct prom *p, const char *name, const char *help, uint64_t v);
void prom_gauge(struct prom *p, const char *name, const char *help, uint64_t v);
void prom_gauge_signed(struct prom *p, const char *name, const char *help, int64_t v);
/* A gauge in a base unit that is not whole (seconds): "%.9g". */
void prom_gauge_double(struct prom *p, const char *name, const char *help, double v);
/* Text as it is (another exposition, relayed). */
void prom_raw(struct prom *p, const char *text, size_t len);
/*
 * Text as it is but with labels ("pool=\"x\"", NULL: none) put first in
 * every sample line: `name v` -> `name{labels} v`, `name{a="b"} v` ->
 * `name{labels,a="b"} v`; comment and blank lines unchanged. What the
 * HTTP endpoints serve: the text of .maru/stats, each sample labelled.
 */
void prom_relabel(struct prom *p, const char *text, size_t len, const char *labels);
/*
 * One histogram's samples (a family's head written before): name_bucket
 * for each upper bound le[i] (seconds) with the cumulative count of
 * counts[0..i], the +Inf bucket (count), name_sum (seconds) and
 * name_count. counts has n + 1 entries, the last for beyond le[n - 1].
 * labels as prom_sample()'s, le added after them.
 */
void prom_histogram(struct prom *p, const char *name, const char *labels, const double *le,
		    const uint64_t *counts, size_t n, double sum);

#endif
