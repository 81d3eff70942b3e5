// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fs/away.c: the answers kept for when the pool is away (see away.h). A
 * table of AWAY_SLOTS names, each of which may sit in one of two slots (two
 * hashes): bounded memory, and a name that finds both taken evicts a file
 * before a directory (a directory lost would fail every path under it),
 * else the older. A name evicted fails as an unknown name would. Only
 * published files, symlinks and directories are kept: a pending version's
 * attributes belong to its writer (pending.c), and a missing name is never
 * answered from here (it may have been created meanwhile).
 *
 * Whether the pool is known away: set when a call through ns.c or nsdir.c
 * found marud unreachable (it waited out its bound, or was refused), cleared
 * by any answer of marud's and when the event stream is back (events.c).
 * While set, a call the table can answer answers at once, and of the others
 * one at a time, AWAY_PROBE_MS after the last one ended, asks marud (the
 * probe); the rest fail at once with ETIMEDOUT.
 *
 * A cluster mount (away_many_pools()) is never known away: one pool's
 * timeout would otherwise refuse lookups of names on the pools that serve.
 *
 * Lock: aw->lock, a leaf. Every call takes a NULL table as empty.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "away.h"
#include "clock.h"
#include "hash.h"
#include "log.h"
#include "ratelog.h"

#define AWAY_SLOTS	4096
#define AWAY_PROBE_MS	500	/* between the end of a probe and the next */

struct aslot {
	uint64_t parent;	/* 0: empty */
	uint64_t stamp;		/* when stored: the older goes first */
	int listed_only;	/* from a listing: a name and type, no attributes */
	struct maru_attr a;
	char name[MARU_NAME_MAX + 1];
};

struct away {
	pthread_mutex_t lock;
	uint64_t clock;
	int have_statfs;
	struct maru_statfs st;
	int many;		/* several pools: never known away as a whole */
	int down;		/* the pool is known away */
	int probing;		/* a probe is out */
	uint64_t probe_at;	/* mono_ms() from which the next probe may go */
	struct aslot s[AWAY_SLOTS];
};

/* The two slots a name may sit in. */
static void slots_of(struct away *aw, uint64_t parent, const char *name, struct aslot *c[2])
{
	uint64_t h = hash_mix64(parent);

	for (; *name; name++)
		h = hash_mix64(h ^ (unsigned char)*name);
	c[0] = &aw->s[h & (AWAY_SLOTS - 1)];
	c[1] = &aw->s[(h >> 32) & (AWAY_SLOTS - 1)];
}

static int holds(const struct aslot *s, uint64_t parent, const char *name)
{
	return s->parent && s->parent == parent && strcmp(s->name, name) == 0;
}

/* The slot holding (parent, name), or NULL. */
static struct aslot *slot_of(struct away *aw, uint64_t parent, const char *name)
{
	struct aslot *c[2];

	slots_of(aw, parent, name, c);
	return holds(c[0], parent, name) ? c[0] : holds(c[1], parent, name) ? c[1] : NULL;
}

/* Where (parent, name) goes: its slot, an empty one, or the one to evict. */
static struct aslot *slot_for(struct away *aw, uint64_t parent, const char *name)
{
	struct aslot *c[2], *s = slot_of(aw, parent, name);
	int d0, d1;

	if (s)
		return s;
	slots_of(aw, parent, name, c);
	if (!c[0]->parent || !c[1]->parent)
		return c[0]->parent ? c[1] : c[0];
	d0 = S_ISDIR(c[0]->a.mode);
	d1 = S_ISDIR(c[1]->a.mode);
	if (d0 != d1)
		return d0 ? c[1] : c[0];
	return c[0]->stamp <= c[1]->stamp ? c[0] : c[1];
}

int away_new(struct away **out)
{
	struct away *aw = calloc(1, sizeof(*aw));

	if (!aw)
		return -ENOMEM;
	pthread_mutex_init(&aw->lock, NULL);
	*out = aw;
	return 0;
}

void away_many_pools(struct away *aw)
{
	if (!aw)
		return;
	pthread_mutex_lock(&aw->lock);
	aw->many = 1;
	aw->down = 0;
	pthread_mutex_unlock(&aw->lock);
}

void away_free(struct away *aw)
{
	if (!aw)
		return;
	pthread_mutex_destroy(&aw->lock);
	free(aw);
}

int away_err(int rc)
{
	switch (-rc) {
	case ETIMEDOUT:
	case ENOTCONN:
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EPIPE:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return 1;
	default:
		return 0;
	}
}

int away_answer(int rc, const char *what, int found)
{
	if (found)
		return rc;
	RATELOG_WARN("marud unreachable (%s): %s answered from what this mount last heard",
		     strerror(-rc), what);
	return 0;
}

void away_put(struct away *aw, uint64_t parent, const char *name, const struct maru_attr *a)
{
	struct aslot *s;
	size_t n = strlen(name);

	if (!aw || !parent || n > MARU_NAME_MAX)
		return;
	if (a->state != MARU_STATE_PUBLISHED && a->state != MARU_STATE_DIR)
		return;
	pthread_mutex_lock(&aw->lock);
	s = slot_for(aw, parent, name);
	s->parent = parent;
	s->stamp = ++aw->clock;
	s->listed_only = 0;
	s->a = *a;
	memcpy(s->name, name, n + 1);
	pthread_mutex_unlock(&aw->lock);
}

