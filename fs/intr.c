/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/intr.c: FUSE INTERRUPT. Each thread that serves requests has a seat:
 * a libmaru cancel token bound to the thread (maru_cancel_bind) and the
 * request it serves. The interrupt callback libfuse runs, on the thread
 * that read the INTERRUPT, fires the token when the request is still the
 * seat's: once the request has run INTR_GRACE_MS, the libmaru call ends
 * with EINTR, the handler replies with it and the caller (or the task
 * being killed) goes on. libfuse may
 * run a callback late, after its request was answered; the seat then
 * serves another request, or none, and the callback does nothing. Seats
 * are never freed: a thread that ends leaves its seat for the next, so a
 * late callback never touches freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "clock.h"
#include "intr.h"
#include "log.h"

struct seat {
	pthread_mutex_t lock;
	fuse_req_t req;			/* the request served; NULL: none */
	uint64_t start_ms;
	struct maru_cancel *tok;
	struct seat *next_free;
};

static pthread_mutex_t seats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct seat *seats_free;
static pthread_key_t seat_key;
static pthread_once_t seat_once = PTHREAD_ONCE_INIT;
static __thread struct seat *mine;

/* The thread ends: its seat waits for the next thread. */
static void seat_leave(void *arg)
{
	struct seat *s = arg;

	pthread_mutex_lock(&s->lock);
	s->req = NULL;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&seats_lock);
	s->next_free = seats_free;
	seats_free = s;
	pthread_mutex_unlock(&seats_lock);
}

static void seat_key_make(void)
{
	if (pthread_key_create(&seat_key, seat_leave))
		log_warnx("FUSE interrupts will not end calls: no thread key");
}

static struct seat *seat_take(void)
{
	struct seat *s;

	pthread_once(&seat_once, seat_key_make);
	pthread_mutex_lock(&seats_lock);
	s = seats_free;
	if (s)
		seats_free = s->next_free;
	pthread_mutex_unlock(&seats_lock);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		if (maru_cancel_new(&s->tok)) {
			free(s);
			return NULL;
		}
		pthread_mutex_init(&s->lock, NULL);
	}
	maru_cancel_bind(s->tok);
	pthread_setspecific(seat_key, s);
	return s;
}

static void intr_fire(fuse_req_t req, void *data)
{
	struct seat *s = data;
	uint64_t ran;

	pthread_mutex_lock(&s->lock);
	if (s->req == req) {
		ran = mono_ms() - s->start_ms;
		if (ran < INTR_GRACE_MS)
			maru_cancel_fire_after(s->tok, (unsigned int)(INTR_GRACE_MS - ran));
		else
			maru_cancel_fire(s->tok);
	}
	pthread_mutex_unlock(&s->lock);
}

void intr_begin(fuse_req_t req, int op)
{
	int quiet = op == OP_FORGET || op == OP_RELEASE || op == OP_RELEASEDIR;

	if (!mine && !(mine = seat_take()))
		return;
	pthread_mutex_lock(&mine->lock);
	mine->req = quiet ? NULL : req;
	mine->start_ms = mono_ms();
	maru_cancel_reset(mine->tok);
	pthread_mutex_unlock(&mine->lock);
	if (!quiet)
		fuse_req_interrupt_func(req, intr_fire, mine);
}
