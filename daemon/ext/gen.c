// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/ext/gen.c: the watch on a region extension's memory generation.
 * One thread of its own asks memory_generation() every poll interval (one
 * caller at a time, so an older answer never overwrites a newer one) and
 * mapped() again while the region is out of use. A changed generation, or
 * one that comes back after it was unknown for longer than the grace
 * period (a reset could have happened unseen), means the memory lost its
 * contents: the thread calls the server's reset once and stops. While the
 * generation is unknown past the grace period the region is out of use, and
 * the server is told as it goes out of use, so that clients stop serving
 * opens from what they cache. What the watch was started with lives in its
 * struct ext (wargs), so every loaded extension has a watch of its own.
 */
#include <errno.h>
#include <time.h>

#include "clock.h"
#include "ext_priv.h"
#include "log.h"

/* Sleep up to ms; 1 when asked to stop. */
static int watch_sleep(struct ext *e, unsigned int ms)
{
	struct timespec ts;
	int stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&e->wlock);
	while (!e->stop && pthread_cond_timedwait(&e->wcond, &e->wlock, &ts) != ETIMEDOUT)
		;
	stop = e->stop;
	pthread_mutex_unlock(&e->wlock);
	return stop;
}

/* One look; 1 when the memory was reset (or may have been). */
static int watch_once(struct ext *e, uint64_t *unknown_since)
{
	uint64_t gen, now = mono_ms();
	int rc = e->x->memory_generation(e->state, &gen);

	if (rc) {
		if (!*unknown_since)
			*unknown_since = now ? now : 1;
		if (now - *unknown_since >= e->wargs.grace_ms && atomic_load(&e->gen_known)) {
			log_warnx("region extension %s: memory generation unknown for %u ms: "
				  "opens and writes refused until it answers", e->name,
				  e->wargs.grace_ms);
			atomic_store(&e->gen_known, 0);
			e->wargs.unknown(e->wargs.arg);
		}
		return 0;
	}
	if (!atomic_load(&e->gen_known)) {
		log_warnx("region extension %s: memory generation back after an unknown "
			  "period: treating the pool as reset", e->name);
		return 1;
	}
	*unknown_since = 0;
	if (gen != e->memgen) {
		log_warnx("region extension %s: memory generation %llx -> %llx: the memory "
			  "lost its contents, treating the pool as reset", e->name,
			  (unsigned long long)e->memgen, (unsigned long long)gen);
		return 1;
	}
	return 0;
}

static void *watch_main(void *arg)
{
	struct ext *e = arg;
	uint64_t unknown_since = 0;

	while (!watch_sleep(e, e->wargs.poll_ms)) {
		ext_remap(e);
		if (!e->x->memory_generation || !watch_once(e, &unknown_since))
			continue;
		atomic_fetch_add(&e->st.resets, 1);
		e->wargs.reset(e->wargs.arg);
		break;
	}
	return NULL;
}

int ext_watch_start(struct ext *e, unsigned int poll_ms, unsigned int grace_ms,
		    void (*reset)(void *arg), void (*unknown)(void *arg), void *arg)
{
	pthread_condattr_t ca;
	int rc;

	e->wargs = (struct ext_watch_args){ poll_ms ? poll_ms : 100, grace_ms, reset, unknown, arg };
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&e->wlock, NULL);
	pthread_cond_init(&e->wcond, &ca);
	pthread_condattr_destroy(&ca);
	rc = -pthread_create(&e->watch, NULL, watch_main, e);
	if (rc) {
		pthread_cond_destroy(&e->wcond);
		pthread_mutex_destroy(&e->wlock);
		return rc;
	}
	e->watching = 1;
	return 0;
}

void ext_watch_stop(struct ext *e)
{
	if (!e || !e->watching)
		return;
	pthread_mutex_lock(&e->wlock);
	e->stop = 1;
	pthread_cond_broadcast(&e->wcond);
	pthread_mutex_unlock(&e->wlock);
	if (!pthread_equal(pthread_self(), e->watch))
		pthread_join(e->watch, NULL);
	else
		pthread_detach(e->watch);
	e->watching = 0;
	pthread_cond_destroy(&e->wcond);
	pthread_mutex_destroy(&e->wlock);
}
