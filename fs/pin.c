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
 * Both tables are small and fixed: stale opens are rare, and a full table
 * only costs the old behaviour (one retry).
 *
 * Lock: pins->lock, a leaf: pins dropped (a lease closed, a pending reader
 * detached) are moved out of the table and released after it is unlocked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "pending.h"
#include "pin.h"

#define PIN_SLOTS	64
#define PIN_TTL_MS	2000

struct want {
	uint64_t parent, deadline;
	char name[MARU_NAME_MAX + 1];
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
	struct want wants[PIN_SLOTS];
	struct pin pins[PIN_SLOTS];
	unsigned int nwants, npins;	/* live entries; read unlocked as a hint */
};

int pins_new(struct pins **out)
{
	struct pins *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void pins_free(struct pins *t)
{
	if (!t)
		return;
	pin_drop_all(t);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static uint64_t now_ms(void)
{
	return mono_ns() / 1000000;
}

static int pin_used(const struct pin *p)
{
	return p->f || p->p;
}

/* Slot i out of the table into *d (released unlocked by drop_all). */
static void pin_out_locked(struct pins *t, size_t i, struct drop *d)
{
	d->f = t->pins[i].f;
	d->p = t->pins[i].p;
	t->pins[i].f = NULL;
	t->pins[i].p = NULL;
	__atomic_sub_fetch(&t->npins, 1, __ATOMIC_RELAXED);
}

/* Expired entries out; pins to release are moved to out[]. */
static size_t expire_locked(struct pins *t, uint64_t now, struct drop *out)
{
	size_t i, n = 0;

	for (i = 0; i < PIN_SLOTS; i++) {
		if (t->wants[i].deadline && t->wants[i].deadline <= now) {
			t->wants[i].deadline = 0;
			__atomic_sub_fetch(&t->nwants, 1, __ATOMIC_RELAXED);
		}
		if (pin_used(&t->pins[i]) && t->pins[i].deadline <= now)
			pin_out_locked(t, i, &out[n++]);
	}
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

void pin_want(struct pins *t, uint64_t parent, const char *name)
{
	struct drop old[PIN_SLOTS];
	uint64_t now = now_ms();
	size_t i, n;

	if (strlen(name) > MARU_NAME_MAX)
		return;
	pthread_mutex_lock(&t->lock);
	n = expire_locked(t, now, old);
	for (i = 0; i < PIN_SLOTS; i++)
		if (t->wants[i].deadline && t->wants[i].parent == parent &&
		    strcmp(t->wants[i].name, name) == 0)
			break;
	if (i == PIN_SLOTS)
		for (i = 0; i < PIN_SLOTS && t->wants[i].deadline; i++)
			;
	if (i < PIN_SLOTS) {
		if (!t->wants[i].deadline)
			__atomic_add_fetch(&t->nwants, 1, __ATOMIC_RELAXED);
		t->wants[i].parent = parent;
		memcpy(t->wants[i].name, name, strlen(name) + 1);
		t->wants[i].deadline = now + PIN_TTL_MS;
	}
	pthread_mutex_unlock(&t->lock);
	drop_all(old, n);
}

int pin_wanted(struct pins *t, uint64_t parent, const char *name)
{
	size_t i;
	int hit = 0;

	if (!__atomic_load_n(&t->nwants, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < PIN_SLOTS && !hit; i++)
		if (t->wants[i].deadline && t->wants[i].parent == parent &&
		    strcmp(t->wants[i].name, name) == 0) {
			t->wants[i].deadline = 0;
			__atomic_sub_fetch(&t->nwants, 1, __ATOMIC_RELAXED);
			hit = 1;
		}
	pthread_mutex_unlock(&t->lock);
	return hit;
}

void pin_put(struct pins *t, uint64_t ino, struct maru_file *f, struct pending *p)
{
	struct drop old[PIN_SLOTS + 1];
	uint64_t now = now_ms();
	size_t i, n;

	pthread_mutex_lock(&t->lock);
	n = expire_locked(t, now, old);
	for (i = 0; i < PIN_SLOTS; i++)
		if (pin_used(&t->pins[i]) && t->pins[i].ino == ino) {
			pin_out_locked(t, i, &old[n++]);	/* one pin an inode: the newer */
			break;
		}
	for (i = 0; i < PIN_SLOTS && pin_used(&t->pins[i]); i++)
		;
	if (i < PIN_SLOTS) {
		t->pins[i] = (struct pin){ ino, now + PIN_TTL_MS, f, p };
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
	size_t i, n;

	*f = NULL;
	*p = NULL;
	if (!__atomic_load_n(&t->npins, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < PIN_SLOTS; i++)
		if (pin_used(&t->pins[i]) && t->pins[i].ino == ino) {
			pin_out_locked(t, i, &got);
			break;
		}
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
	size_t i, n = 0;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < PIN_SLOTS; i++) {
		if (pin_used(&t->pins[i]))
			pin_out_locked(t, i, &old[n++]);
		t->wants[i].deadline = 0;
	}
	__atomic_store_n(&t->nwants, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&t->lock);
	drop_all(old, n);
}

unsigned int pin_count(struct pins *t)
{
	return __atomic_load_n(&t->npins, __ATOMIC_RELAXED);
}
