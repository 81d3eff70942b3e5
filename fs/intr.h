/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/intr.h: a FUSE INTERRUPT ends the libmaru call its request's thread is
 * in (intr.c). ops.c calls intr_begin() as each request starts.
 */
#ifndef MARUFS_INTR_H
#define MARUFS_INTR_H

#include "mount.h"

/*
 * A write interrupted earlier than this after it began is given the rest
 * of it: a write cut in two fails its version (pendio.c), and a signal to
 * a healthy writer must not do that; one stuck on the network ends then.
 */
#define INTR_WRITE_GRACE_MS	200

/*
 * req starts on this thread: its libmaru calls end with EINTR when the
 * kernel interrupts it (op: its kind, enum op_type). Requests FUSE never
 * interrupts (FORGET, RELEASE, RELEASEDIR) only clear what a request
 * before left.
 */
void intr_begin(fuse_req_t req, int op);

#endif
