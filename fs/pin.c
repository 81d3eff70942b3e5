/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/pin.c: leases taken at LOOKUP for the open the VFS retries after a
 * stale open.
 *
 * An open of a kernel inode whose version is gone (its name was replaced or
 * unlinked, and nobody leases it any more) answers ESTALE; the VFS then
 * looks the name up once more and opens what that lookup found. Under heavy
 * rewriting the name can change again between that LOOKUP and its OPEN, and
 * the second ESTALE would reach the application. So after a stale open the
 * name is marked (pin_want), and its next LOOKUP leases the version it
 * returns (pin_put); the OPEN that follows takes that lease over (pin_take)
 * and cannot miss. When the name is this mount's own pending file, the pin
 * is a reader attached to it instead, which keeps its bytes open. A lease nobody takes (the retry never came to its open)
 * is dropped after PIN_TTL_MS, at the next request that passes here, at
 * FORGET of its inode, or at exit.
 *
 * Both tables are small and bounded (shared hash tables, htab.h, of at most
 * PIN_SLOTS entries each): stale opens are rare, and a full table only
 * costs the old behaviour (one retry).
 *
 * Lock: pins->lock, a leaf: pins dropped (a lease closed, a pending reader
 * detached) are moved out of the table and released after it is unlocked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hash.h"
#include "htab.h"
#include "inode.h"
#include "pending.h"
#include "pin.h"

#define PIN_SLOTS	64	/* the most wants, and the most pins, held */
#define PIN_TAB		128	/* table slots: 64 entries never grow it */
#define PIN_TTL_MS	2000

struct want {
	uint64_t parent, deadline;
	uint32_t hash;
	char name[];
};

struct pin {
	uint64_t ino, deadline;
	struct maru_file *f;	/* a lease on a published version, or */
	struct pending *p;	/* this mount's pending, a reader attached */
};

struct drop {
	struct maru_file *f;
	struct pending *p;
};

struct pins {
	pthread_mutex_t lock;
	struct htab wants;	/* of struct want, by (parent, name) */
	struct htab pins;	/* of struct pin, by ino */
	unsigned int nwants, npins;	/* live entries; read unlocked as a hint */
};

struct wkey {
	uint64_t parent;
	const char *name;
};

static uint32_t want_hash(uintptr_t it)
{
	return ((const struct want *)it)->hash;
}

static int want_is(uintptr_t it, const void *key)
{
	const struct want *w = (const struct want *)it;
	const struct wkey *k = key;

	return w->parent == k->parent && strcmp(w->name, k->name) == 0;
}

static uint32_t ino_hash(uint64_t ino)
{
	return (uint32_t)hash_mix64(ino);
}

static uint32_t pin_hash(uintptr_t it)
{
	return ino_hash(((const struct pin *)it)->ino);
}

static int pin_is(uintptr_t it, const void *key)
{
	return ((const struct pin *)it)->ino == *(const uint64_t *)key;
}

