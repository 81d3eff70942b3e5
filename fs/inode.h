/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/inode.h: the table of inodes this mount handed to the kernel (inode.c).
 * Each node counts the kernel's lookups, remembers the last (parent, name)
 * and the user.maru.hint, and may carry one payload object: pending.c links
 * this mount's pending version of the file there. The table holds a
 * reference on the payload through the hold/drop functions given at init,
 * and never looks inside it.
 */
#ifndef MARUFS_INODE_H
#define MARUFS_INODE_H

#include <stddef.h>
#include <stdint.h>

struct itab;

struct itab_payload_ops {
	void (*hold)(void *obj);	/* may run under the table lock */
	void (*drop)(void *obj);	/* runs without it */
};

int itab_new(const struct itab_payload_ops *ops, struct itab **out);
void itab_free(struct itab *t);
/* Kernel got an entry for (parent,name) -> ino: count it, remember the name. */
void itab_remember(struct itab *t, uint64_t ino, uint64_t parent, const char *name);
void itab_forget(struct itab *t, uint64_t ino, uint64_t n);
/* Copy out parent/name of a known inode; -ENOENT if unknown. */
int itab_name(struct itab *t, uint64_t ino, uint64_t *parent, char *name, size_t len);
/* The payload linked to ino (held for the caller) or NULL. */
void *itab_payload(struct itab *t, uint64_t ino);
/* Link obj to ino (the table holds it); the old payload is dropped. */
void itab_link(struct itab *t, uint64_t ino, void *obj);
void itab_set_hint(struct itab *t, uint64_t ino, int hint);
int itab_get_hint(struct itab *t, uint64_t ino);
void itab_rename(struct itab *t, uint64_t op, const char *on, uint64_t np, const char *nn);
size_t itab_count(struct itab *t);
/* Call fn for every known inode (generation change); the table lock held. */
void itab_foreach(struct itab *t, void (*fn)(void *arg, uint64_t ino), void *arg);
/* FNV-1a over the name, folded with the parent id (also pending.c's). */
uint64_t name_hash(uint64_t parent, const char *name);

#endif
