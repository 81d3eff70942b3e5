/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/intr.h: a FUSE INTERRUPT ends the libmaru call its request's thread is
 * in (intr.c). ops.c calls intr_begin() as each request starts.
 */
#ifndef MARUFS_INTR_H
#define MARUFS_INTR_H

#include "mount.h"

/*
 * A request that changes something (a write, the publish at a flush, a
 * create, a rename...) interrupted earlier than this after it began is
 * given the rest of it: cut in two, a write fails its version (pendio.c)
 * and a namespace change leaves its outcome unknown, which a signal to a
 * healthy caller must not do; one stuck on the network ends then. Requests
 * that only look end at once.
 */
#define INTR_GRACE_MS	200

/*
 * req starts on this thread: its libmaru calls end with EINTR when the
 * kernel interrupts it (op: its kind, enum op_type). Requests FUSE never
 * interrupts (FORGET, RELEASE, RELEASEDIR) only clear what a request
 * before left.
 */
void intr_begin(fuse_req_t req, int op);

#endif
