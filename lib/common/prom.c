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

void prom_gauge_signed(struct prom *p, const char *name, const char *help, int64_t v)
{
	prom_head(p, name, "gauge", help);
	prom_sample_signed(p, name, NULL, v);
}
