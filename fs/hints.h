/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/hints.h: the mount's hints on their way to marud (marufs-design(7)
 * §4.3). hintline.c parses the lines of .maru/hints; hints.c resolves their
 * paths, queues hints (at most HINTQ_MAX waiting; the oldest is dropped and
 * counted; read_end is never dropped) and sends them in order on a thread
 * of its own with maru_hint(); lookup_hints.c turns the first positive
 * lookup of a file name into a read hint, coalesced per directory. Hints
 * are advice: a failure is counted, never returned to a reader.
 */
#ifndef MARUFS_HINTS_H
#define MARUFS_HINTS_H

#include <stddef.h>
#include <stdint.h>

#include "mount.h"

#define HINTQ_MAX		1024	/* queued hints per mount */
#define HINT_LINE_MAX_PATHS	4096	/* ranges per message */
#define HINT_REQ_MAX		63
/* A `pin SECONDS PATH...` line: not a hint (no MARU_HINT_* value), run at once. */
#define HINT_LINE_PIN		100

/* ---- hintline.c: one line of .maru/hints ---- */

struct hint_line {
	int action;			/* MARU_HINT_* or HINT_LINE_PIN */
	char req[HINT_REQ_MAX + 1];	/* "" for write without a token */
	uint32_t seconds;		/* HINT_LINE_PIN: from the req word */
	const char *path[HINT_LINE_MAX_PATHS];	/* into the parsed buffer */
	size_t npaths;
};

/*
 * Parse one line (no newline; NUL-terminated in place, modified). 0, or
 * -EINVAL with why pointing at a static explanation.
 */
int hint_line_parse(char *line, struct hint_line *out, const char **why);

/* ---- hints.c: the queue ---- */

struct hintq;

struct hint_counters {
	uint64_t queued, sent, dropped, unsupported, refused, failed;
	uint64_t lookup_hints, lookup_batches;
};

int hintq_new(struct mfs *m, struct hintq **out);
int hintq_start(struct hintq *q);
/* Stop the sender (sending what is queued first, bounded) and free. */
void hintq_free(struct hintq *q);
/* Queue a hint (ranges copied); 0, or -ENOMEM. */
int hintq_push(struct hintq *q, int action, const char *req,
	       const struct maru_hint_range *r, size_t n);
/* Wait until everything queued so far was sent (tests, .maru/hints). */
void hintq_drain(struct hintq *q, int timeout_ms);
void hintq_counters(struct hintq *q, struct hint_counters *out);
/* lookup_hints.c: a batch of names became one read hint. */
void hintq_note_lookup(struct hintq *q, size_t names);

/*
 * The text written to .maru/hints: every line parsed and every path
 * resolved before anything is queued. -EINVAL (logged with the line and
 * why) on any bad line. Then, in order, hints are queued and pin lines
 * run at once (maru_pin_set, one per path): the first pin refused (e.g.
 * -ENOSPC over a cap) stops there and is returned, with a log line.
 */
int hints_write_text(struct mfs *m, const char *buf, size_t len);
/* user.maru.hint on ino (a file, or a directory: all files in it). */
int hints_xattr(struct mfs *m, uint64_t ino, int action);

/* ---- lookup_hints.c ---- */

struct lookup_hints;

int lookup_hints_new(struct mfs *m, struct lookup_hints **out);
void lookup_hints_free(struct lookup_hints *lh);
/* A positive lookup of a published file: the lookup path's one call. */
void lookup_hints_seen(struct mfs *m, uint64_t parent, const char *name, uint64_t ino);
/* A file was opened / released: promote / maybe end its batch. */
void lookup_hints_opened(struct mfs *m, uint64_t ino);
void lookup_hints_released(struct mfs *m, uint64_t ino);

#endif
