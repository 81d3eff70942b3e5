/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/splice.h: a lease's bytes as a (descriptor, offset) source for
 * splice (splice.c, maru_file_splice_src()).
 */
#ifndef MARU_SPLICE_H
#define MARU_SPLICE_H

struct maru_client;

/* The client's splice source (no descriptor yet): 0 or -ENOMEM. */
int splice_src_new(struct maru_client *c);
/* Close the client's splice descriptor: when the client goes. */
void splice_src_free(struct maru_client *c);

#endif
