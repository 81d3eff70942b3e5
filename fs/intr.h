/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/intr.h: a FUSE INTERRUPT ends the libmaru call its request's thread is
 * in (intr.c). ops.c calls intr_begin() as each request starts.
 */
#ifndef MARUFS_INTR_H
#define MARUFS_INTR_H

#include "mount.h"

/*
 * A request interrupted earlier than this after it began is given the rest
 * of it; one stuck on the network ends then. The kernel sends an INTERRUPT
 * whenever the caller has a signal pending, which a healthy caller often
 * has: a handler installed with SA_RESTART, or io_uring's task work (a
 * process with a ring sees a stat(2) fail with EINTR otherwise). Cut in
 * two, a write fails its version (pendio.c) and a namespace change leaves
 * its outcome unknown; a lookup or a read that fails EINTR breaks a caller
 * that never expects it from a file system.
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
