/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/persist_priv.h: the inside of struct persist, shared by
 * the files of daemon/persist/ and nothing else. Calls run down this list:
 *
 *   recover.c (start: open, restore, checkpoint; marud -n)
 *   restore.c (replay into the owner)    record.c (changes, room, ids)
 *   ckpt.c (checkpoints, under the lock or by a forked child)
 *   enc.c (record bodies)
 *   journal.c (the two halves in the metadata area)
 *
 * Every field is guarded by the owner's lock (own.lock).
 */
#ifndef MARUD_PERSIST_PRIV_H
#define MARUD_PERSIST_PRIV_H

#include <pthread.h>
#include <sys/types.h>

#include "persist.h"

/* ckpt.c: a checkpoint written by a forked child; see ckpt.c for the states. */
enum ckpt_state { CK_IDLE, CK_WANT, CK_CHILD, CK_CATCHUP };

struct ckpt_bg {
	pthread_t thread;
	pthread_cond_t cond;		/* wakes the thread: CK_WANT or stop */
	int on, stop, off;		/* thread runs; asked to end; disabled */
	enum ckpt_state state;
	pid_t pid;			/* the child, in CK_CHILD */
	uint64_t gen;			/* bumped when a checkpoint starts or is dropped */
	uint64_t from;			/* old-half offset of the next record to copy */
	uint64_t removed;		/* p->jremoved at the fork */
	uint64_t base;			/* journal bytes right after the last checkpoint */
	uint64_t hold_ns;		/* longest lock hold of one checkpoint step */
	uint64_t sync, bg, failed;	/* checkpoints: walked under the lock, by a child; failed */
};

struct persist {
	struct journal *j;
	struct persist_owner own;
	uint64_t id_mark;		/* ids below it are covered by a record */
	uint64_t jremoved;		/* removals since the last checkpoint */
	int jtight;			/* the last checkpoint left less than slack */
	int jfull_logged;		/* "metadata area full" said once */
	int own_journal;		/* recover.c opened j: persist_close closes it */
	uint8_t *jb;			/* one record body */
	uint32_t jbcap;
	struct ckpt_bg ck;
};

/* ---- enc.c ---- */

/* it's body in p->jb (valid until the next call), or NULL (no memory). */
uint8_t *persist_enc(struct persist *p, const struct persist_item *it, uint32_t *blen);

/* ---- ckpt.c ---- */

/*
 * A checkpoint now, under the lock: 0 when the new half holds the state
 * as it is (the change being recorded needs no record when it is already
 * applied), 1 when it holds the journal as it was (a background
 * checkpoint finished: the record must still be appended), or -errno
 * (-ENOSPC: the state does not fit a half; the old half stays).
 */
int persist_ckpt_now(struct persist *p);
/* After an append: start a background checkpoint when half the room left
 * by the last one is used. */
void persist_ckpt_kick(struct persist *p);
/* Under the lock: the thread, for a journal over a shared mapping. */
void persist_ckpt_start(struct persist *p);
/* End the thread (and any child); the lock not held. */
void persist_ckpt_fini(struct persist *p);

#endif
