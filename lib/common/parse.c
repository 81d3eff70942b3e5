/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/parse.c: strict number and size parsing. Parsers accept exactly
 * the documented forms and nothing around them (no signs, no spaces), because
 * their input comes from config files and mount options where a silently
 * misread value is worse than an error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* Leading decimal digits of s into *out; returns the count, -ERANGE. */
static int parse_digits(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int i;

	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned int d = (unsigned int)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return i;
}

int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* strtoull would accept spaces, a sign and wrap "-1" around */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

/* Binary shift of a unit letter, or -1. */
static int unit_shift(char c)
{
	static const char units[] = "kmgtpe";
	const char *u = c ? strchr(units, c | 0x20) : NULL;

	return u ? 10 * (int)(u - units + 1) : -1;
}

int parse_size(const char *s, uint64_t *out)
{
	uint64_t v;
	int n, shift = 0;

	if (!s)
		return -EINVAL;
	n = parse_digits(s, &v);
	if (n < 0)
		return n;
	if (n == 0)
		return -EINVAL;
	s += n;
	if (unit_shift(*s) > 0) {
		shift = unit_shift(*s++);
		/* "Ki" alone is not a unit: the i must be followed by B */
		if ((*s | 0x20) == 'i' && (*++s | 0x20) != 'b')
			return -EINVAL;
	}
	if ((*s | 0x20) == 'b')
		s++;
	if (*s != '\0')
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}
