/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/expo.c: the Prometheus text parser and queries of expo.h.
 * The text is cut in place (names, label sets and values end with a NUL),
 * so a parse costs one array of samples; HELP and TYPE lines are skipped,
 * a line that is no sample fails the whole text (-EBADMSG) rather than
 * giving numbers from half of it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expo.h"

static int push(struct expo *e, const char *name, const char *labels, double v)
{
	struct sample *ns;

	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 256;

		ns = realloc(e->s, cap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		e->s = ns;
		e->cap = cap;
	}
	e->s[e->n].name = name;
	e->s[e->n].labels = labels;
	e->s[e->n].value = v;
	e->n++;
	return 0;
}

/* The end of a label set starting after '{': the '}' outside quotes. */
static char *labels_end(char *p)
{
	int quoted = 0;

	for (; *p; p++) {
		if (quoted && *p == '\\' && p[1])
			p++;
		else if (*p == '"')
			quoted = !quoted;
		else if (!quoted && *p == '}')
			return p;
	}
	return NULL;
}

static int parse_line(struct expo *e, char *line)
{
	char *p = line, *labels = "", *end;
	double v;

	while (*p && *p != '{' && *p != ' ' && *p != '\t')
		p++;
	if (p == line)
		return -EBADMSG;
	if (*p == '{') {
		*p++ = '\0';
		labels = p;
		p = labels_end(p);
		if (!p)
			return -EBADMSG;
		*p++ = '\0';
	} else {
		*p++ = '\0';
	}
	while (*p == ' ' || *p == '\t')
		p++;
	v = strtod(p, &end);
	if (end == p || (*end && *end != ' ' && *end != '\t'))
		return -EBADMSG;
	return push(e, line, labels, v);
}

int expo_parse(struct expo *e, char *text)
{
	char *line = text, *nl;
	int rc;

	memset(e, 0, sizeof(*e));
	e->text = text;
	for (; *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		else
			nl = line + strlen(line);
		if (*line == '\0' || *line == '#')
			continue;
		rc = parse_line(e, line);
		if (rc)
			return rc;
	}
	return 0;
}

void expo_free(struct expo *e)
{
	free(e->s);
	free(e->text);
	memset(e, 0, sizeof(*e));
}

/* Whether labels has key="val" (escapes compared as written: the values
 * marustat asks for have none). */
static int label_is(const char *labels, const char *key, const char *val)
{
	size_t kl = strlen(key), vl = strlen(val);
	const char *p = labels;

	while (*p) {
		while (*p == ',' || *p == ' ')
			p++;
		if (!strncmp(p, key, kl) && p[kl] == '=' && p[kl + 1] == '"')
			return !strncmp(p + kl + 2, val, vl) && p[kl + 2 + vl] == '"';
		p = strchr(p, '"');	/* skip this pair's value */
		if (!p)
			return 0;
		for (p++; *p && *p != '"'; p++)
			if (*p == '\\' && p[1])
				p++;
		if (*p)
			p++;
	}
	return 0;
}

/* The value of label key copied to out; 0 or -ENOENT. */
static int label_get(const char *labels, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key), i = 0;
	const char *p = labels;

	while ((p = strstr(p, key))) {
		if ((p == labels || p[-1] == ',' || p[-1] == ' ') && p[kl] == '=' && p[kl + 1] == '"') {
			for (p += kl + 2; *p && *p != '"' && i + 1 < len; p++)
				out[i++] = *p;
			out[i] = '\0';
			return 0;
		}
		p += kl;
	}
	return -ENOENT;
}

int expo_has(const struct expo *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (!strcmp(e->s[i].name, name))
			return 1;
	return 0;
}

double expo_sum(const struct expo *e, const char *name, const char *key, const char *val)
{
	double sum = 0;
	int found = 0;
	size_t i;

	for (i = 0; i < e->n; i++) {
		if (strcmp(e->s[i].name, name))
			continue;
		if (key && !label_is(e->s[i].labels, key, val))
			continue;
		sum += e->s[i].value;
		found = 1;
	}
	return found ? sum : NAN;
}

static void bucket_add(struct buckets *b, double le, double v)
{
	size_t i;

	for (i = 0; i < b->n && b->le[i] < le; i++)
		;
	if (i < b->n && b->le[i] == le) {
		b->count[i] += v;
		return;
	}
	if (b->n == EXPO_BUCKETS_MAX)
		return;
	memmove(&b->le[i + 1], &b->le[i], (b->n - i) * sizeof(b->le[0]));
	memmove(&b->count[i + 1], &b->count[i], (b->n - i) * sizeof(b->count[0]));
	b->le[i] = le;
	b->count[i] = v;
	b->n++;
}

int expo_buckets(const struct expo *e, const char *base, struct buckets *b)
{
	char name[256], le[64];
	size_t i;

	memset(b, 0, sizeof(*b));
	if ((size_t)snprintf(name, sizeof(name), "%s_bucket", base) >= sizeof(name))
		return -ENAMETOOLONG;
	for (i = 0; i < e->n; i++) {
		if (strcmp(e->s[i].name, name) || label_get(e->s[i].labels, "le", le, sizeof(le)))
			continue;
		bucket_add(b, strtod(le, NULL), e->s[i].value);
	}
	return b->n && isinf(b->le[b->n - 1]) ? 0 : -ENOENT;
}

static double count_at(const struct buckets *b, double le)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->le[i] == le)
			return b->count[i];
	return 0;
}

double expo_quantile(const struct buckets *then, const struct buckets *now, double q)
{
	double total, rank, prev_le = 0, prev_cnt = 0, cnt;
	size_t i;

	if (!now->n)
		return NAN;
	total = now->count[now->n - 1] - count_at(then, now->le[now->n - 1]);
	if (total <= 0)
		return NAN;
	rank = q * total;
	for (i = 0; i < now->n; i++) {
		cnt = now->count[i] - count_at(then, now->le[i]);
		if (cnt >= rank) {
			if (isinf(now->le[i]))
				return prev_le;	/* above the highest bound: its bound */
			if (cnt == prev_cnt)
				return now->le[i];
			return prev_le + (now->le[i] - prev_le) * (rank - prev_cnt) / (cnt - prev_cnt);
		}
		prev_le = now->le[i];
		prev_cnt = cnt;
	}
	return prev_le;
}
