// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/hintrec.c: the maru_hint recorder of hintrec.h. The hint
 * queue's sender thread calls it; the test reads under the same lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <maru/libmaru.h>

#include "hintrec.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct hintrec recs[HINTREC_MAX];
static size_t nrecs;
static int answer;

void hintrec_reset(int rc)
{
	pthread_mutex_lock(&lock);
	nrecs = 0;
	answer = rc;
	pthread_mutex_unlock(&lock);
}

size_t hintrec_get(struct hintrec *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&lock);
	n = nrecs < max ? nrecs : max;
	memcpy(out, recs, n * sizeof(*out));
	pthread_mutex_unlock(&lock);
	return n;
}

int __wrap_maru_hint(struct maru_client *c, int action, const char *request,
		     const struct maru_hint_range *r, size_t n);
int __wrap_maru_hint(struct maru_client *c, int action, const char *request,
		     const struct maru_hint_range *r, size_t n)
{
	struct hintrec *h;
	size_t i;
	int rc;

	pthread_mutex_lock(&lock);
	rc = answer;
	if (nrecs < HINTREC_MAX) {
		h = &recs[nrecs++];
		memset(h, 0, sizeof(*h));
		h->action = action;
		snprintf(h->req, sizeof(h->req), "%s", request ? request : "");
		h->n = n;
		for (i = 0; r && i < n && i < HINTREC_INOS; i++)
			h->ino[i] = r[i].ino;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}
