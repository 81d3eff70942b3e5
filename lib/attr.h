/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/attr.h: names and attributes between the public API and the wire
 * (attr.c).
 */
#ifndef MARU_ATTR_H
#define MARU_ATTR_H

#include <stddef.h>

#include "maru/libmaru.h"
#include "proto.h"

/* 0 and the length in *len if name is a valid entry name, else -EINVAL. */
int attr_name_check(const char *name, size_t *len);
/* A request body in buf: the fixed head (hlen bytes), then name's n bytes; its length. */
size_t attr_name_req_pack(void *buf, const void *head, size_t hlen, const char *name,
			  size_t n);
void attr_from_proto(const struct proto_attr *p, struct maru_attr *out);
/*
 * The caller's struct maru_setattr as this library's: what its sa_size
 * says it has (0: all of this layout), the rest zero. -EINVAL for a size
 * too small to hold the mask.
 */
int attr_setattr_in(const struct maru_setattr *in, struct maru_setattr *out);

#endif