void away_put_listed(struct away *aw, uint64_t parent, const char *name, uint64_t ino,
		     uint32_t mode)
{
	struct aslot *s;
	size_t n = strlen(name);

	if (!aw || !parent || n > MARU_NAME_MAX)
		return;
	pthread_mutex_lock(&aw->lock);
	s = slot_for(aw, parent, name);
	/* what a lookup told of the same version is more */
	if (!(holds(s, parent, name) && s->a.ino == ino)) {
		s->stamp = ++aw->clock;
		memset(&s->a, 0, sizeof(s->a));
		s->a.ino = ino;
		s->a.mode = mode & S_IFMT;
		s->parent = parent;
		s->listed_only = 1;
		memcpy(s->name, name, n + 1);
	}
	pthread_mutex_unlock(&aw->lock);
}

void away_forget(struct away *aw, uint64_t parent, const char *name)
{
	struct aslot *s;

	if (!aw || !parent || !name[0])
		return;
	pthread_mutex_lock(&aw->lock);
	s = slot_of(aw, parent, name);
	if (s)
		s->parent = 0;
	pthread_mutex_unlock(&aw->lock);
}

void away_clear(struct away *aw)
{
	size_t i;

	if (!aw)
		return;
	pthread_mutex_lock(&aw->lock);
	for (i = 0; i < AWAY_SLOTS; i++)
		aw->s[i].parent = 0;
	aw->have_statfs = 0;
	pthread_mutex_unlock(&aw->lock);
}

int away_get(struct away *aw, uint64_t parent, const char *name, struct maru_attr *a)
{
	struct aslot *s;
	int rc = -ENOENT;

	if (!aw)
		return rc;
	pthread_mutex_lock(&aw->lock);
	s = slot_of(aw, parent, name);
	if (s && !s->listed_only) {
		*a = s->a;
		rc = 0;
	}
	pthread_mutex_unlock(&aw->lock);
	return rc;
}

int away_get_ino(struct away *aw, uint64_t parent, const char *name, uint64_t ino,
		 struct maru_attr *a)
{
	int rc = away_get(aw, parent, name, a);

	return rc == 0 && a->ino != ino ? -ENOENT : rc;
}

int away_list(struct away *aw, uint64_t dir,
	      int (*cb)(void *arg, const char *name, const struct maru_attr *a), void *arg)
{
	struct aslot *copy;
	size_t i, n = 0;
	int rc = 0;

	if (!aw)
		return -ENOENT;
	copy = malloc(AWAY_SLOTS * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	/* copied out: cb runs with no lock held */
	pthread_mutex_lock(&aw->lock);
	for (i = 0; i < AWAY_SLOTS; i++)
		if (aw->s[i].parent == dir)
			copy[n++] = aw->s[i];
	pthread_mutex_unlock(&aw->lock);
	for (i = 0; i < n && !rc; i++)
		rc = cb(arg, copy[i].name, &copy[i].a);
	free(copy);
	return rc < 0 ? rc : 0;
}

int away_knows_dir(struct away *aw, uint64_t dir)
{
	size_t i;
	int found = 0;

	if (!aw)
		return 0;
	pthread_mutex_lock(&aw->lock);
	for (i = 0; i < AWAY_SLOTS && !found; i++)
		found = aw->s[i].parent == dir;
	pthread_mutex_unlock(&aw->lock);
	return found;
}

void away_put_statfs(struct away *aw, const struct maru_statfs *s)
{
	if (!aw)
		return;
	pthread_mutex_lock(&aw->lock);
	aw->st = *s;
	aw->have_statfs = 1;
	pthread_mutex_unlock(&aw->lock);
}

int away_get_statfs(struct away *aw, struct maru_statfs *s)
{
	int rc = -ENOENT;

	if (!aw)
		return rc;
	pthread_mutex_lock(&aw->lock);
	if (aw->have_statfs) {
		*s = aw->st;
		rc = 0;
	}
	pthread_mutex_unlock(&aw->lock);
	return rc;
}

int away_ask(struct away *aw, int cached)
{
	int ask = 1;

	if (!aw)
		return 1;
	pthread_mutex_lock(&aw->lock);
	if (aw->down) {
		ask = !cached && !aw->probing && mono_ms() >= aw->probe_at;
		aw->probing |= ask;
	}
	pthread_mutex_unlock(&aw->lock);
	return ask;
}

void away_heard(struct away *aw, int rc)
{
	int was, down = away_err(rc);

	if (!aw)
		return;
	pthread_mutex_lock(&aw->lock);
	if (aw->many) {
		pthread_mutex_unlock(&aw->lock);
		return;
	}
	if (rc != 0 && rc != -ENOENT && !down) {
		/* an answer that tells nothing of marud's presence (ESTALE
		 * after a new generation, EINTR): the state stays, but a probe
		 * that got it has ended, else no call would ask marud again */
		aw->probing = 0;
		pthread_mutex_unlock(&aw->lock);
		return;
	}
	was = aw->down;
	aw->down = down;
	aw->probing = 0;
	if (down)
		aw->probe_at = mono_ms() + AWAY_PROBE_MS;
	pthread_mutex_unlock(&aw->lock);
	if (down && !was)
		log_warnx("marud unreachable (%s): until it answers again, stat, ls and df "
			  "of names this mount knows answer from what it last heard, and "
			  "other lookups fail at once with ETIMEDOUT (one asks marud every "
			  "%u ms)", strerror(-rc), AWAY_PROBE_MS);
	else if (!down && was)
		log_info("marud answers again: every call asks it");
}

void away_back(struct away *aw)
{
	away_clear(aw);	/* events were missed: what it kept may be stale */
	away_heard(aw, 0);
}
