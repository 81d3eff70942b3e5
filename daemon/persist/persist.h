/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/persist.h: warm restart in one room, as the directory
 * (daemon/dir/) and the server see it. persist/ keeps the journal
 * (journal.c), turns namespace changes into records (record.c, bodies from
 * enc.c), writes checkpoints (ckpt.c), rebuilds a directory from the
 * records (restore.c) and runs recovery at start (recover.c).
 *
 * Calls run one way: the server calls recovery (recover.h) and hands the
 * result to the directory (dir_set_persist); dir/ calls the functions
 * below; persist/ never calls dir/ by name. What persist/ needs from the
 * directory (its lock, a walk of its live items, applying a replayed
 * record) it gets as a struct persist_owner, a table of function pointers
 * the directory hands over (dir_persist_owner in dir.h):
 *
 *   server.c: dir_persist_owner (dir/record.c), persist_start
 *     (recover.c), dir_set_persist (dir/record.c); at the end
 *     dir_destroy (stops the checkpoint thread), persist_close
 *   recover.c -> restore.c, record.c, ckpt.c, journal.c
 *   restore.c -> enc.c, journal.c     record.c -> ckpt.c, enc.c, journal.c
 *   ckpt.c -> enc.c, journal.c        enc.c, journal.c -> nothing here
 *   dir/record.c, dir/dir.c, dir/check.c -> persist/record.c (this header)
 *   persist/ -> the owner table (dir/record.c, dir/replay.c) and, for
 *     `marud -n`, dir_scratch (dir/dir.c): never a dir/ function by name
 *
 * A record's meaning travels as a struct persist_item, the one neutral
 * shape both ways: dir/ fills it from a node to record a change or a
 * checkpoint line, restore.c decodes each replayed record into one and
 * hands it to ops->apply_item.
 */
#ifndef MARUD_PERSIST_H
#define MARUD_PERSIST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"

struct persist;

/* A name as a record holds it. */
struct persist_name {
	uint64_t parent;
	const char *name;
	uint32_t nlen;
};

/*
 * One record's meaning. type is an enum jrec_type; which fields count:
 *   JR_DIR      id, times, mode, uid, gid, at
 *   JR_FILE     id, size, xxh3, times, mode, uid, gid, ext[next], at
 *   JR_SPECIAL  id, size, rdev, times, mode, uid, gid, target[tlen], at
 *   JR_LINK     id (the version), ctime, at (the new name)
 *   JR_ATTR     id, times, mode, uid, gid
 *   JR_REMOVE   id, why (the event)
 *   JR_UNNAME   id, why, at (the name that goes)
 *   JR_RENAME   id, ctime (0: not recorded), at (from), to
 *   JR_IDS      id (ids below it may be in use)
 *   JR_PIN      id (the version), until (wall-clock ns deadline; 0: unpinned),
 *               tenant (root id of the tenant it counts against; 0 none)
 * Pointers point into the caller's node or the replayed record.
 */
struct persist_item {
	uint32_t type, why;
	uint64_t id, size, xxh3, rdev;
	uint64_t atime, mtime, ctime;
	uint64_t until, tenant;
	uint32_t mode, uid, gid;
	uint32_t next, tlen;
	const struct extent *ext;
	const char *target;
	struct persist_name at, to;
};

struct persist_restore_stats {
	uint64_t dirs, files, bytes;	/* recovered */
	uint64_t skipped;		/* records that did not apply (logged) */
	uint64_t bad_sum, bad_sum_bytes; /* versions dropped: checksum mismatch */
	uint64_t next_id;
};

/* 0 to go on; anything else stops the walk and is returned by it. */
typedef int (*persist_emit_fn)(void *arg, const struct persist_item *it);

/*
 * What the directory does for persist/. Every call runs with *lock held
 * (the walk also in a checkpoint's forked child, which holds a copy).
 */
struct persist_ops {
	/*
	 * Every live item: the root directory as a JR_ATTR first, then each
	 * directory before its entries (JR_DIR, JR_FILE, JR_SPECIAL), then
	 * every extra name of a version (JR_LINK).
	 */
	int (*walk_items)(void *dir, persist_emit_fn emit, void *arg);
	/* The id the directory hands out next. */
	uint64_t (*id_next)(void *dir);
	/* Replay: apply one record; -ENOMEM stops, any other -errno is
	 * counted as a record that did not apply. */
	int (*apply_item)(void *dir, const struct persist_item *it);
	/* Replay: drop published version id with all its names (bad bytes). */
	void (*drop_version)(void *dir, uint64_t id);
	/* Replay done: ids resume above max_id; fill dirs, files, bytes, next_id. */
	void (*replayed)(void *dir, uint64_t max_id, struct persist_restore_stats *st);
};

struct persist_owner {
	const struct persist_ops *ops;
	void *dir;
	pthread_mutex_t *lock;	/* the directory's: guards every call here */
};

/*
 * Keep journal j (not closed by persist_free) for the directory own names.
 * The checkpoint thread starts with it when j is over a shared mapping.
 */
int persist_new(struct journal *j, const struct persist_owner *own, struct persist **out);
/* Stop the checkpoint thread (and its child); the lock must not be held. */
void persist_stop(struct persist *p);
/* persist_stop, then free; NULL is fine. */
void persist_free(struct persist *p);
struct journal *persist_journal(const struct persist *p);

/*
 * Rebuild the empty directory of p from its journal (persist_journal_scan); then
 * hash every file's bytes at pool_base and drop (and log) each whose XXH3
 * differs from the recorded one. Ids resume above every id the journal
 * names. Writes neither the journal nor the pool. Takes the lock.
 */
int persist_restore(struct persist *p, const uint8_t *pool_base, struct journal_scan *sc,
		    struct persist_restore_stats *st);
/* Write the live state as a checkpoint into the other half. Takes the lock. */
int persist_checkpoint(struct persist *p);

/* ---- recording (dir/record.c, with the lock held; p may be NULL) ---- */

/*
 * Append the record of it (a change already applied, or with pre, one
 * about to be: removals). When the half is full, checkpoint; op names the
 * change in the log and in the fail points "marud.journal.<op>[.before]".
 */
void persist_write(struct persist *p, const struct persist_item *it, const char *op, int pre);
/* A published file: its data bytes made durable first (dax), then JR_FILE. */
void persist_write_file(struct persist *p, const struct persist_item *it, const char *op);
/*
 * Before a change that grows the live state: room for its record (type,
 * name bytes, extents), checkpointing early if that helps; -ENOSPC (said
 * once in the log, with the directory's names and dirs) when none is left.
 */
int persist_room(struct persist *p, uint32_t type, size_t nlen, uint32_t next,
		 uint64_t names, uint64_t dirs);
/* After handing out an id below next_id: keep the id mark above it. */
void persist_ids(struct persist *p, uint64_t next_id);

struct persist_stats {
	uint64_t sync, bg, failed, hold_ns;	/* checkpoints; longest lock hold */
	int running;				/* a background one under way */
};
void persist_stats(const struct persist *p, struct persist_stats *out);

/* ---- enc.c: record bodies ---- */

/* Bytes of it's body. */
uint32_t persist_enc_len(const struct persist_item *it);
/* it's body into buf (persist_enc_len bytes); returns its length. */
uint32_t persist_enc_to(const struct persist_item *it, uint8_t *buf);
/* Record body of type into *it (pointers into body): 0 or -EBADMSG. */
int persist_dec(uint32_t type, const void *body, uint32_t blen, struct persist_item *it);
/* A decoded item that makes sense (names, sizes, modes): 0 or -errno. */
int persist_item_check(const struct persist_item *it);

#endif
