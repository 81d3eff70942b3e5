/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/expo.h: a parsed Prometheus text exposition (format 0.0.4)
 * and the few queries marustat asks of it: the sum of a family's samples
 * (all of them, or those with one label value) and a histogram's
 * cumulative buckets summed over its other labels.
 */
#ifndef MARUSTAT_EXPO_H
#define MARUSTAT_EXPO_H

#include <stddef.h>

struct sample {
	const char *name;
	const char *labels;	/* between the braces, "" when none */
	double value;
};

struct expo {
	char *text;		/* owned; names and labels point into it */
	struct sample *s;
	size_t n, cap;
};

#define EXPO_BUCKETS_MAX 64

struct buckets {
	size_t n;
	double le[EXPO_BUCKETS_MAX];	/* ascending; the last is +Inf */
	double count[EXPO_BUCKETS_MAX];	/* cumulative */
};

/* Takes text (malloc'd, NUL-terminated); 0 or -errno (-EBADMSG: a line is no sample). */
int expo_parse(struct expo *e, char *text);
void expo_free(struct expo *e);
/* Whether any sample of family name exists. */
int expo_has(const struct expo *e, const char *name);
/* Sum of name's samples whose label key is val (key NULL: all); NAN when none match. */
double expo_sum(const struct expo *e, const char *name, const char *key, const char *val);
/* Buckets of histogram base (base_bucket samples), summed by le; 0 or -ENOENT. */
int expo_buckets(const struct expo *e, const char *base, struct buckets *b);
/* The q-quantile of the observations between two bucket sets (as PromQL's
 * histogram_quantile over a rate); NAN when none fell between them. */
double expo_quantile(const struct buckets *then, const struct buckets *now, double q);

#endif
