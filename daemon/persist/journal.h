/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/journal.h: the directory journal kept in the pool's metadata
 * area (see journal.c for the design and why it is crash-safe): the record
 * format shared by its writer (record.c, ckpt.c) and its reader (restore.c),
 * appends, checkpoints into the other half, and the read-only scan that
 * recovery and `marud -n` use. Not thread-safe: the directory lock
 * serialises every call, so records are in the order the changes happened.
 *
 * Record bodies are the structs below (host byte order: the pool is memory
 * of this host, or of CXL hosts of the same architecture), followed by
 * their extents and names; a record is a struct jrec_hdr, the body, and
 * zero padding to 8 bytes.
 */
#ifndef MARUD_JOURNAL_H
#define MARUD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "extent.h"

#define JREC_MAGIC	0x4a4du		/* "MJ" */
#define JHALF_HDR	4096u		/* each half starts with its header */
/* Room for one more id batch: ids below the mark may have been handed out. */
#define JOURNAL_ID_BATCH 65536u

enum jrec_type {
	JR_DIR = 1,	/* a directory: mkdir, or one line of a checkpoint */
	JR_FILE = 2,	/* a published version bound to its name (replaces it) */
	JR_REMOVE = 3,	/* unlink, evict, rmdir: by id */
	JR_RENAME = 4,	/* whatever is at `to` goes; the item `id` at `from` moves */
	JR_ATTR = 5,	/* setattr */
	JR_IDS = 6,	/* ids below next_id may be in use */
	/*
	 * Added with hard links, symlinks and special files. A journal
	 * written before them simply holds none of these (and no JR_FILE of
	 * a symlink), so it recovers as it always did; a marud older than
	 * them skips these records as ones that do not apply.
	 */
	JR_LINK = 7,	/* one more name bound to the published version `id` */
	JR_UNNAME = 8,	/* one name of a version with several goes; the others stay */
	JR_SPECIAL = 9,	/* a symlink (with its target) or a FIFO, socket or device */
	/*
	 * Added with TTL pins: a journal written before them holds none and
	 * recovers as before; a marud older than them skips these records
	 * (the names come back, unpinned).
	 */
	JR_PIN = 10,	/* version id pinned until a wall-clock deadline (0: unpinned) */
};

struct jrec_hdr {
	uint64_t sum;	/* XXH3(bytes [8, len), seed = the half's salt) */
	uint16_t magic;
	uint16_t type;
	uint32_t len;	/* header + body + padding */
	uint64_t seq;	/* 0, 1, 2... within one use of a half */
};

struct jb_dir {
	uint64_t id, parent, atime, mtime, ctime;
	uint32_t mode, uid, gid, nlen;
	/* char name[nlen] */
};

struct jb_file {
	uint64_t id, parent, size, xxh3, atime, mtime, ctime;
	uint32_t mode, uid, gid, nlen, next, pad;
	/* struct extent ext[next]; char name[nlen] */
};

struct jb_remove {
	uint64_t id;
	uint32_t why;	/* the event type (unlink, evict, rmdir) */
	uint32_t pad;
};

struct jb_rename {
	uint64_t id, from_parent, to_parent;
	uint32_t from_len, to_len;
	/*
	 * char from[from_len], to[to_len]; then (since hard links) the moved
	 * item's new ctime, uint64_t, unaligned. Older records end with
	 * less than 8 bytes of padding after the names, so they tell apart.
	 */
};

struct jb_attr {
	uint64_t id, atime, mtime, ctime;
	uint32_t mode, uid, gid, pad;
};

struct jb_ids {
	uint64_t next_id;
};

/* Version id's ctime as of the link (the link count changed). */
struct jb_link {
	uint64_t id, parent, ctime;
	uint32_t nlen, pad;
	/* char name[nlen] */
};

/* Recorded before the change; the version's new ctime follows as JR_ATTR. */
struct jb_unname {
	uint64_t id, parent;
	uint32_t nlen, why;	/* why: the event type (unlink) */
	/* char name[nlen] */
};

/* size: the target's length (symlink) or 0; rdev: device nodes only. */
struct jb_special {
	uint64_t id, parent, size, rdev, atime, mtime, ctime;
	uint32_t mode, uid, gid, nlen, tlen, pad;
	/* char target[tlen]; char name[nlen] */
};

/*
 * until_ns: CLOCK_REALTIME ns, so a restart does not extend the pin; 0:
 * unpin. tenant: the root directory id of the tenant whose cap it counts
 * against, 0 none.
 */
struct jb_pin {
	uint64_t id, until_ns, tenant;
};

_Static_assert(sizeof(struct jb_pin) == 24, "pin body");
_Static_assert(sizeof(struct jrec_hdr) == 24, "record header");
_Static_assert(sizeof(struct jb_dir) == 56 && sizeof(struct jb_file) == 80, "bodies");
_Static_assert(sizeof(struct jb_link) == 32 && sizeof(struct jb_unname) == 24 &&
	       sizeof(struct jb_special) == 80, "link bodies");

/* Bytes a record with a body of blen bytes takes. */
static inline uint32_t jrec_size(uint32_t blen)
{
	return (uint32_t)((sizeof(struct jrec_hdr) + blen + 7) & ~7ull);
}

