/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/prom.c: the Prometheus text writer of prom.h. Lines are
 * formatted straight into the buffer, which doubles when one does not fit
 * (a metric's HELP text has no length limit, unlike the fixed line
 * buffers the writers had before).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

#define PROM_MIN_CAP 1024u

void prom_adopt(struct prom *p, char *buf, size_t len, size_t cap)
{
	p->buf = buf;
	p->len = len;
	p->cap = cap;
	p->err = 0;
}

void prom_fini(struct prom *p)
{
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
}

void prom_reset(struct prom *p)
{
	p->len = 0;
	if (p->buf)
		p->buf[0] = '\0';
}

/* Room for `more` bytes and the NUL after them. */
static int grow(struct prom *p, size_t more)
{
	size_t cap = p->cap ? p->cap : PROM_MIN_CAP;
	char *nb;

	if (p->buf && p->len + more < p->cap)
		return 0;
	while (cap <= p->len + more)
		cap *= 2;
	nb = realloc(p->buf, cap);
	if (!nb) {
		p->err = -ENOMEM;
		return p->err;
	}
	p->buf = nb;
	p->cap = cap;
	return 0;
}

static void put(struct prom *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct prom *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err || grow(p, 0))
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(p->buf + p->len, p->cap - p->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			p->buf[p->len] = '\0';
			p->err = -EINVAL;
			return;
		}
		if ((size_t)n < p->cap - p->len) {
			p->len += (size_t)n;
			return;
		}
		p->buf[p->len] = '\0';
		if (grow(p, (size_t)n))
			return;
	}
}

void prom_raw(struct prom *p, const char *text, size_t len)
{
	if (p->err || grow(p, len))
		return;
	memcpy(p->buf + p->len, text, len);
	p->len += len;
	p->buf[p->len] = '\0';
}

void prom_head(struct prom *p, const char *name, const char *type, const char *help)
{
	put(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_sample(struct prom *p, const char *name, const char *labels, uint64_t v)
{
	if (labels)
		put(p, "%s{%s} %" PRIu64 "\n", name, labels, v);
	else
		put(p, "%s %" PRIu64 "\n", name, v);
}

void prom_sample_signed(struct prom *p, const char *name, const char *labels, int64_t v)
{
	if (labels)
		put(p, "%s{%s} %" PRId64 "\n", name, labels, v);
	else
		put(p, "%s %" PRId64 "\n", name, v);
}

/* A label value with \\, " and newline escaped as the format asks. */
static void put_value(struct prom *p, const char *val)
{
	const char *run;

	while (*val) {
		run = val;
		while (*val && *val != '\\' && *val != '"' && *val != '\n')
			val++;
		prom_raw(p, run, (size_t)(val - run));
		if (*val)
			prom_raw(p, *val == '\n' ? "\\n" : *val == '"' ? "\\\"" : "\\\\", 2);
		val += *val != '\0';
	}
}

int prom_label_text(char *dst, size_t cap, const char *key, const char *val)
{
	int n = snprintf(dst, cap, "%s=\"", key);
	size_t o;

	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	for (o = (size_t)n; *val; val++) {
		int esc = *val == '\\' || *val == '"' || *val == '\n';

		/* this character, the closing quote and the NUL */
		if (o + (size_t)esc + 3 > cap)
			return -ENAMETOOLONG;
		if (esc)
			dst[o++] = '\\';
		dst[o++] = *val == '\n' ? 'n' : *val;
	}
	if (o + 2 > cap)
		return -ENAMETOOLONG;
	dst[o++] = '"';
	dst[o] = '\0';
	return 0;
}

void prom_label(struct prom *p, const char *name, const char *key, const char *val,
		uint64_t v)
{
	put(p, "%s{%s=\"", name, key);
	put_value(p, val);
	put(p, "\"} %" PRIu64 "\n", v);
}

void prom_counter(struct prom *p, const char *name, const char *help, uint64_t v)
{
	prom_head(p, name, "counter", help);
	prom_sample(p, name, NULL, v);
}

void prom_gauge(struct prom *p, const char *name, const char *help, uint64_t v)
{
	prom_head(p, name, "gauge", help);
	prom_sample(p, name, NULL, v);
}

void prom_gauge_double(struct prom *p, const char *name, const char *help, double v)
{
	prom_head(p, name, "gauge", help);
	put(p, "%s %.9g\n", name, v);
}

void prom_gauge_signed(struct prom *p, const char *name, const char *help, int64_t v)
{
	prom_head(p, name, "gauge", help);
	prom_sample_signed(p, name, NULL, v);
}

/* One line of an exposition, labels put first in a sample's braces. */
static void relabel_line(struct prom *p, const char *l, size_t n, const char *labels)
{
	size_t name = 0;

	if (!labels || !*labels || n == 0 || l[0] == '#') {
		prom_raw(p, l, n);
		return;
	}
	while (name < n && l[name] != '{' && l[name] != ' ')
		name++;
	prom_raw(p, l, name);
	if (name < n && l[name] == '{') {
		/* an empty set "{}" takes the labels alone */
		put(p, "{%s%s", labels, name + 1 < n && l[name + 1] == '}' ? "" : ",");
		prom_raw(p, l + name + 1, n - name - 1);
	} else {
		put(p, "{%s}", labels);
		prom_raw(p, l + name, n - name);
	}
}

void prom_relabel(struct prom *p, const char *text, size_t len, const char *labels)
{
	const char *end = text + len, *nl;

	while (text < end) {
		nl = memchr(text, '\n', (size_t)(end - text));
		relabel_line(p, text, (size_t)((nl ? nl : end) - text), labels);
		prom_raw(p, "\n", 1);
		text = nl ? nl + 1 : end;
	}
}

void prom_histogram(struct prom *p, const char *name, const char *labels, const double *le,
		    const uint64_t *counts, size_t n, double sum)
{
	const char *sep = labels && *labels ? "," : "";
	uint64_t cum = 0;
	size_t i;

	if (!labels)
		labels = "";
	for (i = 0; i < n; i++) {
		cum += counts[i];
		put(p, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep, le[i], cum);
	}
	cum += counts[n];
	put(p, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cum);
	if (*labels) {
		put(p, "%s_sum{%s} %.9g\n", name, labels, sum);
		put(p, "%s_count{%s} %" PRIu64 "\n", name, labels, cum);
	} else {
		put(p, "%s_sum %.9g\n", name, sum);
		put(p, "%s_count %" PRIu64 "\n", name, cum);
	}
}
