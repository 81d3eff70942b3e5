/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/notify.h: the invalidation queue (notify.c). Request handlers and the
 * event thread queue kernel-cache invalidations and poll wake-ups; one
 * notifier thread sends them. A handler may wait, bounded, until its job was
 * sent, or register an expectation before a change and wait until the
 * pool's event for it came back (close-to-open across mounts). A NULL
 * notifier (not started yet) accepts every call and waits for nothing.
 */
#ifndef MARUFS_NOTIFY_H
#define MARUFS_NOTIFY_H

#include <stdint.h>

#include "mount.h"

struct notifier;
struct ev_expect;

/* Job queued behind the invalidations: run by the notifier thread. */
typedef void (*notify_call_fn)(void *arg, uint64_t val);

int notify_new(struct mfs *m, struct notifier **out);
int notify_start(struct notifier *nt);
/* Stop the thread (waiters return) and free queued jobs; then free(). */
void notify_stop(struct notifier *nt);
void notify_free(struct notifier *nt);

/* Queue an entry invalidation; wait: block (bounded) until it was sent. */
void notify_inval_entry(struct notifier *nt, uint64_t parent, const char *name, int wait);
void notify_inval_inode(struct notifier *nt, uint64_t ino);
/* The same, returning once the kernel dropped the inode's cached pages. */
void notify_inval_data(struct notifier *nt, uint64_t ino);
/*
 * Put buf, len bytes at off of ino, into the kernel's page cache now (not
 * queued): only from a handler whose caller holds no lock of ino's pages
 * (FLUSH, RELEASE: storing pages takes no inode lock either). 0, or -errno
 * (the pages are then simply not cached).
 */
int notify_store(struct notifier *nt, uint64_t ino, uint64_t off, const void *buf, size_t len);
/* Drop the kernel's attributes of ino, not its pages; wait: as above. */
void notify_inval_attr(struct notifier *nt, uint64_t ino, int wait);
void notify_inval_all(struct notifier *nt);
void notify_poll(struct notifier *nt, struct fuse_pollhandle *ph);
void notify_call(struct notifier *nt, notify_call_fn fn, void *arg, uint64_t val);

/* The event thread's view: is the stream up (expectations can be met)? */
void notify_stream_up(struct notifier *nt, int up);
/* The event thread saw (parent, name) change; invalidate it, meet waiters. */
void notify_name_changed(struct notifier *nt, uint64_t parent, const char *name,
			 int expected);
/* The same, when the kernel's entry of (parent, name) is already the changed
 * version (this mount made it): meet the waiters, invalidate nothing. */
void notify_name_current(struct notifier *nt, uint64_t parent, const char *name);

/*
 * Register before a change to (parent, name) that other mounts must see on
 * return (publish, rename, mkdir); then wait, bounded, until its event came
 * back (and, with applied, this mount's invalidation was sent: returns 1),
 * or cancel if the change failed. NULL (no event stream) is accepted by both
 * and waits for nothing. A handler whose request holds the parent directory
 * locked in the kernel (rename, mkdir, mknod) must not ask for applied: the
 * invalidation needs that lock.
 */
struct ev_expect *notify_expect(struct notifier *nt, uint64_t parent, const char *name);
int notify_expect_wait(struct notifier *nt, struct ev_expect *w, int applied);
void notify_expect_cancel(struct notifier *nt, struct ev_expect *w);

#endif
