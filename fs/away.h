/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/away.h: what this mount last heard from marud of names, attributes
 * and the pool's space (away.c), kept to answer stat, ls and df of names it
 * knows while marud cannot be reached (marufs(8), WHEN THE POOL IS AWAY),
 * and whether the pool is known away (then those answer at once).
 * Filled by ns.c from marud's answers, emptied name by name by the events
 * (events.c) and whole at a new pool generation and when the stream is
 * back; consulted after a call to marud failed with one of the errors
 * away_err() accepts, or in its place while the pool is known away.
 */
#ifndef MARUFS_AWAY_H
#define MARUFS_AWAY_H

#include <stddef.h>
#include <stdint.h>

#include <maru/libmaru.h>

struct away;

int away_new(struct away **out);
void away_free(struct away *aw);
/*
 * The mount spans several pools (a cluster, maru+etcd://): one call that
 * found its pool away says nothing of the others, so the pool is never
 * known away as a whole and no call is refused for it; what is kept still
 * answers a call that found its own pool away.
 */
void away_many_pools(struct away *aw);
/* Does error rc (-errno) mean marud could not be reached? */
int away_err(int rc);

/*
 * marud could not be reached (rc): found (0) means what it last said stands
 * in, which the log says (rate-limited), and 0 is returned; else rc.
 */
int away_answer(int rc, const char *what, int found);

/* Remember a's published file, symlink or directory under (parent, name). */
void away_put(struct away *aw, uint64_t parent, const char *name, const struct maru_attr *a);
/* A name a listing gave (no attributes: listed, never stat'ed from here). */
void away_put_listed(struct away *aw, uint64_t parent, const char *name, uint64_t ino,
		     uint32_t mode);
/* (parent, name) changed or went. */
void away_forget(struct away *aw, uint64_t parent, const char *name);
void away_clear(struct away *aw);
/* The attributes last heard of (parent, name): 0 or -ENOENT (not known). */
int away_get(struct away *aw, uint64_t parent, const char *name, struct maru_attr *a);
/* Of version or directory ino under (parent, name), as itab_name() tells. */
int away_get_ino(struct away *aw, uint64_t parent, const char *name, uint64_t ino,
		 struct maru_attr *a);
/* The names known in dir, cb called for each (a->mode's type bits at
 * least; nonzero return: stop, negative: the error returned). */
int away_list(struct away *aw, uint64_t dir,
	      int (*cb)(void *arg, const char *name, const struct maru_attr *a), void *arg);
/* Does the table know a name in dir? */
int away_knows_dir(struct away *aw, uint64_t dir);
/* The pool's space as marud last said. */
void away_put_statfs(struct away *aw, const struct maru_statfs *s);
int away_get_statfs(struct away *aw, struct maru_statfs *s);

/*
 * Should this call ask marud? 1 while the pool is not known away; while it
 * is: 0 when the table holds the answer (cached) and for all but one call
 * (the probe, at most one at a time, AWAY_PROBE_MS after the last ended),
 * which take -ETIMEDOUT as marud's answer. A caller that asked passes the
 * result to away_heard().
 */
int away_ask(struct away *aw, int cached);
/* What marud's call returned (rc): 0 or -ENOENT: it is there; an away_err()
 * error: it is away; anything else tells nothing of it, but ends the probe
 * (the next call may ask at once). */
void away_heard(struct away *aw, int rc);
/* marud is back (the event stream is): the events missed meanwhile make
 * every answer kept stale, so they are dropped too. */
void away_back(struct away *aw);

#endif