/* Encode into dst (jrec_size(blen) bytes). */
void persist_jrec_encode(void *dst, uint32_t type, uint64_t seq, uint64_t salt, const void *body,
		 uint32_t blen);
/*
 * Check the record at src (avail bytes readable): magic, length, sequence
 * (seq == UINT64_MAX: any) and checksum. 0 with *type, *body, *blen (the
 * body length with padding), or -EBADMSG.
 */
int persist_jrec_decode(const void *src, uint64_t avail, uint64_t salt, uint64_t seq,
		uint32_t *type, const void **body, uint32_t *blen);

/* Make pool bytes [off, off+len) durable; NULL: plain memory (shm, file). */
typedef int (*journal_persist_fn)(void *arg, uint64_t off, uint64_t len);

struct journal_opts {
	uint8_t *pool_base;		/* the pool mapping */
	uint64_t area_off, area_len;	/* the metadata area in it */
	const uint8_t *uuid;		/* 16 bytes: the pool's */
	journal_persist_fn persist;
	void *persist_arg;
	/* 1: the pool is a MAP_SHARED mapping, so a forked child's stores
	 * reach it (a background checkpoint, ckpt.c); 0: plain memory */
	int shared;
};

struct journal;

/* What a scan found. */
struct journal_scan {
	int found;		/* 0: no valid half header (a new or wiped area) */
	int half;
	uint64_t epoch;
	uint64_t records, bytes;	/* valid records replayed, their bytes */
	uint64_t stop_off;		/* offset in the half where replay stopped */
	int torn;			/* the bytes at stop_off are not a clean end */
	uint64_t lost_records, lost_bytes;	/* valid records found past the stop */
};

/* 0, or non-zero to stop the scan (returned by persist_journal_scan). */
typedef int (*journal_rec_fn)(void *arg, uint32_t type, const void *body, uint32_t blen);

int persist_journal_open(const struct journal_opts *o, struct journal **out);
void persist_journal_close(struct journal *j);
/* Replay the active half through cb. Reads only. */
int persist_journal_scan(struct journal *j, journal_rec_fn cb, void *arg, struct journal_scan *out);
/*
 * Append one record to the active half and make it durable. fp (may be
 * NULL): fail point prefix; "<fp>.torn" fires with half the record
 * written, "<fp>.after" once it is durable. -ENOSPC if it does not fit
 * (checkpoint), -ENODEV before the first checkpoint.
 */
int persist_journal_append(struct journal *j, uint32_t type, const void *body, uint32_t blen,
		   const char *fp);
/* 1 if a record of rlen bytes fits in the active half now. */
int persist_journal_fits(const struct journal *j, uint64_t rlen);
uint64_t persist_journal_half_len(const struct journal *j);
/*
 * Checkpoint: begin (the other half's header is wiped first), add every
 * live item, commit (records durable, then the new header: from then on
 * the new half is the journal). -ENOSPC from add if the state does not fit
 * a half: abort, and the old half stays the journal.
 */
int persist_journal_ckpt_begin(struct journal *j);
int persist_journal_ckpt_add(struct journal *j, uint32_t type, const void *body, uint32_t blen);
int persist_journal_ckpt_commit(struct journal *j);
void persist_journal_ckpt_abort(struct journal *j);

/*
 * A checkpoint written by another process over the same (shared) area:
 * the parent begins it, a forked child adds the live state and makes it
 * durable (persist_journal_ckpt_persist) and reports persist_journal_ckpt_pos(); the
 * parent adopts that position, copies the records appended to the active
 * half since the fork after it (persist_journal_ckpt_copy) and commits.
 */
struct journal_ckpt_pos {
	uint64_t head, seq, records;
};
/* Make the checkpoint's records so far durable (dax); 0 or -errno. */
int persist_journal_ckpt_persist(struct journal *j);
void persist_journal_ckpt_pos(const struct journal *j, struct journal_ckpt_pos *out);
/* -EINVAL if pos cannot be a position of the checkpoint begun here. */
int persist_journal_ckpt_adopt(struct journal *j, const struct journal_ckpt_pos *pos);
/*
 * Copy the active half's records from offset *from (a record boundary, at
 * most its head) into the checkpoint, at most max of them, sealed with the
 * checkpoint's salt and sequence; *from advances past them. 0, or -ENOSPC
 * when the checkpoint half has no room left.
 */
int persist_journal_ckpt_copy(struct journal *j, uint64_t *from, uint32_t max);
/* The active half's append offset (where the next record goes). */
uint64_t persist_journal_head(const struct journal *j);
/* Bytes of records in the active half. */
uint64_t persist_journal_used(const struct journal *j);
int persist_journal_shared(const struct journal *j);
/* Make data bytes durable before the record that publishes them. */
int persist_journal_flush(struct journal *j, uint64_t off, uint64_t len);

struct journal_stats {
	uint64_t epoch, half_len, used, appended, checkpoints, ckpt_bytes;
};
void persist_journal_stats(const struct journal *j, struct journal_stats *out);

#endif
