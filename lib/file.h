/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/file.h: what file.c (struct maru_file, I/O, publish) lends to the
 * opening calls of file_open.c: a handle built from an opening reply.
 */
#ifndef MARU_FILE_H
#define MARU_FILE_H

#include "client_priv.h"

/* A handle from the proto_attr+extents reply of an opening call, linked to c. */
int file_new(struct maru_client *c, struct req *r, struct maru_file **out);

#endif
