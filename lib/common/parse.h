/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/common/parse.h: strict decimal and size parsing for options and config. */
#ifndef MARU_PARSE_H
#define MARU_PARSE_H

#include <stdint.h>

/* "64M", "2G", "4096", "1T" -> bytes. -EINVAL on garbage or overflow. */
int parse_size(const char *s, uint64_t *out);
/* Decimal unsigned with range check; -EINVAL/-ERANGE. */
int parse_u64(const char *s, uint64_t *out);

#endif