int pins_new(struct pins **out)
{
	struct pins *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (htab_init(&t->wants, PIN_TAB, want_hash, HTAB_BULK)) {
		free(t);
		return -ENOMEM;
	}
	if (htab_init(&t->pins, PIN_TAB, pin_hash, HTAB_BULK)) {
		htab_fini(&t->wants);
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void pins_free(struct pins *t)
{
	if (!t)
		return;
	pin_drop_all(t);
	htab_fini(&t->wants);
	htab_fini(&t->pins);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static uint64_t now_ms(void)
{
	return mono_ns() / 1000000;
}

static struct want *want_find(struct pins *t, uint64_t parent, const char *name)
{
	struct wkey k = { parent, name };

	return (struct want *)htab_find(&t->wants, (uint32_t)name_hash(parent, name), want_is,
					&k);
}

static struct pin *pin_find(struct pins *t, uint64_t ino)
{
	return (struct pin *)htab_find(&t->pins, ino_hash(ino), pin_is, &ino);
}

static void want_out_locked(struct pins *t, struct want *w)
{
	htab_del(&t->wants, (uintptr_t)w);
	free(w);
	__atomic_sub_fetch(&t->nwants, 1, __ATOMIC_RELAXED);
}

/* Pin pn out of the table into *d (released unlocked by drop_all). */
static void pin_out_locked(struct pins *t, struct pin *pn, struct drop *d)
{
	htab_del(&t->pins, (uintptr_t)pn);
	d->f = pn->f;
	d->p = pn->p;
	free(pn);
	__atomic_sub_fetch(&t->npins, 1, __ATOMIC_RELAXED);
}

/*
 * The entries of tab whose deadline is before `before` (all: UINT64_MAX),
 * into it[] (at most PIN_SLOTS). Collected first: the table may not change
 * during a walk.
 */
static size_t due(const struct htab *tab, int pins, uint64_t before, uintptr_t *it)
{
	uint64_t pos = 0, deadline;
	uintptr_t e;
	size_t n = 0;

	while ((e = htab_walk(tab, &pos))) {
		deadline = pins ? ((const struct pin *)e)->deadline :
				  ((const struct want *)e)->deadline;
		if (deadline <= before)
			it[n++] = e;
	}
	return n;
}

/* Entries due by `before` out; pins to release are moved to out[]. */
static size_t expire_locked(struct pins *t, uint64_t before, struct drop *out)
{
	uintptr_t it[PIN_SLOTS];
	size_t i, k, n = 0;

	k = due(&t->wants, 0, before, it);
	for (i = 0; i < k; i++)
		want_out_locked(t, (struct want *)it[i]);
	k = due(&t->pins, 1, before, it);
	for (i = 0; i < k; i++)
		pin_out_locked(t, (struct pin *)it[i], &out[n++]);
	return n;
}

static void drop_all(struct drop *d, size_t n)
{
	while (n--) {
		if (d[n].f)
			maru_file_close(d[n].f);
		if (d[n].p)
			pend_unpin(d[n].p);
	}
}

/* A new want of (parent, name), or NULL when the table is full. */
static struct want *want_add(struct pins *t, uint64_t parent, const char *name, size_t len)
{
	struct want *w;

	if (t->wants.count >= PIN_SLOTS || htab_reserve(&t->wants))
		return NULL;
	w = malloc(sizeof(*w) + len + 1);
	if (!w)
		return NULL;
	w->parent = parent;
	w->hash = (uint32_t)name_hash(parent, name);
	memcpy(w->name, name, len + 1);
	htab_place(&t->wants, (uintptr_t)w, w->hash);
	__atomic_add_fetch(&t->nwants, 1, __ATOMIC_RELAXED);
	return w;
}

void pin_want(struct pins *t, uint64_t parent, const char *name)
{
	struct drop old[PIN_SLOTS];
	uint64_t now = now_ms();
	size_t n, len = strlen(name);
	struct want *w;

	if (len > MARU_NAME_MAX)
		return;
	pthread_mutex_lock(&t->lock);
	n = expire_locked(t, now, old);
	w = want_find(t, parent, name);
	if (!w)
		w = want_add(t, parent, name, len);
	if (w)
		w->deadline = now + PIN_TTL_MS;
	pthread_mutex_unlock(&t->lock);
	drop_all(old, n);
}

int pin_wanted(struct pins *t, uint64_t parent, const char *name)
{
	struct want *w;

	if (!__atomic_load_n(&t->nwants, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&t->lock);
	w = want_find(t, parent, name);
	if (w)
		want_out_locked(t, w);
	pthread_mutex_unlock(&t->lock);
	return w != NULL;
}

void pin_put(struct pins *t, uint64_t ino, struct maru_file *f, struct pending *p)
{
	struct drop old[PIN_SLOTS + 2];
	uint64_t now = now_ms();
	struct pin *pn;
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = expire_locked(t, now, old);
	pn = pin_find(t, ino);
	if (pn)
		pin_out_locked(t, pn, &old[n++]);	/* one pin an inode: the newer */
	pn = NULL;
	if (t->pins.count < PIN_SLOTS && !htab_reserve(&t->pins))
		pn = malloc(sizeof(*pn));
	if (pn) {
		*pn = (struct pin){ ino, now + PIN_TTL_MS, f, p };
		htab_place(&t->pins, (uintptr_t)pn, ino_hash(ino));
		__atomic_add_fetch(&t->npins, 1, __ATOMIC_RELAXED);
	} else {
		old[n++] = (struct drop){ f, p };	/* full: the open may race, as before */
	}
	pthread_mutex_unlock(&t->lock);
	drop_all(old, n);
}

int pin_take(struct pins *t, uint64_t ino, struct maru_file **f, struct pending **p)
{
	struct drop old[PIN_SLOTS], got = { NULL, NULL };
	struct pin *pn;
	size_t n;

	*f = NULL;
	*p = NULL;
	if (!__atomic_load_n(&t->npins, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&t->lock);
	pn = pin_find(t, ino);
	if (pn)
		pin_out_locked(t, pn, &got);
	n = expire_locked(t, now_ms(), old);
	pthread_mutex_unlock(&t->lock);
	drop_all(old, n);
	*f = got.f;
	*p = got.p;
	return got.f || got.p;
}

void pin_expire(struct pins *t)
{
	struct drop old[PIN_SLOTS];
	size_t n;

	if (!__atomic_load_n(&t->npins, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&t->nwants, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&t->lock);
	n = expire_locked(t, now_ms(), old);
	pthread_mutex_unlock(&t->lock);
	drop_all(old, n);
}

void pin_drop_all(struct pins *t)
{
	struct drop old[PIN_SLOTS];
	size_t n;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	n = expire_locked(t, UINT64_MAX, old);
	pthread_mutex_unlock(&t->lock);
	drop_all(old, n);
}

unsigned int pin_count(struct pins *t)
{
	return __atomic_load_n(&t->npins, __ATOMIC_RELAXED);
}
