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
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "marufs.h"

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

static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct want wants[PIN_SLOTS];
static struct pin pins[PIN_SLOTS];
static unsigned int nwants, npins;	/* live entries; read unlocked as a hint */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int pin_used(const struct pin *p)
{
	return p->f || p->p;
}

/* Slot i out of the table into *d (released unlocked by drop_all). */
static void pin_out_locked(size_t i, struct drop *d)
{
	d->f = pins[i].f;
	d->p = pins[i].p;
	pins[i].f = NULL;
	pins[i].p = NULL;
	__atomic_sub_fetch(&npins, 1, __ATOMIC_RELAXED);
}

/* Expired entries out; pins to release are moved to out[]. */
static size_t expire_locked(uint64_t now, struct drop *out)
{
	size_t i, n = 0;

	for (i = 0; i < PIN_SLOTS; i++) {
		if (wants[i].deadline && wants[i].deadline <= now) {
			wants[i].deadline = 0;
			__atomic_sub_fetch(&nwants, 1, __ATOMIC_RELAXED);
		}
		if (pin_used(&pins[i]) && pins[i].deadline <= now)
			pin_out_locked(i, &out[n++]);
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

void pin_want(uint64_t parent, const char *name)
{
	struct drop old[PIN_SLOTS];
	uint64_t now = now_ms();
	size_t i, n;

	if (strlen(name) > MARU_NAME_MAX)
		return;
	pthread_mutex_lock(&pin_lock);
	n = expire_locked(now, old);
	for (i = 0; i < PIN_SLOTS; i++)
		if (wants[i].deadline && wants[i].parent == parent &&
		    strcmp(wants[i].name, name) == 0)
			break;
	if (i == PIN_SLOTS)
		for (i = 0; i < PIN_SLOTS && wants[i].deadline; i++)
			;
	if (i < PIN_SLOTS) {
		if (!wants[i].deadline)
			__atomic_add_fetch(&nwants, 1, __ATOMIC_RELAXED);
		wants[i].parent = parent;
		strcpy(wants[i].name, name);
		wants[i].deadline = now + PIN_TTL_MS;
	}
	pthread_mutex_unlock(&pin_lock);
	drop_all(old, n);
}

int pin_wanted(uint64_t parent, const char *name)
{
	size_t i;
	int hit = 0;

	if (!__atomic_load_n(&nwants, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&pin_lock);
	for (i = 0; i < PIN_SLOTS && !hit; i++)
		if (wants[i].deadline && wants[i].parent == parent &&
		    strcmp(wants[i].name, name) == 0) {
			wants[i].deadline = 0;
			__atomic_sub_fetch(&nwants, 1, __ATOMIC_RELAXED);
			hit = 1;
		}
	pthread_mutex_unlock(&pin_lock);
	return hit;
}

void pin_put(uint64_t ino, struct maru_file *f, struct pending *p)
{
	struct drop old[PIN_SLOTS + 1];
	uint64_t now = now_ms();
	size_t i, n;

	pthread_mutex_lock(&pin_lock);
	n = expire_locked(now, old);
	for (i = 0; i < PIN_SLOTS; i++)
		if (pin_used(&pins[i]) && pins[i].ino == ino) {
			pin_out_locked(i, &old[n++]);	/* one pin an inode: the newer */
			break;
		}
	for (i = 0; i < PIN_SLOTS && pin_used(&pins[i]); i++)
		;
	if (i < PIN_SLOTS) {
		pins[i] = (struct pin){ ino, now + PIN_TTL_MS, f, p };
		__atomic_add_fetch(&npins, 1, __ATOMIC_RELAXED);
	} else {
		old[n++] = (struct drop){ f, p };	/* full: the open may race, as before */
	}
	pthread_mutex_unlock(&pin_lock);
	drop_all(old, n);
}

int pin_take(uint64_t ino, struct maru_file **f, struct pending **p)
{
	struct drop old[PIN_SLOTS], got = { NULL, NULL };
	size_t i, n;

	*f = NULL;
	*p = NULL;
	if (!__atomic_load_n(&npins, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&pin_lock);
	for (i = 0; i < PIN_SLOTS; i++)
		if (pin_used(&pins[i]) && pins[i].ino == ino) {
			pin_out_locked(i, &got);
			break;
		}
	n = expire_locked(now_ms(), old);
	pthread_mutex_unlock(&pin_lock);
	drop_all(old, n);
	*f = got.f;
	*p = got.p;
	return got.f || got.p;
}

void pin_expire(void)
{
	struct drop old[PIN_SLOTS];
	size_t n;

	if (!__atomic_load_n(&npins, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&nwants, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&pin_lock);
	n = expire_locked(now_ms(), old);
	pthread_mutex_unlock(&pin_lock);
	drop_all(old, n);
}

void pin_drop_all(void)
{
	struct drop old[PIN_SLOTS];
	size_t i, n = 0;

	pthread_mutex_lock(&pin_lock);
	for (i = 0; i < PIN_SLOTS; i++) {
		if (pin_used(&pins[i]))
			pin_out_locked(i, &old[n++]);
		wants[i].deadline = 0;
	}
	__atomic_store_n(&nwants, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&pin_lock);
	drop_all(old, n);
}

unsigned int pin_count(void)
{
	return __atomic_load_n(&npins, __ATOMIC_RELAXED);
}
